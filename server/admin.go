package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/consensus"
)

// The AdminServer answers GET <admin.commandURL>/<name> with the command's
// fields as a JSON object plus "command" (the primary name) and "error"
// (null, or why the command failed), shaped as ZooKeeper 3.8's AdminServer;
// GET <admin.commandURL> lists the commands as links. A name may be a
// command's primary name or one of its aliases (the four-letter word). The
// four-letter-word whitelist does not apply here, as in ZooKeeper.

// jsonObject is a JSON object that keeps its fields in order.
type jsonObject []jsonField

// jsonField is one field: kv's name and value.
type jsonField = kv

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.k)
		if err != nil {
			return nil, err
		}
		v, err := jsonValue(f.v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonValue marshals v; floats keep a fraction ("0.0"), as Jackson writes
// Java doubles, so clients that tell integers from doubles see the same type.
func jsonValue(v any) ([]byte, error) {
	if f, ok := v.(float64); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return []byte("null"), nil
		}
		return []byte(javaDouble(f)), nil
	}
	return json.Marshal(v)
}

// adminCommand is one AdminServer command. run returns the command's fields,
// or an error that becomes the "error" field.
type adminCommand struct {
	names        []string // primary name first
	needsServing bool     // refused while the server is not serving, as ZooKeeper does
	run          func(s *Server, r *http.Request) (jsonObject, error)
}

