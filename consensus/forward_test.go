package consensus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// propTransport signals the proposals (MsgProp) a Node sends on props.
type propTransport struct {
	props chan *pb.Message
}

func (t *propTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		if m.GetType() == pb.MsgProp {
			t.props <- m
		}
	}
}
func (*propTransport) Start(MessageHandler) error { return nil }
func (*propTransport) Stop()                      {}

// TestFollowerForwardsWhileWriting: a follower that knows its leader
// forwards a proposal to it at once, also while its loop waits for a
// storage write (raft would forward it only with the next Ready).
func TestFollowerForwardsWhileWriting(t *testing.T) {
	writing := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	testWrapStorage = func(s Storage) Storage {
		return hookStorage{Storage: s, before: func(w *WriteBatch) {
			for _, e := range w.Entries {
				if string(e.GetData()) == "w" {
					once.Do(func() { close(writing) })
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
			}
		}}
	}
	t.Cleanup(func() { testWrapStorage = nil })
	tr := &propTransport{props: make(chan *pb.Message, 4)}
	peers := []Peer{{ID: 1, Addr: "a"}, {ID: 2, Addr: "b"}, {ID: 3, Addr: "c"}}
	n, err := Start(Config{ID: 2, Peers: peers, Transport: tr, DataDir: t.TempDir(), TickInterval: time.Hour,
		Logger: testLogger(t)}, newLogSM())
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Stop() })
	ctx := testCtx(t)
	require.NoError(t, n.Step(ctx, &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1)), To: new(uint64(2)),
		Term: new(uint64(2)), Commit: new(uint64(3))}))
	require.Eventually(t, func() bool { return n.core.Lead() == 1 }, testTimeout, time.Millisecond)

	// The leader's entry w is written; the write waits.
	require.NoError(t, n.Step(ctx, &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)),
		Term: new(uint64(2)), Index: new(uint64(3)), LogTerm: new(uint64(1)), Commit: new(uint64(3)),
		Entries: []*pb.Entry{{Index: new(uint64(4)), Term: new(uint64(2)), Type: pb.EntryNormal.Enum(), Data: []byte("w")}}}))
	<-writing
	errc := make(chan error, 1)
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() { errc <- n.Propose(pctx, []byte("x")) }()
	var got *pb.Message
	select {
	case got = <-tr.props:
	case <-time.After(5 * time.Second):
	}
	close(release)
	require.NotNil(t, got, "the proposal was forwarded while the write waited")
	require.Equal(t, uint64(1), got.GetTo())
	require.Equal(t, uint64(2), got.GetFrom())
	require.Len(t, got.GetEntries(), 1)
	require.Equal(t, "x", string(got.GetEntries()[0].GetData()))
	require.NoError(t, <-errc)
}

// TestForwardKeepsOrderBehindRaftForwarded: a proposal the loop hands to a
// follower's raft ("a") is forwarded by raft in the next Ready; one the same
// caller forwards directly afterwards ("b") must not reach the leader
// first (the server refuses a session's reordered writes). Either Forward
// refuses until raft's MsgProp left, or raft's MsgProp leaves at the start
// of the Ready, before its write, during which Forward may send.
func TestForwardKeepsOrderBehindRaftForwarded(t *testing.T) {
	tests := []struct {
		name        string
		duringWrite bool // b forwarded during the Ready's write, else before the Ready
		forwarded   bool // Forward("b") sends it itself
		want        []string
	}{
		{name: "before the Ready", duringWrite: false, forwarded: false, want: []string{"a"}},
		{name: "during the write", duringWrite: true, forwarded: true, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &sentTransport{}
			c, st, _ := startTestFollower(t, tr, newTestInbox())
			require.NoError(t, c.Step(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1)), To: new(uint64(2)),
				Term: new(uint64(2)), Commit: new(uint64(3))}))
			for c.HasReady() {
				require.NoError(t, c.HandleReady())
			}
			require.Equal(t, uint64(1), c.Lead())
			require.True(t, c.Forward([]byte("x")), "nothing waits: Forward sends")
			tr.take()
			// The loop steps "a" (Node.propose: queued behind another
			// proposal) and a MsgApp from the leader; the next Ready writes
			// the entry.
			require.NoError(t, c.Propose([]byte("a")))
			require.NoError(t, c.Step(&pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)),
				Term: new(uint64(2)), Index: new(uint64(3)), LogTerm: new(uint64(1)), Commit: new(uint64(3)),
				Entries: []*pb.Entry{{Index: new(uint64(4)), Term: new(uint64(2)), Type: pb.EntryNormal.Enum(), Data: []byte("w")}}}))
			// Propose("a") returned; the caller's next write:
			var sent bool
			if tt.duringWrite {
				st.onWrite = func(w *WriteBatch) {
					if len(w.Entries) > 0 {
						sent = c.Forward([]byte("b"))
					}
				}
			} else {
				sent = c.Forward([]byte("b"))
			}
			require.NoError(t, c.HandleReady())
			require.Equal(t, tt.forwarded, sent, "Forward(b)")
			var order []string
			for _, m := range tr.take() {
				if m.GetType() == pb.MsgProp {
					order = append(order, string(m.GetEntries()[0].GetData()))
				}
			}
			require.Equal(t, tt.want, order, "proposals in the order the leader receives them")
			require.True(t, c.Forward([]byte("c")), "raft's MsgProp left: Forward sends again")
		})
	}
}
