package server

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is reported by srvr, stat, mntr and envi. The first part must look
// like ZooKeeper's "X.Y.Z-": monitoring tools parse it.
const Version = "3.8.4-zkraft-0.1.0"

// notServing is ZooKeeper's answer to most commands while the server has no
// quorum.
const notServing = "This ZooKeeper instance is not currently serving requests"

// The views below gather what the commands report; fourletter_text.go prints
// them, the AdminServer renders them as JSON and metrics.go exports them.

// kv is one named value of a report, kept in ZooKeeper's order. v is an
// int64, a float64 or a string.
type kv struct {
	k string
	v any
}

var buildDate = time.Now().UTC().Format("2006-01-02 15:04 MST")

func versionString() string { return Version + ", built on " + buildDate }

// statsView is what srvr reports.
type statsView struct {
	version                string
	minLatency, maxLatency int64
	avgLatency             float64
	received, sent         int64
	connections            int
	outstanding            int64
	zxid                   int64
	mode                   string
	nodeCount              int
}

func (s *Server) statsView() statsView {
	min, avg, max := s.stats.latency()
	s.connMu.Lock()
	nconns := len(s.conns)
	s.connMu.Unlock()
	return statsView{
		version: versionString(), minLatency: min, avgLatency: roundAvg(avg), maxLatency: max,
		received: s.stats.received.Load(), sent: s.stats.sent.Load(), connections: nconns,
		outstanding: s.stats.outstanding.Load(), zxid: s.sm.lastZxid.Load(), mode: s.mode(), nodeCount: s.nodeCount(),
	}
}

func (s *Server) mode() string {
	switch {
	case s.cfg.Standalone():
		return "standalone"
	case s.lead.isLeader():
		return "leader"
	case s.isObserver():
		return "observer"
	default:
		return "follower"
	}
}

func (s *Server) nodeCount() int {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	return s.sm.tree.NodeCount() + 1 // ZooKeeper's map holds the root twice
}

// connView is one client connection as stat, cons and the AdminServer show it.
type connView struct {
	id                                 uint64
	remote                             string // ip:port, unbracketed as Java prints it
	interestOps                        int    // 1 once a session is attached, as a reading NIO connection
	queued, received, sent             int64
	sessionID                          int64 // 0 before the handshake
	lastOp                             string
	established                        int64 // ms since the epoch
	timeoutMs                          int32
	lastCxid, lastZxid                 int64
	lastResponse, lastLatency          int64 // not tracked by zkraft: 0
	minLatency, avgLatency, maxLatency int64
	expiry                             time.Time // when the connection expires if idle (dump)
}

// sessionlessTimeout is how long a connection may stay without a session
// (conn.serve's first read deadline).
const sessionlessTimeout = 10 * time.Second

func (s *Server) connViews() []connView {
	s.connMu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	// A connection's session fields are read only once it is attached:
	// attachSession publishes them under connMu.
	type sess struct {
		id      int64
		timeout int32
	}
	attached := make(map[*conn]sess, len(s.bySess))
	for _, c := range s.bySess {
		attached[c] = sess{c.sessionID, c.timeoutMs}
	}
	s.connMu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	out := make([]connView, 0, len(conns))
	for _, c := range conns {
		min, avg, max := c.stats.latency()
		v := connView{
			id: c.id, remote: javaAddr(c.remote), queued: int64(c.replies.pending()),
			received: c.stats.received.Load(), sent: c.stats.sent.Load(),
			lastOp: opName(c.stats.lastOp.Load()), established: c.established.UnixMilli(),
			lastCxid: int64(c.stats.lastCxid.Load()), lastZxid: c.stats.lastZxid.Load(),
			minLatency: min, avgLatency: int64(avg), maxLatency: max,
			expiry: c.established.Add(sessionlessTimeout),
		}
		if a, ok := attached[c]; ok {
			v.interestOps, v.sessionID, v.timeoutMs = 1, a.id, a.timeout
			if d, ok := s.tracker.Deadline(a.id); ok {
				v.expiry = d
			}
		}
		out = append(out, v)
	}
	return out
}

// javaAddr prints host:port without IPv6 brackets, as Java's
// InetSocketAddress does (zktop's parser expects it).
func javaAddr(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return host + ":" + port
}

