package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkraft/zkraft/consensus"
)

// Per-peer transport counters (issue 9), as etcd exposes for its peers: in
// mntr as zk_raft_peer_<id>_* lines (after the other raft figures) and on
// the Prometheus endpoint as zkraft_peer_* series labelled by peer id. A
// standalone server, or a transport without counters, reports nothing.

// peerStatser is implemented by transports that count per-peer traffic
// (consensus.TCPTransport).
type peerStatser interface {
	PeerStats() []consensus.PeerStats
}

// peerStats returns the transport's per-peer counters, nil when there are
// none.
func (s *Server) peerStats() []consensus.PeerStats {
	ps, ok := s.transport.(peerStatser)
	if !ok || ps == nil {
		return nil
	}
	return ps.PeerStats()
}

// peerMetrics is mntr's per-peer part: integers, and the last transport
// error as text when there was one. last_contact_ms_ago is -1 before the
// first message from the peer.
func (s *Server) peerMetrics() []kv {
	var out []kv
	now := time.Now()
	for _, p := range s.peerStats() {
		prefix := "raft_peer_" + strconv.FormatUint(p.ID, 10) + "_"
		contact := int64(-1)
		if !p.LastContact.IsZero() {
			contact = now.Sub(p.LastContact).Milliseconds()
		}
		unreachable := int64(0)
		if p.Unreachable {
			unreachable = 1
		}
		out = append(out,
			kv{prefix + "messages_sent", int64(p.Sent)},
			kv{prefix + "messages_dropped", int64(p.Dropped)},
			kv{prefix + "messages_received", int64(p.Received)},
			kv{prefix + "reconnects", int64(p.Reconnects)},
			kv{prefix + "unreachable", unreachable},
			kv{prefix + "last_contact_ms_ago", contact},
		)
		if p.LastError != "" {
			out = append(out, kv{prefix + "last_error", strings.Join(strings.Fields(p.LastError), " ")})
		}
	}
	return out
}

// peerCollector exports the per-peer counters at scrape time.
type peerCollector struct{ s *Server }

var (
	peerLabels    = []string{"peer"}
	peerSentDesc  = prometheus.NewDesc("zkraft_peer_messages_sent_total", "Raft messages written to the peer's connection", peerLabels, nil)
	peerDropDesc  = prometheus.NewDesc("zkraft_peer_messages_dropped_total", "Raft messages to the peer dropped unsent (queue full, peer unreachable, sender restarted)", peerLabels, nil)
	peerRecvDesc  = prometheus.NewDesc("zkraft_peer_messages_received_total", "Raft messages received from the peer", peerLabels, nil)
	peerReconDesc = prometheus.NewDesc("zkraft_peer_reconnects_total", "Connections to the peer dialled after the first", peerLabels, nil)
	peerDownDesc  = prometheus.NewDesc("zkraft_peer_unreachable", "1 while dials or writes to the peer fail", peerLabels, nil)
	peerSeenDesc  = prometheus.NewDesc("zkraft_peer_last_contact_timestamp_seconds", "When the last message from the peer arrived (Unix time; absent before the first)", peerLabels, nil)
	peerErrDesc   = prometheus.NewDesc("zkraft_peer_last_error_timestamp_seconds", "When the last dial or write error to the peer happened (Unix time; absent if none)", peerLabels, nil)
)

func (c *peerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{peerSentDesc, peerDropDesc, peerRecvDesc, peerReconDesc, peerDownDesc, peerSeenDesc, peerErrDesc} {
		ch <- d
	}
}

func (c *peerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.s.peerStats() {
		id := strconv.FormatUint(p.ID, 10)
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), id)
		}
		counter(peerSentDesc, p.Sent)
		counter(peerDropDesc, p.Dropped)
		counter(peerRecvDesc, p.Received)
		counter(peerReconDesc, p.Reconnects)
		down := 0.0
		if p.Unreachable {
			down = 1
		}
		ch <- prometheus.MustNewConstMetric(peerDownDesc, prometheus.GaugeValue, down, id)
		if !p.LastContact.IsZero() {
			ch <- prometheus.MustNewConstMetric(peerSeenDesc, prometheus.GaugeValue, float64(p.LastContact.UnixNano())/1e9, id)
		}
		if !p.LastErrorTime.IsZero() {
			ch <- prometheus.MustNewConstMetric(peerErrDesc, prometheus.GaugeValue, float64(p.LastErrorTime.UnixNano())/1e9, id)
		}
	}
}
