package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Version is reported by srvr, stat, mntr and envi. The first part must look
// like ZooKeeper's "X.Y.Z-": monitoring tools parse it.
const Version = "3.8.4-zkraft-0.1.0"

var allFourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "conf": true, "cons": true, "crst": true, "dump": true,
	"envi": true, "mntr": true, "wchs": true, "wchc": true, "wchp": true, "dirs": true, "isro": true,
	"srst": true, "gtmk": true, "stmk": true, "hash": true,
}

func isFourLetterWord(s string) bool { return allFourLetterWords[s] }

// fourLetterWord answers one command on a connection that sent no
// ConnectRequest, then the caller closes it.
func (s *Server) fourLetterWord(nc net.Conn, cmd string) {
	_ = nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if !s.cfg.FourLetterWords[cmd] {
		_, _ = io.WriteString(nc, cmd+" is not executed because it is not in the whitelist.\n")
		return
	}
	_, _ = io.WriteString(nc, s.fourLetterOutput(cmd))
}

func (s *Server) mode() string {
	switch {
	case s.cfg.Standalone():
		return "standalone"
	case s.leader.Load():
		return "leader"
	default:
		return "follower"
	}
}

func (s *Server) fourLetterOutput(cmd string) string {
	var b strings.Builder
	switch cmd {
	case "ruok":
		return "imok"
	case "isro":
		return "rw"
	case "srvr", "stat":
		if !s.serving.Load() {
			return "This ZooKeeper instance is not currently serving requests\n"
		}
		s.writeServerStats(&b, cmd == "stat")
	case "srst":
		s.stats.reset()
		return "Server stats reset.\n"
	case "crst":
		s.connMu.Lock()
		for c := range s.conns {
			c.stats.resetLatency()
			c.stats.received.Store(0)
			c.stats.sent.Store(0)
		}
		s.connMu.Unlock()
		return "Connection stats reset.\n"
	case "conf":
		minMs, maxMs := s.cfg.SessionBounds()
		fmt.Fprintf(&b, "clientPort=%d\nsecureClientPort=-1\ndataDir=%s\ndataDirSize=%d\ndataLogDir=%s\ndataLogSize=%d\n",
			s.cfg.ClientPort, s.cfg.DataDir, dirSize(s.cfg.DataDir), s.cfg.LogDir(), dirSize(s.cfg.LogDir()))
		fmt.Fprintf(&b, "tickTime=%d\nmaxClientCnxns=%d\nminSessionTimeout=%d\nmaxSessionTimeout=%d\nclientPortListenBacklog=-1\nserverId=%d\n",
			s.cfg.TickTimeMs, s.cfg.MaxClientCnxns, minMs, maxMs, s.cfg.ServerID)
	case "cons":
		s.writeConnections(&b)
		b.WriteString("\n")
	case "envi":
		host, _ := os.Hostname()
		wd, _ := os.Getwd()
		fmt.Fprintf(&b, "Environment:\nzookeeper.version=%s, built on %s\nhost.name=%s\ngo.version=%s\nos.name=%s\nos.arch=%s\nuser.dir=%s\n",
			Version, buildDate, host, runtime.Version(), runtime.GOOS, runtime.GOARCH, wd)
	case "dirs":
		fmt.Fprintf(&b, "datadir_size: %d\nlogdir_size: %d\n", dirSize(s.cfg.DataDir), dirSize(s.cfg.LogDir()))
	case "wchs":
		sum := s.watches.summary()
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", sum.Connections, sum.Paths, sum.Total)
	case "wchc":
		sum := s.watches.summary()
		keys := make([]string, 0, len(sum.ByWatcher))
		byKey := map[string][]string{}
		for w, paths := range sum.ByWatcher {
			k := sessionHex(w.(*conn).sessionID)
			keys = append(keys, k)
			byKey[k] = append(byKey[k], paths...)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(k + "\n")
			for _, p := range byKey[k] {
				b.WriteString("\t" + p + "\n")
			}
		}
	case "wchp":
		sum := s.watches.summary()
		paths := make([]string, 0, len(sum.ByPath))
		for p := range sum.ByPath {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			b.WriteString(p + "\n")
			for _, w := range sum.ByPath[p] {
				b.WriteString("\t" + sessionHex(w.(*conn).sessionID) + "\n")
			}
		}
	case "dump":
		s.sm.mu.RLock()
		sessions := s.sm.sessions.All()
		b.WriteString("SessionTracker dump:\n")
		fmt.Fprintf(&b, "Session Sets (%d):\n", len(sessions))
		b.WriteString("ephemeral nodes dump:\n")
		fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", len(s.sm.tree.EphemeralOwners()))
		for _, id := range s.sm.tree.EphemeralOwners() {
			b.WriteString(sessionHex(id) + ":\n")
			for _, p := range s.sm.tree.Ephemerals(id, "/") {
				b.WriteString("\t" + p + "\n")
			}
		}
		s.sm.mu.RUnlock()
	case "mntr":
		s.writeMonitor(&b)
	case "gtmk":
		return "0"
	default:
		return ""
	}
	return b.String()
}