func (s *Server) resetServerStats() {
	s.stats.reset()
	s.ops.resetLatency()
}

func (s *Server) resetConnectionStats() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.conns {
		c.stats.resetLatency()
		c.stats.received.Store(0)
		c.stats.sent.Store(0)
		c.stats.lastOp.Store(0)
		c.stats.lastCxid.Store(-1)
		c.stats.lastZxid.Store(-1)
	}
}

// watchView lists the data watches (getData, exists and persistent ones) by
// session and by path. Like ZooKeeper's wchs, wchc and wchp it leaves child
// watches out; mntr's watch_count counts both kinds.
type watchView struct {
	bySession map[int64][]string // sorted paths
	byPath    map[string][]int64 // sorted session ids
	total     int
}

func (s *Server) dataWatches() watchView {
	v := watchView{bySession: map[int64][]string{}, byPath: map[string][]int64{}}
	s.watches.mu.Lock()
	for p, ws := range s.watches.data.byPath {
		for w := range ws {
			c, ok := w.(*conn)
			if !ok {
				continue
			}
			v.bySession[c.sessionID] = append(v.bySession[c.sessionID], p)
			v.byPath[p] = append(v.byPath[p], c.sessionID)
			v.total++
		}
	}
	s.watches.mu.Unlock()
	for _, ps := range v.bySession {
		sort.Strings(ps)
	}
	for _, ids := range v.byPath {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return v
}

// watchCount counts every watch, data and child, as mntr's watch_count.
func (s *Server) watchCount() int {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	n := 0
	for _, t := range []*watchTable{&s.watches.data, &s.watches.child} {
		for _, ws := range t.byPath {
			n += len(ws)
		}
	}
	return n
}

// expiryBucket groups sessions (or connections) that expire at one time.
type expiryBucket struct {
	at  time.Time
	ids []int64
}

func (s *Server) sessionBuckets() []expiryBucket {
	s.sm.mu.RLock()
	sessions := s.sm.sessions.All()
	s.sm.mu.RUnlock()
	idx := map[int64]int{}
	var out []expiryBucket
	for _, sess := range sessions {
		d, ok := s.tracker.Deadline(sess.ID)
		if !ok {
			continue
		}
		k := d.UnixMilli()
		j, seen := idx[k]
		if !seen {
			j = len(out)
			idx[k] = j
			out = append(out, expiryBucket{at: d})
		}
		out[j].ids = append(out[j].ids, sess.ID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	for _, b := range out {
		sort.Slice(b.ids, func(i, j int) bool { return b.ids[i] < b.ids[j] })
	}
	return out
}

func (s *Server) ephemeralsBySession() map[int64][]string {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	out := map[int64][]string{}
	for _, id := range s.sm.tree.EphemeralOwners() {
		paths := s.sm.tree.Ephemerals(id, "/")
		sort.Strings(paths)
		out[id] = paths
	}
	return out
}

// configuration is conf's key=value list.
func (s *Server) configuration() []kv {
	minMs, maxMs := s.cfg.SessionBounds()
	dataSize, logSize := s.dirSizes()
	out := []kv{
		{"clientPort", int64(s.clientPort())}, {"secureClientPort", int64(s.secureClientPort())},
		{"dataDir", s.cfg.DataDir}, {"dataDirSize", dataSize},
		{"dataLogDir", s.cfg.LogDir()}, {"dataLogSize", logSize},
		{"tickTime", int64(s.cfg.TickTimeMs)}, {"maxClientCnxns", int64(s.cfg.MaxClientCnxns)},
		{"minSessionTimeout", int64(minMs)}, {"maxSessionTimeout", int64(maxMs)},
		{"clientPortListenBacklog", int64(-1)}, {"serverId", s.serverID()},
	}
	if !s.cfg.Standalone() {
		self := s.members()[s.cfg.ServerID]
		out = append(out, kv{"electionPort", int64(self.ElectionPort)}, kv{"quorumPort", int64(self.PeerPort)}, kv{"peerType", peerType(self)})
	}
	return out
}

// peerType is m's role as ZooKeeper's conf command shows it (LearnerType's
// ordinal): 0 participant, 1 observer.
func peerType(m Member) int64 {
	if m.Observer() {
		return 1
	}
	return 0
}

// serverID is myid, or 0 when standalone as ZooKeeper reports it.
func (s *Server) serverID() int64 {
	if s.cfg.Standalone() {
		return 0
	}
	return int64(s.cfg.ServerID)
}

func (s *Server) clientPort() int {
	if s.listener != nil {
		if port, ok := listenPort(s.listener.Addr()); ok {
			return port
		}
	}
	return s.cfg.ClientPort
}

// membershipText is the ensemble's dynamic configuration (the data of
// /zookeeper/config), or "" when standalone.
func (s *Server) membershipText() string {
	if s.cfg.Standalone() {
		return ""
	}
	s.sm.mu.RLock()
	data, _, _ := s.sm.tree.GetData("/zookeeper/config")
	s.sm.mu.RUnlock()
	if len(data) > 0 {
		return strings.TrimSuffix(string(data), "\n") + "\n"
	}
	return formatMembers(s.members())
}

func (s *Server) dirSizes() (dataDir, logDir int64) {
	dataDir = treeSize(s.cfg.DataDir)
	if s.cfg.LogDir() == s.cfg.DataDir {
		return dataDir, dataDir
	}
	return dataDir, treeSize(s.cfg.LogDir())
}

// monitorMetrics is mntr's list: zk_version and zk_server_state first, then
// the metrics monitoring tools read (ZooKeeper's names), then the request
// latency summaries, then zkraft's raft figures.
func (s *Server) monitorMetrics() []kv {
	v := s.statsView()
	s.sm.mu.RLock()
	ephemerals := 0
	for _, id := range s.sm.tree.EphemeralOwners() {
		ephemerals += len(s.sm.tree.Ephemerals(id, "/"))
	}
	dataSize := s.sm.tree.ApproximateDataSize()
	sessions := s.sm.sessions.Len()
	s.sm.mu.RUnlock()
	out := []kv{
		{"version", v.version},
		{"server_state", v.mode},
		{"ephemerals_count", int64(ephemerals)},
		{"num_alive_connections", int64(v.connections)},
		{"avg_latency", v.avgLatency},
		{"outstanding_requests", v.outstanding},
		{"znode_count", int64(v.nodeCount)},
		{"global_sessions", int64(sessions)},
		{"non_mtls_remote_conn_count", int64(0)},
		{"packets_sent", v.sent},
		{"packets_received", v.received},
		{"connection_drop_probability", 0.0},
		{"watch_count", int64(s.watchCount())},
		{"min_latency", v.minLatency},
	}
	open, max, fdOK := fileDescriptors()
	if fdOK {
		out = append(out, kv{"max_file_descriptor_count", max})
	}
	out = append(out, kv{"approximate_data_size", dataSize})
	if fdOK {
		out = append(out, kv{"open_file_descriptor_count", open})
	}
	out = append(out,
		kv{"local_sessions", int64(0)},
		kv{"uptime", time.Since(s.start).Milliseconds()},
		kv{"max_latency", v.maxLatency},
		kv{"outstanding_tls_handshake", int64(0)},
		kv{"non_mtls_local_conn_count", int64(0)},
	)
	if !s.cfg.Standalone() {
		state := "following - broadcast"
		switch v.mode {
		case "leader":
			state = "leading - broadcast"
		case "observer":
			state = "observing - broadcast"
		}
		out = append(out, kv{"peer_state", state})
	}
	for _, l := range []struct {
		name string
		read bool
	}{{"readlatency", true}, {"updatelatency", false}} {
		sum := s.ops.latencySummary(l.read)
		out = append(out,
			kv{"avg_" + l.name, sum.avg}, kv{"min_" + l.name, sum.min}, kv{"max_" + l.name, sum.max},
			kv{"cnt_" + l.name, sum.count}, kv{"sum_" + l.name, sum.sum},
			kv{"p50_" + l.name, sum.p50}, kv{"p95_" + l.name, sum.p95},
			kv{"p99_" + l.name, sum.p99}, kv{"p999_" + l.name, sum.p999})
	}
	r := s.raftView()
	out = append(out,
		kv{"raft_term", r.term},
		kv{"raft_commit_index", r.commit},
		kv{"raft_applied_index", r.applied},
		kv{"raft_last_snapshot_index", r.snapshotIndex},
		kv{"raft_log_entries", r.logEntries},
		kv{"raft_first_index", r.firstIndex},
		kv{"raft_last_index", r.lastIndex},
		kv{"raft_leader_id", r.leaderID},
		kv{"raft_is_leader", r.isLeader},
		kv{"raft_voters", r.voters},
		kv{"raft_learners", r.learners},
		kv{"raft_persist_batches", r.persistBatches},
		kv{"raft_persisted_entries", r.persistedEntries},
		kv{"raft_snapshots_taken", r.snapshotsTaken},
		kv{"raft_snapshot_size", r.snapshotSize},
		kv{"raft_log_db_size", r.logDBSize},
	)
	out = append(out, s.peerMetrics()...) // peerstats.go
	return out
}

// raftView is the consensus node's state as mntr and the metrics endpoint
// report it. Values are int64 so they render like ZooKeeper's gauges.
type raftView struct {
	term, commit, applied, snapshotIndex int64
	logEntries, firstIndex, lastIndex    int64
	leaderID, isLeader, voters, learners int64
	persistBatches, persistedEntries     int64
	snapshotsTaken                       int64
	snapshotSize, logDBSize              int64
	snapshotTime                         time.Time // zero when there is no snapshot file
}

func (s *Server) raftView() raftView {
	var r raftView
	if s.node != nil {
		st := s.node.Status()
		r = raftView{
			term: int64(st.Term), commit: int64(st.Commit), applied: int64(st.Applied),
			snapshotIndex: int64(st.LastSnapshotIndex), logEntries: int64(st.LogEntries),
			firstIndex: int64(st.FirstIndex), lastIndex: int64(st.LastIndex), leaderID: int64(st.Lead),
			voters: int64(len(st.Voters)), learners: int64(len(st.Learners)),
			persistBatches: int64(st.PersistBatches), persistedEntries: int64(st.PersistedEntries),
			snapshotsTaken: int64(st.SnapshotsTaken),
		}
		if st.IsLeader {
			r.isLeader = 1
		}
	}
	// The raft log on disk: the WAL's segments and raft.db (snapshot
	// metadata; the whole log before the WAL).
	if info, err := os.Stat(filepath.Join(s.cfg.LogDir(), "raft.db")); err == nil {
		r.logDBSize = info.Size()
	}
	if entries, err := os.ReadDir(filepath.Join(s.cfg.LogDir(), "wal")); err == nil {
		for _, e := range entries {
			if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".wal") && info.Mode().IsRegular() {
				r.logDBSize += info.Size()
			}
		}
	}
	// The newest snapshot file (consensus keeps <term>-<index>.snap files).
	if entries, err := os.ReadDir(filepath.Join(s.cfg.LogDir(), "snap")); err == nil {
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !strings.HasSuffix(e.Name(), ".snap") || !info.Mode().IsRegular() {
				continue
			}
			if info.ModTime().After(r.snapshotTime) {
				r.snapshotTime, r.snapshotSize = info.ModTime(), info.Size()
			}
		}
	}
	return r
}

// roundAvg rounds an average to 4 decimals, half up, as ZooKeeper's
// AvgMinMaxCounter does.
func roundAvg(f float64) float64 { return math.Floor(f*1e4+0.5) / 1e4 }

// javaDouble prints a float as Java's Double.toString does for the values
// reported here: always with a fraction ("0.0", "4.5").
func javaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

var opNames = map[int32]string{
	0: "NA", 1: "CREA", 2: "DELE", 3: "EXIS", 4: "GETD", 5: "SETD", 6: "GETA", 7: "SETA", 8: "GETC",
	9: "SYNC", 11: "PING", 12: "GET2", 13: "CKVR", 14: "MULT", 15: "CRE2", 16: "RECO", 17: "CHKW",
	18: "REMW", 19: "CCON", 21: "CTTL", 22: "MLTR", 100: "AUTH", 101: "SETW", 103: "GETE",
	104: "GACN", 105: "STW2", 106: "ADDW", 107: "WHOM", -11: "CLOS",
}

func opName(op int32) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return "UNKN"
}
