package consensus

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// writeFrames writes msgs to c in the transport's wire format.
func writeFrames(t *testing.T, c net.Conn, msgs ...*pb.Message) {
	t.Helper()
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		var hdr [frameHeaderSize]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		_, err = c.Write(append(hdr[:], b...))
		require.NoError(t, err)
	}
}

// unreachablePeers returns peers 2..n at addresses nobody listens on.
func unreachablePeers(t *testing.T, n int) []Peer {
	var peers []Peer
	for id := uint64(2); id <= uint64(n); id++ {
		ln := listenLoopback(t)
		peers = append(peers, Peer{ID: id, Addr: ln.Addr().String()})
		require.NoError(t, ln.Close())
	}
	return peers
}

// startLeaderless starts member 1 of a 3-member group whose other members
// never answer: it stays without a leader. It returns the node and the
// address its transport listens on.
func startLeaderless(t *testing.T) (*testNode, string) {
	ln := listenLoopback(t)
	peers := append([]Peer{{ID: 1, Addr: ln.Addr().String()}}, unreachablePeers(t, 3)...)
	tr := NewTCPTransport(TCPConfig{ID: 1, Listener: ln, Peers: peers, Logger: testLogger(t)})
	tn := startTestNode(t, t.TempDir(), func(cfg *Config) {
		cfg.Peers, cfg.Transport = peers, tr
	})
	return tn, ln.Addr().String()
}

// TestForwardedProposalDoesNotBlockConnection is issue 9: a member resumed
// from a pause has, on the connection from a follower, proposals that
// follower forwarded while this member led, followed by that follower's
// heartbeats now that it leads. Raft takes no proposal while it knows no
// leader; the proposals must be dropped rather than hold back the
// heartbeats that would tell this member who the leader is.
func TestForwardedProposalDoesNotBlockConnection(t *testing.T) {
	tn, addr := startLeaderless(t)
	require.Zero(t, tn.Status().Lead)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	term := uint64(7)
	var msgs []*pb.Message
	for i := range 3 {
		msgs = append(msgs, &pb.Message{
			Type: pb.MsgProp.Enum(), From: new(uint64(2)), To: new(uint64(1)),
			Entries: []*pb.Entry{{Data: []byte{byte(i)}}},
		})
	}
	msgs = append(msgs, &pb.Message{
		Type: pb.MsgHeartbeat.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(term),
	})
	writeFrames(t, c, msgs...)

	deadline := time.Now().Add(testTimeout)
	for tn.Status().Lead != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("member 1 never learned leader 2 from the heartbeat behind forwarded proposals (status %+v)", tn.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, term, tn.Status().Term)
}
