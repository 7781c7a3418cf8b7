package consensus

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// logSM is a fake StateMachine: an append-only log of applied entries.
type logSM struct {
	mu       sync.Mutex
	datas    [][]byte
	indexes  []uint64
	last     uint64 // index of the last Apply or Restore
	restores int
	bad      []string // contract violations seen
	changed  chan struct{}
	// refuse, when set, is the data of an entry Apply refuses with an
	// error (as a member meeting an entry it cannot decode does).
	refuse string
	// gate, when set, blocks serializing a snapshot until it is closed
	// (both Snapshot and the function FreezeSnapshot returns).
	gate chan struct{}
}

func newLogSM() *logSM { return &logSM{changed: make(chan struct{})} }

func (s *logSM) Apply(index, term uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != "" && string(data) == s.refuse {
		return fmt.Errorf("cannot apply %q", data)
	}
	if index <= s.last {
		s.bad = append(s.bad, fmt.Sprintf("apply %d after %d", index, s.last))
	}
	if term == 0 || len(data) == 0 {
		s.bad = append(s.bad, fmt.Sprintf("apply %d: term %d, %d bytes", index, term, len(data)))
	}
	s.datas = append(s.datas, bytes.Clone(data))
	s.indexes = append(s.indexes, index)
	s.last = index
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Snapshot encodes last, then (index, len, data) per entry.
func (s *logSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	last, datas, indexes, gate := s.last, s.datas, s.indexes, s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return encodeLogSM(last, datas, indexes), nil
}

// FreezeSnapshot implements SnapshotFreezer: the entries are append-only, so
// the slice headers are a consistent copy.
func (s *logSM) FreezeSnapshot() (func(io.Writer) error, error) {
	s.mu.Lock()
	last, datas, indexes, gate := s.last, s.datas[:len(s.datas):len(s.datas)], s.indexes[:len(s.indexes):len(s.indexes)], s.gate
	s.mu.Unlock()
	return func(w io.Writer) error {
		if gate != nil {
			<-gate
		}
		_, err := w.Write(encodeLogSM(last, datas, indexes))
		return err
	}, nil
}

func encodeLogSM(last uint64, datas [][]byte, indexes []uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, last)
	for i, d := range datas {
		b = binary.BigEndian.AppendUint64(b, indexes[i])
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	return b
}

func (s *logSM) Restore(index uint64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(b) < 8 {
		return errors.New("short snapshot")
	}
	last := binary.BigEndian.Uint64(b)
	if last > index {
		return fmt.Errorf("snapshot state at %d newer than index %d", last, index)
	}
	b = b[8:]
	var datas [][]byte
	var idxs []uint64
	for len(b) > 0 {
		if len(b) < 12 {
			return errors.New("truncated snapshot")
		}
		i, n := binary.BigEndian.Uint64(b), binary.BigEndian.Uint32(b[8:])
		b = b[12:]
		if uint32(len(b)) < n {
			return errors.New("truncated snapshot entry")
		}
		idxs = append(idxs, i)
		datas = append(datas, bytes.Clone(b[:n]))
		b = b[n:]
	}
	s.datas, s.indexes, s.last = datas, idxs, index
	s.restores++
	return nil
}

type smState struct {
	datas   []string
	indexes []uint64
}

func (s *logSM) state() smState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := smState{indexes: append([]uint64(nil), s.indexes...)}
	for _, d := range s.datas {
		st.datas = append(st.datas, string(d))
	}
	return st
}

// waitCount waits until at least n entries were applied.
func (s *logSM) waitCount(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		s.mu.Lock()
		got, ch := len(s.datas), s.changed
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("applied %d entries, want %d", got, n)
		}
	}
}

func (s *logSM) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bad...)
}

// testNode is a started single-member node with its state machine.
type testNode struct {
	*Node
	sm      *logSM
	leaderC chan struct{} // closed when this node first becomes leader
}

type cfgOpt func(*Config)

func startTestNode(t testing.TB, dir string, opts ...cfgOpt) *testNode {
	t.Helper()
	tn, err := tryStartTestNode(t, dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tn.Stop() })
	return tn
}

func tryStartTestNode(t testing.TB, dir string, opts ...cfgOpt) (*testNode, error) {
	return tryStartTestNodeSM(t, dir, newLogSM(), opts...)
}