var adminCommands = []adminCommand{
	{names: []string{"configuration", "conf", "config"}, needsServing: true, run: (*Server).adminConf},
	{names: []string{"connection_stat_reset", "crst"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		s.resetConnectionStats()
		return nil, nil
	}},
	{names: []string{"connections", "cons"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return jsonObject{{"connections", s.adminConnections(false)}, {"secure_connections", []any{}}}, nil
	}},
	{names: []string{"dirs"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		data, logs := s.dirSizes()
		return jsonObject{{"datadir_size", data}, {"logdir_size", logs}}, nil
	}},
	{names: []string{"dump"}, needsServing: true, run: (*Server).adminDump},
	{names: []string{"environment", "envi", "env"}, run: func(*Server, *http.Request) (jsonObject, error) {
		return kvObject(environment()), nil
	}},
	{names: []string{"get_trace_mask", "gtmk"}, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return jsonObject{{"tracemask", s.ops.traceMask.Load()}}, nil
	}},
	{names: []string{"hash"}, needsServing: true, run: func(*Server, *http.Request) (jsonObject, error) {
		// ZooKeeper's digest history; zkraft replicas agree by raft instead.
		return jsonObject{{"digests", []any{}}}, nil
	}},
	{names: []string{"initial_configuration", "icfg"}, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return jsonObject{{"initial_configuration", s.cfg.InitialConfig}}, nil
	}},
	{names: []string{"is_read_only", "isro"}, needsServing: true, run: func(*Server, *http.Request) (jsonObject, error) {
		return jsonObject{{"read_only", false}}, nil
	}},
	{names: []string{"last_snapshot", "lsnp"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		r := s.raftView()
		at := r.snapshotTime
		if at.IsZero() {
			at = s.start
		}
		return jsonObject{{"zxid", strconv.FormatInt(r.snapshotIndex, 16)}, {"timestamp", at.Unix()}}, nil
	}},
	{names: []string{"leader", "lead"}, run: (*Server).adminLeader},
	{names: []string{"locks"}, needsServing: true, run: (*Server).adminLocks}, // zkraft's, see locks.go
	{names: []string{"monitor", "mntr"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return kvObject(s.monitorMetrics()), nil
	}},
	{names: []string{"observer_connection_stat_reset", "orst"}, run: func(*Server, *http.Request) (jsonObject, error) {
		return nil, nil
	}},
	{names: []string{"observers", "obsr"}, run: (*Server).adminObservers},
	{names: []string{"ruok"}, run: func(*Server, *http.Request) (jsonObject, error) { return nil, nil }},
	{names: []string{"server_stats", "srvr"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return s.adminServerStats(), nil
	}},
	{names: []string{"set_trace_mask", "stmk"}, run: func(s *Server, r *http.Request) (jsonObject, error) {
		mask, err := strconv.ParseInt(r.URL.Query().Get("traceMask"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("setTraceMask requires long traceMask argument")
		}
		s.ops.traceMask.Store(mask)
		return jsonObject{{"tracemask", mask}}, nil
	}},
	// The snapshot command streams a backup; runCommand hands it to
	// snapshotCommand (backup.go) before run could be called.
	{names: []string{"snapshot", "snap"}, needsServing: true, run: func(*Server, *http.Request) (jsonObject, error) {
		return nil, fmt.Errorf("unreachable")
	}},
	{names: []string{"stat_reset", "srst"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		s.resetServerStats()
		return nil, nil
	}},
	{names: []string{"stats", "stat"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		return append(s.adminServerStats(), jsonField{"connections", s.adminConnections(true)}, jsonField{"secure_connections", []any{}}), nil
	}},
	{names: []string{"system_properties", "sysp"}, run: func(*Server, *http.Request) (jsonObject, error) {
		return systemProperties(), nil
	}},
	{names: []string{"voting_view"}, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		view := jsonObject{}
		if !s.cfg.Standalone() {
			for _, m := range sortedMembers(s.members()) {
				if m.Observer() {
					continue // ZooKeeper's voting view lists voting members only
				}
				view = append(view, jsonField{strconv.FormatUint(m.ID, 10), strings.TrimPrefix(m.String(), fmt.Sprintf("server.%d=", m.ID))})
			}
		}
		return jsonObject{{"current_config", view}}, nil
	}},
	{names: []string{"watch_summary", "wchs"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		w := s.dataWatches()
		return jsonObject{{"num_connections", len(w.bySession)}, {"num_paths", len(w.byPath)}, {"num_total_watches", w.total}}, nil
	}},
	{names: []string{"watches", "wchc"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		w := s.dataWatches()
		m := jsonObject{}
		for _, id := range sortedKeys(w.bySession) {
			m = append(m, jsonField{strconv.FormatInt(id, 10), w.bySession[id]})
		}
		return jsonObject{{"session_id_to_watched_paths", m}}, nil
	}},
	{names: []string{"watches_by_path", "wchp"}, needsServing: true, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		w := s.dataWatches()
		m := jsonObject{}
		for _, p := range sortedKeys(w.byPath) {
			m = append(m, jsonField{p, w.byPath[p]})
		}
		return jsonObject{{"path_to_session_ids", m}}, nil
	}},
	{names: []string{"zabstate"}, run: func(s *Server, _ *http.Request) (jsonObject, error) {
		if s.cfg.Standalone() {
			return jsonObject{{"voting", false}, {"zabstate", ""}}, nil
		}
		state := "ELECTION"
		if s.serving.Load() {
			state = "BROADCAST"
		}
		return jsonObject{{"voting", !s.isObserver()}, {"zabstate", state}}, nil
	}},
}

// adminObservers answers the observers command: on the leader, the
// observers (raft learners that stay learners) heard from within an election
// timeout, with ZooKeeper's learner fields zkraft can fill (sid, the peer
// address, messages sent and received); elsewhere none, as on a ZooKeeper
// follower without observer masters.
func (s *Server) adminObservers(*http.Request) (jsonObject, error) {
	observers := []any{}
	if s.lead.isLeader() && !s.cfg.Standalone() {
		members := s.members()
		learners := map[uint64]bool{}
		for _, id := range s.node.Status().Learners {
			learners[id] = true
		}
		timeout := time.Duration(s.cfg.ElectionTickMs*consensus.DefaultElectionTicks) * time.Millisecond
		for _, p := range s.peerStats() {
			if m, ok := members[p.ID]; !ok || !m.Observer() || !learners[p.ID] ||
				p.LastContact.IsZero() || time.Since(p.LastContact) > timeout {
				continue
			}
			observers = append(observers, jsonObject{{"remote_socket_address", p.Addr}, {"sid", p.ID},
				{"packets_received", p.Received}, {"packets_sent", p.Sent}})
		}
	}
	return jsonObject{{"synced_observers", len(observers)}, {"observers", observers}}, nil
}