var buildDate = time.Now().UTC().Format("2006-01-02 15:04 MST")

func (s *Server) nodeCount() int {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	return s.sm.tree.NodeCount() + 1 // ZooKeeper's map holds the root twice
}

func (s *Server) writeServerStats(b *strings.Builder, withClients bool) {
	fmt.Fprintf(b, "Zookeeper version: %s, built on %s\n", Version, buildDate)
	if withClients {
		b.WriteString("Clients:\n")
		s.writeConnections(b)
		b.WriteString("\n")
	}
	min, avg, max := s.stats.latency()
	s.connMu.Lock()
	nconns := len(s.conns)
	s.connMu.Unlock()
	fmt.Fprintf(b, "Latency min/avg/max: %d/%.4f/%d\n", min, avg, max)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n",
		s.stats.received.Load(), s.stats.sent.Load(), nconns, s.stats.outstanding.Load())
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", s.sm.lastZxid.Load(), s.mode(), s.nodeCount())
}

func (s *Server) writeConnections(b *strings.Builder) {
	s.connMu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.connMu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	for _, c := range conns {
		min, avg, max := c.stats.latency()
		fmt.Fprintf(b, " /%s[1](queued=%d,recved=%d,sent=%d,sid=%s,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=0,llat=0,minlat=%d,avglat=%.4f,maxlat=%d)\n",
			c.remote, len(c.items), c.stats.received.Load(), c.stats.sent.Load(), sessionHex(c.sessionID),
			opName(c.stats.lastOp.Load()), c.established.UnixMilli(), c.timeoutMs,
			uint32(c.stats.lastCxid.Load()), c.stats.lastZxid.Load(), min, avg, max)
	}
}

func (s *Server) writeMonitor(b *strings.Builder) {
	min, avg, max := s.stats.latency()
	s.connMu.Lock()
	nconns := len(s.conns)
	s.connMu.Unlock()
	sum := s.watches.summary()
	s.sm.mu.RLock()
	ephemerals := 0
	for _, id := range s.sm.tree.EphemeralOwners() {
		ephemerals += len(s.sm.tree.Ephemerals(id, "/"))
	}
	dataSize := s.sm.tree.ApproximateDataSize()
	sessions := s.sm.sessions.Len()
	s.sm.mu.RUnlock()
	st := s.node.Status()
	lines := []struct {
		k string
		v any
	}{
		{"version", Version + ", built on " + buildDate},
		{"server_state", s.mode()},
		{"avg_latency", fmt.Sprintf("%.4f", avg)},
		{"max_latency", max},
		{"min_latency", min},
		{"packets_received", s.stats.received.Load()},
		{"packets_sent", s.stats.sent.Load()},
		{"num_alive_connections", nconns},
		{"outstanding_requests", s.stats.outstanding.Load()},
		{"znode_count", s.nodeCount()},
		{"watch_count", sum.Total},
		{"ephemerals_count", ephemerals},
		{"approximate_data_size", dataSize},
		{"uptime", time.Since(s.start).Milliseconds()},
		{"global_sessions", sessions},
		{"local_sessions", 0},
		{"raft_term", st.Term},
		{"raft_commit_index", st.Commit},
		{"raft_applied_index", st.Applied},
	}
	for _, l := range lines {
		fmt.Fprintf(b, "zk_%s\t%v\n", l.k, l.v)
	}
}

func dirSize(dir string) int64 {
	var total int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			total += info.Size()
		}
	}
	return total
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
