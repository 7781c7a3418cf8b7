package consensus

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/internal/memnet"
)

// blackholeNetwork listens on an in-memory host, but its dials get no
// answer: each blocks until its context is done, as a dial whose SYN a
// partition drops. dialing receives once per dial that started.
type blackholeNetwork struct {
	*memnet.Host
	dialing chan struct{}
}

func (b blackholeNetwork) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	b.dialing <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStopCancelsDialInProgress: a peer's dial that gets no answer ends
// when the transport stops, or when the peer's sender stops (its address
// changed, it was removed), not at the dial timeout, here an hour: Stop
// (and the server's Stop) does not wait for it.
func TestStopCancelsDialInProgress(t *testing.T) {
	ca := newTLSCA(t, "members CA")
	tlsRows := []struct {
		name string
		tls  func(host string) *tls.Config
	}{
		{"plain", func(string) *tls.Config { return nil }},
		{"tls", func(host string) *tls.Config { return ca.memberConfig(t, ca, host, host) }},
	}
	stops := []struct {
		name string
		// stop ends the dial of peer 2 and returns a channel closed once
		// the sender dialling it has ended.
		stop func(tr *TCPTransport) <-chan struct{}
	}{
		{"transport stopped", func(tr *TCPTransport) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				tr.Stop()
			}()
			return done
		}},
		{"peer address changed", func(tr *TCPTransport) <-chan struct{} {
			tr.mu.Lock()
			old := tr.peers[2]
			tr.mu.Unlock()
			tr.AddPeer(Peer{ID: 2, Addr: "m3:2888"})
			return old.done
		}},
		{"peer removed", func(tr *TCPTransport) <-chan struct{} {
			tr.mu.Lock()
			old := tr.peers[2]
			tr.mu.Unlock()
			tr.RemovePeer(2) // stopped after retireGrace
			return old.done
		}},
	}
	for _, tr := range tlsRows {
		for _, st := range stops {
			t.Run(tr.name+"/"+st.name, func(t *testing.T) {
				nw := blackholeNetwork{Host: memnet.New().Host("m1"), dialing: make(chan struct{}, 16)}
				tp := NewTCPTransport(TCPConfig{ID: 1, ListenAddr: "m1:2888", Peers: []Peer{{ID: 2, Addr: "m2:2888"}},
					Logger: testLogger(t), TLS: tr.tls("m1"), Network: nw, DialTimeout: time.Hour})
				require.NoError(t, tp.Start(newRecorder()))
				t.Cleanup(tp.Stop)
				tp.Send([]*pb.Message{{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1)), To: new(uint64(2))}})
				<-nw.dialing // the sender is in its dial
				select {
				case <-st.stop(tp):
				case <-time.After(testTimeout):
					t.Fatalf("the sender still dials %v after it was stopped (dial timeout 1h)", testTimeout)
				}
			})
		}
	}
}