// adminCommandsByName maps every name and alias to its command.
var adminCommandsByName = func() map[string]*adminCommand {
	m := map[string]*adminCommand{}
	for i := range adminCommands {
		for _, n := range adminCommands[i].names {
			m[n] = &adminCommands[i]
		}
	}
	return m
}()

func (o *operability) adminHandler() http.Handler {
	base := o.s.cfg.AdminCommandURL
	ui := o.uiHandler()
	var profiles http.Handler
	if o.s.cfg.Pprof {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		profiles = mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if profiles != nil && strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			profiles.ServeHTTP(w, r) // zkraft.pprof=true
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch p := r.URL.Path; {
		case p == base || p == base+"/":
			o.writeCommandList(w, base)
		case strings.HasPrefix(p, base+"/"):
			o.runCommand(w, r, strings.TrimPrefix(p, base+"/"))
		case p == uiPrefix || strings.HasPrefix(p, uiPrefix+"/"):
			ui.ServeHTTP(w, r) // the web view, ui.go
		default:
			http.NotFound(w, r)
		}
	})
}

// writeCommandList lists the primary names as links, as ZooKeeper does.
func (o *operability) writeCommandList(w http.ResponseWriter, base string) {
	names := make([]string, 0, len(adminCommands))
	for _, c := range adminCommands {
		names = append(names, c.names[0])
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "<a href=\"%s/%s\">%s</a>\n<br/>\n", html.EscapeString(base), n, n)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func (o *operability) runCommand(w http.ResponseWriter, r *http.Request, name string) {
	cmd := adminCommandsByName[name]
	if cmd != nil && cmd.names[0] == "snapshot" {
		o.snapshotCommand(w, r)
		return
	}
	var body jsonObject
	switch {
	case cmd == nil:
		body = jsonObject{{"command", name}, {"error", "Unknown command: " + name}}
	case cmd.needsServing && !o.s.serving.Load():
		body = jsonObject{{"command", cmd.names[0]}, {"error", notServing}}
	default:
		fields, err := cmd.run(o.s, r)
		var errField any
		if err != nil {
			fields, errField = nil, err.Error()
		}
		body = append(fields, jsonField{"command", cmd.names[0]}, jsonField{"error", errField})
	}
	out, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(out, '\n'))
}

func kvObject(list []kv) jsonObject {
	return jsonObject(list)
}

func (s *Server) adminConf(_ *http.Request) (jsonObject, error) {
	minMs, maxMs := s.cfg.SessionBounds()
	out := jsonObject{
		{"client_port", s.clientPort()},
		{"data_dir", s.cfg.DataDir},
		{"data_log_dir", s.cfg.LogDir()},
		{"tick_time", s.cfg.TickTimeMs},
		{"max_client_cnxns", s.cfg.MaxClientCnxns},
		{"min_session_timeout", minMs},
		{"max_session_timeout", maxMs},
		{"server_id", s.serverID()},
		{"client_port_listen_backlog", -1},
	}
	if !s.cfg.Standalone() {
		self := s.members()[s.cfg.ServerID]
		out = append(out, jsonField{"election_port", self.ElectionPort}, jsonField{"quorum_port", self.PeerPort},
			jsonField{"peer_type", 0}, jsonField{"membership", s.membershipText()})
	}
	return out, nil
}

