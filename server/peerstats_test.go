package server

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/consensus"
)

// statsTransport is a consensus.Transport that only reports fixed counters.
type statsTransport struct{ stats []consensus.PeerStats }

func (statsTransport) Send([]*pb.Message)                   {}
func (statsTransport) Start(consensus.MessageHandler) error { return nil }
func (statsTransport) Stop()                                {}
func (t statsTransport) PeerStats() []consensus.PeerStats   { return t.stats }

func TestPeerMetrics(t *testing.T) {
	now := time.Now()
	tr := statsTransport{stats: []consensus.PeerStats{
		{ID: 2, Addr: "127.0.0.1:1", Sent: 10, Dropped: 3, Received: 7, Reconnects: 1,
			LastError: "dial tcp: connection\trefused", LastErrorTime: now, LastContact: now.Add(-time.Second), Unreachable: true},
		{ID: 3, Sent: 1},
	}}
	s := &Server{transport: tr}

	got := map[string]any{}
	for _, m := range s.peerMetrics() {
		got[m.k] = m.v
	}
	for k, want := range map[string]any{
		"raft_peer_2_messages_sent": int64(10), "raft_peer_2_messages_dropped": int64(3),
		"raft_peer_2_messages_received": int64(7), "raft_peer_2_reconnects": int64(1),
		"raft_peer_2_unreachable": int64(1), "raft_peer_2_last_error": "dial tcp: connection refused",
		"raft_peer_3_messages_sent": int64(1), "raft_peer_3_last_contact_ms_ago": int64(-1),
	} {
		require.Equal(t, want, got[k], k)
	}
	require.GreaterOrEqual(t, got["raft_peer_2_last_contact_ms_ago"], int64(1000))
	require.NotContains(t, got, "raft_peer_3_last_error")

	reg := prometheus.NewRegistry()
	reg.MustRegister(&peerCollector{s: s})
	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			values[f.GetName()+"/"+m.GetLabel()[0].GetValue()] = v
		}
	}
	require.Equal(t, 10.0, values["zkraft_peer_messages_sent_total/2"])
	require.Equal(t, 3.0, values["zkraft_peer_messages_dropped_total/2"])
	require.Equal(t, 1.0, values["zkraft_peer_unreachable/2"])
	require.Equal(t, 0.0, values["zkraft_peer_unreachable/3"])
	require.Contains(t, values, "zkraft_peer_last_contact_timestamp_seconds/2")
	require.NotContains(t, values, "zkraft_peer_last_contact_timestamp_seconds/3")

	// Standalone: no transport, no lines.
	require.Empty(t, (&Server{}).peerMetrics())
}
