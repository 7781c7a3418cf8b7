package server

import (
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// The web view (issue 12) at /ui on the AdminServer's port: plain HTML, CSS
// and JavaScript embedded in the binary (server/ui), no build step. The page
// polls two JSON endpoints once a second:
//
//	GET /ui/api/state            locks (as the locks command), sessions,
//	                             members with raft state, this member
//	GET /ui/api/znode?path=/x    one znode: Stat, children, data
//
// Like the AdminServer it has no authentication: bind admin.serverAddress
// to a trusted interface. The znode browser shows a node's data only when
// its ACL lets world:anyone read it (otherwise "data_hidden"), so the page
// reveals no data a client without credentials could not read; names,
// Stats and ACL-protected nodes' existence are shown, as ZooKeeper's dump
// and wchp show paths. Each poll costs one lock scan (see locks.go) and a
// pass over the session table under the state machine's read lock.

//go:embed ui
var uiFiles embed.FS

// uiPrefix is where the web view is served.
const uiPrefix = "/ui"

// maxUIChildren and maxUIData bound one znode answer.
const (
	maxUIChildren = 1000
	maxUIData     = 4096
)

// uiHandler serves the page and its API; it answers only under uiPrefix.
func (o *operability) uiHandler() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.StripPrefix(uiPrefix+"/", http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == uiPrefix:
			http.Redirect(w, r, uiPrefix+"/", http.StatusFound)
		case p == uiPrefix+"/api/state":
			writeUIJSON(w, o.s.uiState())
		case p == uiPrefix+"/api/znode":
			writeUIJSON(w, o.s.uiZnode(r.URL.Query().Get("path")))
		default:
			w.Header().Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
		}
	})
}

func writeUIJSON(w http.ResponseWriter, body jsonObject) {
	out, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(out, '\n'))
}

// uiState is /ui/api/state.
func (s *Server) uiState() jsonObject {
	now := time.Now()
	r := s.raftView()
	raftState := "standalone"
	if s.node != nil && !s.cfg.Standalone() {
		raftState = s.node.Status().RaftState
	}
	self := jsonObject{
		{"server_id", s.serverID()}, {"mode", s.mode()}, {"serving", s.serving.Load()},
		{"raft_state", raftState}, {"leader_id", r.leaderID}, {"term", r.term},
		{"commit", r.commit}, {"applied", r.applied}, {"last_zxid", "0x" + strconv.FormatInt(s.sm.lastZxid.Load(), 16)},
		{"version", Version}, {"time_ms", now.UnixMilli()},
	}
	locks := lockView{}.json()
	sessions := []jsonObject{}
	if s.serving.Load() {
		locks = s.lockScan().json()
		sessions = s.uiSessions(now)
	}
	return jsonObject{{"self", self}, {"members", s.uiMembers(r)}, {"sessions", sessions}, {"locks", locks}}
}

// uiMembers lists the members with their role as this member's raft sees
// it: the leader, voters (followers), learners.
func (s *Server) uiMembers(r raftView) []jsonObject {
	out := []jsonObject{}
	if s.cfg.Standalone() {
		return append(out, jsonObject{{"id", 0}, {"address", s.cfg.ClientPortAddress}, {"client_port", s.clientPort()},
			{"role", "standalone"}, {"self", true}, {"last_contact_ms_ago", -1}, {"unreachable", false}})
	}
	learners := map[uint64]bool{}
	if s.node != nil {
		for _, id := range s.node.Status().Learners {
			learners[id] = true
		}
	}
	contact := map[uint64]jsonObject{}
	now := time.Now()
	for _, p := range s.peerStats() {
		ago := int64(-1)
		if !p.LastContact.IsZero() {
			ago = now.Sub(p.LastContact).Milliseconds()
		}
		contact[p.ID] = jsonObject{{"last_contact_ms_ago", ago}, {"unreachable", p.Unreachable}}
	}
	for _, m := range sortedMembers(s.members()) {
		role := "follower"
		switch {
		case int64(m.ID) == r.leaderID:
			role = "leader"
		case learners[m.ID] && m.Observer():
			role = "observer"
		case learners[m.ID]:
			role = "learner"
		case r.leaderID == 0:
			role = "no leader"
		}
		o := jsonObject{{"id", m.ID}, {"address", m.Host}, {"client_address", m.ClientAddr},
			{"peer_port", m.PeerPort}, {"election_port", m.ElectionPort}, {"role", role}, {"self", m.ID == s.cfg.ServerID}}
		if c, ok := contact[m.ID]; ok {
			o = append(o, c...)
		} else {
			o = append(o, jsonField{"last_contact_ms_ago", -1}, jsonField{"unreachable", false})
		}
		out = append(out, o)
	}
	return out
}

