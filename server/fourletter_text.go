package server

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"
)

// The four-letter words' text renderings: each command printed as ZooKeeper
// 3.8 prints it, from the views in fourletter.go (which the AdminServer's
// JSON and the Prometheus endpoint share).

// allFourLetterWords are the words ZooKeeper 3.8 recognises. A recognised
// word that is not whitelisted is refused with a message; zkraft implements
// the ones in knownFourLetterWords (config.go), which "*" enables.
var allFourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "conf": true, "cons": true, "crst": true, "dump": true,
	"envi": true, "mntr": true, "wchs": true, "wchc": true, "wchp": true, "dirs": true, "isro": true,
	"srst": true, "gtmk": true, "stmk": true, "hash": true,
	"lcks": true, // zkraft's own (locks.go); not enabled by "*", only when listed
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

// fourLetterOutput renders a command as ZooKeeper 3.8 prints it. The data
// comes from the views below, which the AdminServer's JSON shares.
func (s *Server) fourLetterOutput(cmd string) string {
	switch cmd {
	case "ruok":
		return "imok"
	case "isro":
		if !s.serving.Load() {
			return "null"
		}
		return "rw"
	case "envi":
		var b strings.Builder
		b.WriteString("Environment:\n")
		for _, kv := range environment() {
			fmt.Fprintf(&b, "%s=%v\n", kv.k, kv.v)
		}
		return b.String()
	}
	if !s.serving.Load() {
		return notServing + "\n"
	}
	var b strings.Builder
	switch cmd {
	case "srvr", "stat":
		s.writeServerStats(&b, cmd == "stat")
	case "srst":
		s.resetServerStats()
		return "Server stats reset.\n"
	case "crst":
		s.resetConnectionStats()
		return "Connection stats reset.\n"
	case "conf":
		for _, kv := range s.configuration() {
			fmt.Fprintf(&b, "%s=%v\n", kv.k, kv.v)
		}
		if m := s.membershipText(); m != "" {
			b.WriteString("membership: \n" + m)
		}
	case "lcks":
		b.WriteString(s.lockScan().text())
	case "cons":
		for _, c := range s.connViews() {
			b.WriteString(c.line(false))
		}
		b.WriteString("\n")
	case "dirs":
		dataSize, logSize := s.dirSizes()
		fmt.Fprintf(&b, "datadir_size: %d\nlogdir_size: %d\n", dataSize, logSize)
	case "wchs":
		w := s.dataWatches()
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", len(w.bySession), len(w.byPath), w.total)
	case "wchc":
		w := s.dataWatches()
		for _, id := range sortedKeys(w.bySession) {
			b.WriteString(sessionHex(id) + "\n")
			for _, p := range w.bySession[id] {
				b.WriteString("\t" + p + "\n")
			}
		}
		b.WriteString("\n")
	case "wchp":
		w := s.dataWatches()
		for _, p := range sortedKeys(w.byPath) {
			b.WriteString(p + "\n")
			for _, id := range w.byPath[p] {
				b.WriteString("\t" + sessionHex(id) + "\n")
			}
		}
		b.WriteString("\n")
	case "dump":
		s.writeDump(&b)
	case "mntr":
		for _, m := range s.monitorMetrics() {
			fmt.Fprintf(&b, "zk_%s\t%s\n", m.k, formatValue(m.v))
		}
	default:
		return ""
	}
	return b.String()
}

// writeServerStats prints srvr (and stat, which adds the clients) with the
// lines in ZooKeeper's order: monitoring tools read them by position.
func (s *Server) writeServerStats(b *strings.Builder, withClients bool) {
	v := s.statsView()
	fmt.Fprintf(b, "Zookeeper version: %s\n", v.version)
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range s.connViews() {
			b.WriteString(c.line(true))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", v.minLatency, javaDouble(v.avgLatency), v.maxLatency)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", v.received, v.sent, v.connections, v.outstanding)
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", uint64(v.zxid), v.mode, v.nodeCount)
	if v.mode == "leader" {
		// ZooKeeper's proposal size statistics; zkraft does not keep them,
		// and -1 is ZooKeeper's "no proposal yet".
		b.WriteString("Proposal sizes last/min/max: -1/-1/-1\n")
	}
}

// line renders a connection as stat (brief) or cons prints it.
func (c connView) line(brief bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, " /%s[%d](queued=%d,recved=%d,sent=%d", c.remote, c.interestOps, c.queued, c.received, c.sent)
	if !brief && c.sessionID != 0 {
		fmt.Fprintf(&b, ",sid=%s,lop=%s,est=%d,to=%d", sessionHex(c.sessionID), c.lastOp, c.established, c.timeoutMs)
		if c.lastCxid >= 0 { // ZooKeeper leaves lcxid out after a crst
			fmt.Fprintf(&b, ",lcxid=0x%x", c.lastCxid)
		}
		fmt.Fprintf(&b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(c.lastZxid), c.lastResponse, c.lastLatency, c.minLatency, c.avgLatency, c.maxLatency)
	}
	b.WriteString(")\n")
	return b.String()
}

// writeDump prints dump: session expiry buckets, ephemerals per session, and
// connection expiry buckets, in ZooKeeper's layout.
func (s *Server) writeDump(b *strings.Builder) {
	const javaDate = "Mon Jan 02 15:04:05 MST 2006"
	writeBuckets := func(title string, buckets []expiryBucket, entry func(int64) string) {
		n := 0
		for _, bk := range buckets {
			n += len(bk.ids)
		}
		fmt.Fprintf(b, "%s (%d)/(%d):\n", title, len(buckets), n)
		for _, bk := range buckets {
			fmt.Fprintf(b, "%d expire at %s:\n", len(bk.ids), bk.at.Format(javaDate))
			for _, id := range bk.ids {
				b.WriteString("\t" + entry(id) + "\n")
			}
		}
	}
	b.WriteString("SessionTracker dump:\n")
	writeBuckets("Session Sets", s.sessionBuckets(), sessionHex)
	b.WriteString("ephemeral nodes dump:\n")
	eph := s.ephemeralsBySession()
	fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(eph))
	for _, id := range sortedKeys(eph) {
		b.WriteString(sessionHex(id) + ":\n")
		for _, p := range eph[id] {
			b.WriteString("\t" + p + "\n")
		}
	}
	b.WriteString("Connections dump:\n")
	conns := s.connViews()
	byIndex := map[int64]connView{}
	var buckets []expiryBucket
	at := map[int64]int{}
	for i, c := range conns {
		byIndex[int64(i)] = c
		deadline := c.expiry.Truncate(time.Second)
		k := deadline.UnixMilli()
		j, ok := at[k]
		if !ok {
			j = len(buckets)
			at[k] = j
			buckets = append(buckets, expiryBucket{at: deadline})
		}
		buckets[j].ids = append(buckets[j].ids, int64(i))
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].at.Before(buckets[j].at) })
	writeBuckets("Connections Sets", buckets, func(i int64) string {
		c := byIndex[i]
		return fmt.Sprintf("ip: /%s sessionId: %s", c.remote, sessionHex(c.sessionID))
	})
}

// formatValue prints a mntr value: floats as Java prints doubles.
func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return javaDouble(x)
	default:
		return fmt.Sprint(x)
	}
}
