package consensus

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// acksOf returns the indexes of the accepted append acknowledgements in
// msgs.
func acksOf(msgs []*pb.Message) []uint64 {
	var out []uint64
	for _, m := range msgs {
		if m.GetType() == pb.MsgAppResp && !m.GetReject() {
			out = append(out, m.GetIndex())
		}
	}
	return out
}

// TestReadyWriteStepByStep drives a follower's Ready the way the simulator
// does, without a goroutine: the write runs only when the caller calls
// Write; meanwhile a peer message that commits a durable entry is stepped
// and the entry applied, one that commits the entry being written does
// not apply it, and the acknowledgement of that entry leaves with the
// write, not before it.
func TestReadyWriteStepByStep(t *testing.T) {
	st := newMemStorage()
	sm := &recordSM{}
	tr := &sentTransport{}
	at := &ackTransport{st: st, acks: make(chan uint64, 16)}
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c, err := NewCore(Config{ID: 2, Peers: peers, Transport: tr, Logger: zerolog.Nop()}, sm,
		CoreOptions{Storage: st, ParallelApply: true})
	require.NoError(t, err)
	handleReadys(t, c)
	ent := func(i uint64, d string) *pb.Entry { return dataEntry(i, 2, d) }
	require.NoError(t, c.Step(leaderApp(3, 1, 3, ent(4, "a"))))
	handleReadys(t, c)
	require.Contains(t, acksOf(tr.take()), uint64(4))

	require.NoError(t, c.Step(leaderApp(4, 2, 3, ent(5, "b"))))
	w, err := c.BeginReady()
	require.NoError(t, err)
	require.True(t, w.Overlaps())
	require.Len(t, w.Batch().Entries, 1)
	require.NoError(t, c.ApplyDurable(w))
	require.NoError(t, c.StepWhileWriting(w, leaderApp(4, 2, 4)))
	require.Equal(t, []string{"a"}, sm.applied(), "a applied while b waits for its write")
	require.NoError(t, c.StepWhileWriting(w, leaderApp(5, 2, 5)))
	require.Equal(t, []string{"a"}, sm.applied(), "b committed, but not applied before it is durable")
	require.Empty(t, acksOf(tr.take()), "nothing acknowledged before the write")
	require.Equal(t, uint64(4), st.lastIndex())

	c.transport, w.transport = at, at // from here on, every ack is checked against the disk when sent
	require.NoError(t, w.Write())
	require.Equal(t, uint64(5), st.lastIndex())
	require.Equal(t, uint64(5), <-at.acks, "b acknowledged once the write returned")
	require.Empty(t, at.bad)
	require.NoError(t, c.FinishReady(w, nil))
	handleReadys(t, c)
	require.Equal(t, []string{"a", "b"}, sm.applied(), "b applied once durable")
}
