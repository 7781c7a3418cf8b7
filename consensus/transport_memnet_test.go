package consensus

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/internal/memnet"
)

// TestTransportOnMemnet: the TCP transport listens and dials through its
// Network, plain or with TLS on top. Over the in-memory network a message
// crosses, a peer cut off and whose connection was closed is reported
// unreachable (the dial gets no answer until DialTimeout), and once the
// link heals the transport dials again and delivers.
func TestTransportOnMemnet(t *testing.T) {
	ca := newTLSCA(t, "members CA")
	tests := []struct {
		name string
		tls  func(host string) *tls.Config
	}{
		{"plain", func(string) *tls.Config { return nil }},
		{"tls", func(host string) *tls.Config { return ca.memberConfig(t, ca, host, host) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mn := memnet.New()
			start := func(id uint64, host string, peers ...Peer) (*TCPTransport, *recorder) {
				tr := NewTCPTransport(TCPConfig{ID: id, ListenAddr: host + ":2888", Peers: peers, Logger: testLogger(t),
					TLS: tt.tls(host), Network: mn.Host(host), DialTimeout: 100 * time.Millisecond})
				rec := newRecorder()
				require.NoError(t, tr.Start(rec))
				t.Cleanup(tr.Stop)
				return tr, rec
			}
			_, rec2 := start(2, "m2")
			tr1, rec1 := start(1, "m1", Peer{ID: 2, Addr: "m2:2888"})
			hb := func(commit uint64) []*pb.Message {
				return []*pb.Message{{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1)), To: new(uint64(2)), Commit: new(commit)}}
			}
			received := func(commit uint64) func() bool {
				return func() bool {
					for _, m := range rec2.msgs {
						if m.GetCommit() == commit {
							return true
						}
					}
					return false
				}
			}
			tr1.Send(hb(1))
			rec2.waitFor(t, testTimeout, "heartbeat 1 received", received(1))

			mn.Partition("m1", "m2")
			require.Positive(t, mn.CloseHost("m1"), "m1's connections closed")
			// The sender learns its connection is gone at its next write,
			// and its dial across the cut times out: the peer is unreachable.
			deadline := time.Now().Add(testTimeout)
			for time.Now().Before(deadline) && !strings.Contains(tr1.PeerStats()[0].LastError, context.DeadlineExceeded.Error()) {
				tr1.Send(hb(2))
				time.Sleep(10 * time.Millisecond)
			}
			st := tr1.PeerStats()[0]
			require.Contains(t, st.LastError, context.DeadlineExceeded.Error(), "the dial across the cut timed out")
			require.Positive(t, st.Dropped, "messages to a cut-off peer are dropped")
			rec1.mu.Lock()
			require.Positive(t, rec1.unreachable, "raft was told the peer is unreachable")
			rec1.mu.Unlock()

			mn.HealAll()
			for time.Now().Before(deadline) {
				tr1.Send(hb(3))
				rec2.mu.Lock()
				ok := received(3)()
				rec2.mu.Unlock()
				if ok {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			rec2.waitFor(t, time.Second, "heartbeat 3 received after the link healed", received(3))
		})
	}
}
