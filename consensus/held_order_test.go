package consensus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
)

// A proposal held while no leader was known reaches raft before a later
// ProposeAsync of the same caller that the loop runs in the same batch once
// a leader is known (before the loop's retryHeld): otherwise the server's
// per-connection order check refuses the later write and the client sees
// ConnectionLoss. The hold is set up by an op that puts A in n.held as
// stepProposal does while Lead() is 0, with B queued right behind it.
func TestHeldProposalKeepsItsTurn(t *testing.T) {
	xWriting, release := holdWriteOf(t, "x")
	sm := newLogSM()
	node := startLeader(t, sm)
	ctx := testCtx(t)
	go func() { _ = node.Propose(ctx, []byte("x")) }()
	<-xWriting // the loop is busy: the ops below run in one batch
	errc := make(chan error, 2)
	a := proposal{ctx: context.Background(), data: []byte("A"), done: DoneFunc(func(err error) { errc <- err })}
	node.queuedProposals.Add(1)
	node.q.push(func(n *Node) { n.held = append(n.held, a) })
	require.NoError(t, node.ProposeAsync(ctx, time.Time{}, []byte("B"), DoneFunc(func(err error) { errc <- err })))
	close(release)
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)
	sm.waitCount(t, 3)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	var got []string
	for _, d := range sm.datas {
		got = append(got, string(d))
	}
	require.Equal(t, []string{"x", "A", "B"}, got[len(got)-3:], "the held A reaches raft before the later B")
	require.Zero(t, node.queuedProposals.Load(), "nothing left counted as queued")
}

// failStorage fails the write holding the entry "x" once release is
// closed, which stops the node (a storage error is fatal).
type failStorage struct {
	Storage
	writing chan struct{}
	release chan struct{}
}

func (s failStorage) Write(w *WriteBatch) error {
	for _, e := range w.Entries {
		if string(e.GetData()) == "x" {
			close(s.writing)
			<-s.release
			return errors.New("disk gone")
		}
	}
	return s.Storage.Write(w)
}

// Proposals queued or held when the node stops (here: a fatal storage
// error) end with ErrStopped: a ProposeAsync caller learns at once that its
// write will not be applied. Before, its done never ran and a server
// connection waited for its write's timeout.
func TestStopFailsUnproposed(t *testing.T) {
	fs := failStorage{writing: make(chan struct{}), release: make(chan struct{})}
	testWrapStorage = func(s Storage) Storage { fs.Storage = s; return fs }
	t.Cleanup(func() { testWrapStorage = nil })
	node, err := Start(Config{ID: 1, DataDir: t.TempDir(), TickInterval: 10 * time.Millisecond, Logger: testLogger(t)}, newLogSM())
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Stop() })
	ctx := testCtx(t)
	require.Eventually(t, node.IsLeader, testTimeout, 5*time.Millisecond)
	go func() { _ = node.Propose(ctx, []byte("x")) }()
	<-fs.writing // the loop is stuck in the write that will fail
	errc := make(chan error, 2)
	require.NoError(t, node.ProposeAsync(ctx, time.Time{}, []byte("queued 1"), DoneFunc(func(err error) { errc <- err })))
	require.NoError(t, node.ProposeAsync(ctx, time.Time{}, []byte("queued 2"), DoneFunc(func(err error) { errc <- err })))
	close(fs.release)
	for range 2 {
		select {
		case err := <-errc:
			require.ErrorIs(t, err, ErrStopped)
		case <-time.After(testTimeout):
			t.Fatal("a proposal queued when the node stopped never ended")
		}
	}
}

// TestRefusedBatchProposedOneByOne: proposals queued back to back go to
// raft as one batch, which raft refuses whole where it would take the
// first of them alone (the leader's uncommitted-size limit); each then gets
// the outcome it would have had proposed alone: y fits beside the
// uncommitted x, y and z together do not.
func TestRefusedBatchProposedOneByOne(t *testing.T) {
	old := maxUncommittedBytes
	maxUncommittedBytes = 1000
	t.Cleanup(func() { maxUncommittedBytes = old })
	x := string(make([]byte, 600))
	xWriting, release := holdWriteOf(t, x)
	sm := newLogSM()
	node := startLeader(t, sm)
	ctx := testCtx(t)
	xErr := make(chan error, 1)
	go func() { xErr <- node.Propose(ctx, []byte(x)) }()
	<-xWriting // x is uncommitted (600 bytes) until its write returns
	yErr, zErr := make(chan error, 1), make(chan error, 1)
	require.NoError(t, node.ProposeAsync(ctx, time.Time{}, make([]byte, 300), DoneFunc(func(err error) { yErr <- err })))
	require.NoError(t, node.ProposeAsync(ctx, time.Time{}, make([]byte, 300), DoneFunc(func(err error) { zErr <- err })))
	close(release)
	require.NoError(t, <-xErr)
	require.NoError(t, <-yErr, "y fits beside x")
	require.ErrorIs(t, <-zErr, raft.ErrProposalDropped, "y and z do not")
	sm.waitCount(t, 2)
}

// TestBatchesKeepUncommittedLimit: raft checks its uncommitted-size limit
// once a message and takes any message while nothing is uncommitted, so
// proposals queued back to back must not all go as one message: ten of 300
// bytes under a 1000-byte limit, in batches of at most 600 bytes, are
// taken while the limit allows (600, then 900 one by one) and the rest
// dropped, not all ten at once.
func TestBatchesKeepUncommittedLimit(t *testing.T) {
	oldLimit, oldBatch := maxUncommittedBytes, maxBatchBytes
	maxUncommittedBytes, maxBatchBytes = 1000, 600
	t.Cleanup(func() { maxUncommittedBytes, maxBatchBytes = oldLimit, oldBatch })
	sm := newLogSM()
	node := startLeader(t, sm)
	ctx := testCtx(t)
	require.NoError(t, node.Propose(ctx, []byte("warm")))
	sm.waitCount(t, 1)
	blocked, release := make(chan struct{}), make(chan struct{})
	node.q.push(func(*Node) { close(blocked); <-release })
	<-blocked // the loop is busy and nothing is uncommitted
	errs := make(chan error, 10)
	for range 10 {
		require.NoError(t, node.ProposeAsync(ctx, time.Time{}, make([]byte, 300), DoneFunc(func(err error) { errs <- err })))
	}
	close(release)
	taken := 0
	for range 10 {
		if err := <-errs; err == nil {
			taken++
		} else {
			require.ErrorIs(t, err, raft.ErrProposalDropped)
		}
	}
	require.Equal(t, 3, taken, "proposals raft took under a 1000-byte uncommitted limit")
	sm.waitCount(t, 1+taken)
}