// uiSessions lists the live sessions: timeout, ephemerals, and, for those
// attached to this member, the client's address and when it expires.
func (s *Server) uiSessions(now time.Time) []jsonObject {
	type sess struct {
		id         int64
		timeoutMs  int32
		ephemerals int
	}
	s.sm.mu.RLock()
	all := s.sm.sessions.All()
	list := make([]sess, 0, len(all))
	for _, x := range all {
		list = append(list, sess{x.ID, x.TimeoutMs, len(s.sm.tree.Ephemerals(x.ID, ""))})
	}
	s.sm.mu.RUnlock()
	clients := s.sessionClients()
	out := make([]jsonObject, 0, len(list))
	for _, x := range list {
		expires := int64(-1)
		if d, ok := s.tracker.Deadline(x.id); ok {
			expires = max(d.Sub(now).Milliseconds(), 0)
		}
		out = append(out, jsonObject{{"session_id", sessionHex(x.id)}, {"timeout_ms", x.timeoutMs},
			{"client_address", clients[x.id]}, {"ephemerals", x.ephemerals}, {"expires_in_ms", expires}})
	}
	return out
}

// worldReadable reports whether a client without credentials may read a
// node with this ACL.
func worldReadable(acl []jute.ACL) bool { return znode.CheckACL(acl, jute.PermRead, nil) }

// uiZnode is /ui/api/znode: the node's Stat, its first maxUIChildren
// children, and its data (up to maxUIData bytes, text if UTF-8, else hex)
// if world-readable.
func (s *Server) uiZnode(path string) jsonObject {
	if path == "" {
		path = "/"
	}
	if !s.serving.Load() {
		return jsonObject{{"path", path}, {"error", notServing}}
	}
	s.sm.mu.RLock()
	data, st, ok := s.sm.tree.GetData(path)
	var children []string
	var acl []jute.ACL
	if ok {
		children, _, _ = s.sm.tree.GetChildren(path)
		acl, _, _ = s.sm.tree.GetACL(path)
	}
	s.sm.mu.RUnlock()
	if !ok {
		return jsonObject{{"path", path}, {"error", "no node"}}
	}
	truncated := len(children) > maxUIChildren
	if truncated {
		children = children[:maxUIChildren]
	}
	out := jsonObject{
		{"path", path},
		{"stat", jsonObject{
			{"czxid", "0x" + strconv.FormatInt(st.Czxid, 16)}, {"mzxid", "0x" + strconv.FormatInt(st.Mzxid, 16)},
			{"pzxid", "0x" + strconv.FormatInt(st.Pzxid, 16)}, {"ctime", st.Ctime}, {"mtime", st.Mtime},
			{"version", st.Version}, {"cversion", st.Cversion}, {"aversion", st.Aversion},
			{"ephemeral_owner", sessionHex(st.EphemeralOwner)}, {"data_length", st.DataLength}, {"num_children", st.NumChildren},
		}},
		{"children", append([]string{}, children...)},
		{"children_truncated", truncated},
	}
	if !worldReadable(acl) {
		return append(out, jsonField{"data", nil}, jsonField{"data_encoding", ""}, jsonField{"data_hidden", true})
	}
	shown := data
	if len(shown) > maxUIData {
		shown = shown[:maxUIData]
	}
	enc, text := "utf-8", string(shown)
	if !utf8.Valid(shown) || strings.ContainsRune(text, 0) {
		enc, text = "hex", hex.EncodeToString(shown)
	}
	if data == nil {
		return append(out, jsonField{"data", nil}, jsonField{"data_encoding", ""}, jsonField{"data_hidden", false})
	}
	return append(out, jsonField{"data", text}, jsonField{"data_encoding", enc}, jsonField{"data_hidden", false})
}