// tryStartTestNodeSM is tryStartTestNode with a given state machine.
func tryStartTestNodeSM(t testing.TB, dir string, sm *logSM, opts ...cfgOpt) (*testNode, error) {
	leaderC := make(chan struct{})
	var once sync.Once
	cfg := Config{
		ID:           1,
		DataDir:      dir,
		TickInterval: 10 * time.Millisecond,
		Logger:       testLogger(t),
		OnLeaderChange: func(isLeader bool, _, _ uint64) {
			if isLeader {
				once.Do(func() { close(leaderC) })
			}
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(cfg, sm)
	if err != nil {
		return nil, err
	}
	return &testNode{Node: n, sm: sm, leaderC: leaderC}, nil
}

func testLogger(t testing.TB) zerolog.Logger {
	if tt, ok := t.(*testing.T); ok {
		return zerolog.New(zerolog.NewTestWriter(tt)).Level(zerolog.InfoLevel)
	}
	return zerolog.Nop()
}

func (tn *testNode) waitLeader(t testing.TB) {
	t.Helper()
	select {
	case <-tn.leaderC:
	case <-time.After(testTimeout):
		t.Fatal("no leader elected")
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// proposeSeq proposes n entries "<prefix>-<i>" one after the other.
func (tn *testNode) proposeSeq(t testing.TB, prefix string, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	var want []string
	for i := range n {
		d := fmt.Sprintf("%s-%d", prefix, i)
		require.NoError(t, tn.Propose(ctx, []byte(d)))
		want = append(want, d)
	}
	return want
}

// proposeEach proposes n entries, waiting for each to be applied before the
// next, so every Ready applies about one entry.
func (tn *testNode) proposeEach(t testing.TB, prefix string, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	base := len(tn.sm.state().datas)
	var want []string
	for i := range n {
		d := fmt.Sprintf("%s-%d", prefix, i)
		require.NoError(t, tn.Propose(ctx, []byte(d)))
		tn.sm.waitCount(t, base+i+1)
		want = append(want, d)
	}
	return want
}

// settle returns once every Ready that was being handled when it was called
// has been handled completely. A snapshot job it triggered may still be
// running on the snapshotter goroutine (the log is compacted when the job
// is recorded).
func (tn *testNode) settle(t testing.TB) {
	t.Helper()
	_, err := tn.ReadIndex(testCtx(t))
	require.NoError(t, err)
}

// waitSnapshot waits (bounded) until tn recorded a local snapshot: the
// snapshotter takes it off the loop, so on a busy machine it can come after
// the entries that asked for it were applied and settle returned.
func (tn *testNode) waitSnapshot(t testing.TB) {
	t.Helper()
	tn.waitSnapshotAbove(t, 0)
}

// waitSnapshotAbove waits (bounded) until tn recorded a local snapshot above
// index min.
func (tn *testNode) waitSnapshotAbove(t testing.TB, min uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tn.Status().LastSnapshotIndex <= min {
		if time.Now().After(deadline) {
			t.Fatalf("no local snapshot above index %d within 10 s (last %d)", min, tn.Status().LastSnapshotIndex)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setWALSegmentSize makes stores opened during the test rotate WAL segments
// at n bytes.
func setWALSegmentSize(t testing.TB, n int64) {
	old := walSegmentSize
	walSegmentSize = n
	t.Cleanup(func() { walSegmentSize = old })
}

// handleReadys runs c's Readys until it has none.
func handleReadys(t testing.TB, c *Core) {
	t.Helper()
	for c.HasReady() {
		require.NoError(t, c.HandleReady())
	}
}

// dataEntry is a normal entry at index i of term holding d.
func dataEntry(i, term uint64, d string) *pb.Entry {
	return &pb.Entry{Index: new(i), Term: new(term), Type: pb.EntryNormal.Enum(), Data: []byte(d)}
}

// leaderApp is an append from leader 1 of term 2 to member 2: ents after
// (index, logTerm), with the leader's commit index.
func leaderApp(index, logTerm, commit uint64, ents ...*pb.Entry) *pb.Message {
	return &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)),
		Term: new(uint64(2)), Index: new(index), LogTerm: new(logTerm), Commit: new(commit), Entries: ents}
}

// startTestFollower starts member 2 of three (ParallelApply, a memStorage
// and a recordSM, sending through tr, peer messages through inbox) and
// handles its first Readys.
func startTestFollower(t *testing.T, tr Transport, inbox *testInbox) (*Core, *memStorage, *recordSM) {
	t.Helper()
	st, sm := newMemStorage(), &recordSM{}
	c, err := NewCore(Config{ID: 2, Peers: []Peer{{ID: 1}, {ID: 2}, {ID: 3}}, Transport: tr, Logger: zerolog.Nop()}, sm,
		CoreOptions{Storage: st, ParallelApply: true, Inbox: inbox})
	require.NoError(t, err)
	handleReadys(t, c)
	return c, st, sm
}

// startLeader starts a one-member Node with sm (stopped at cleanup) and
// returns it once it leads.
func startLeader(t testing.TB, sm StateMachine) *Node {
	t.Helper()
	node, err := Start(Config{ID: 1, DataDir: t.TempDir(), TickInterval: 10 * time.Millisecond, Logger: testLogger(t)}, sm)
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Stop() })
	require.Eventually(t, node.IsLeader, testTimeout, 5*time.Millisecond)
	return node
}

// holdWriteOf makes the storage of Nodes started afterwards (until cleanup)
// hold the first write that carries an entry of data: writing is closed
// when that write starts, which then waits for release to be closed.
func holdWriteOf(t testing.TB, data string) (writing <-chan struct{}, release chan struct{}) {
	t.Helper()
	w, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testWrapStorage = func(s Storage) Storage {
		return hookStorage{Storage: s, before: func(b *WriteBatch) {
			for _, e := range b.Entries {
				if string(e.GetData()) == data {
					once.Do(func() { close(w) })
					<-r
				}
			}
		}}
	}
	t.Cleanup(func() { testWrapStorage = nil })
	return w, r
}