// adminServerStats is srvr's JSON: ZooKeeper's server_stats fields. Client
// response sizes are not tracked by zkraft and read -1, ZooKeeper's value
// before the first response.
func (s *Server) adminServerStats() jsonObject {
	v := s.statsView()
	dataSize, logSize := s.dirSizes()
	noSizes := jsonObject{{"last_buffer_size", -1}, {"min_buffer_size", -1}, {"max_buffer_size", -1}}
	stats := jsonObject{
		{"packets_sent", v.sent},
		{"packets_received", v.received},
		{"fsync_threshold_exceed_count", 0},
		{"client_response_stats", noSizes},
		{"data_dir_size", dataSize},
		{"log_dir_size", logSize},
		{"provider_null", !s.cfg.MetricsEnabled},
		{"server_state", v.mode},
		{"last_processed_zxid", v.zxid},
		{"outstanding_requests", v.outstanding},
		{"avg_latency", v.avgLatency},
		{"max_latency", v.maxLatency},
		{"min_latency", v.minLatency},
		{"num_alive_client_connections", v.connections},
		{"uptime", time.Since(s.start).Milliseconds()},
		{"auth_failed_count", 0},
		{"non_mtlsremote_conn_count", 0},
		{"non_mtlslocal_conn_count", 0},
	}
	return jsonObject{
		{"version", v.version},
		{"read_only", false},
		{"server_stats", stats},
		{"client_response", noSizes},
		{"node_count", v.nodeCount},
	}
}

// adminConnections lists the connections; brief is stat's short form.
func (s *Server) adminConnections(brief bool) []jsonObject {
	out := []jsonObject{}
	for _, c := range s.connViews() {
		o := jsonObject{
			{"remote_socket_address", c.remote},
			{"interest_ops", c.interestOps},
			{"outstanding_requests", c.queued},
			{"packets_received", c.received},
			{"packets_sent", c.sent},
		}
		if !brief && c.sessionID != 0 {
			o = append(o,
				jsonField{"session_id", c.sessionID},
				jsonField{"last_operation", c.lastOp},
				jsonField{"established", c.established},
				jsonField{"session_timeout", c.timeoutMs},
				jsonField{"last_cxid", c.lastCxid},
				jsonField{"last_zxid", c.lastZxid},
				jsonField{"last_response_time", c.lastResponse},
				jsonField{"last_latency", c.lastLatency},
				jsonField{"min_latency", c.minLatency},
				jsonField{"avg_latency", c.avgLatency},
				jsonField{"max_latency", c.maxLatency},
			)
		}
		out = append(out, o)
	}
	return out
}

func (s *Server) adminDump(_ *http.Request) (jsonObject, error) {
	expiry := jsonObject{}
	for _, b := range s.sessionBuckets() {
		expiry = append(expiry, jsonField{strconv.FormatInt(b.at.UnixMilli(), 10), b.ids})
	}
	eph := s.ephemeralsBySession()
	paths := jsonObject{}
	for _, id := range sortedKeys(eph) {
		paths = append(paths, jsonField{strconv.FormatInt(id, 10), eph[id]})
	}
	return jsonObject{{"expiry_time_to_session_ids", expiry}, {"session_id_to_ephemeral_paths", paths}}, nil
}

func (s *Server) adminLeader(_ *http.Request) (jsonObject, error) {
	if s.cfg.Standalone() {
		// What ZooKeeper answers when it runs standalone.
		return nil, fmt.Errorf("server is not initialized")
	}
	lead := uint64(0)
	if s.node != nil {
		lead = s.node.Status().Lead
	}
	ip := ""
	if m, ok := s.members()[lead]; ok {
		ip = m.Host
	}
	return jsonObject{{"is_leader", s.lead.isLeader()}, {"leader_id", lead}, {"leader_ip", ip}}, nil
}

// systemProperties stands in for the JVM's system properties: the process
// facts a Go server has. Environment variables are not listed (they may
// hold secrets).
func systemProperties() jsonObject {
	out := jsonObject{}
	for _, e := range environment() {
		if e.k != "zookeeper.version" && !strings.HasPrefix(e.k, "os.memory.") {
			out = append(out, e)
		}
	}
	out = append(out,
		jsonField{"file.separator", string(os.PathSeparator)},
		jsonField{"path.separator", string(os.PathListSeparator)},
		jsonField{"line.separator", "\n"},
		jsonField{"go.os", runtime.GOOS},
	)
	sort.Slice(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}
