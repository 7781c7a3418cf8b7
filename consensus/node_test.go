package consensus

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProposeAppliedInOrderExactlyOnce(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	tn.waitLeader(t)
	require.True(t, tn.IsLeader())

	want := tn.proposeSeq(t, "e", 200)
	tn.sm.waitCount(t, len(want))

	st := tn.sm.state()
	require.Equal(t, want, st.datas)
	require.Empty(t, tn.sm.violations())
	for i := 1; i < len(st.indexes); i++ {
		require.Greater(t, st.indexes[i], st.indexes[i-1])
	}
	// The node records its applied index just after Apply returns.
	require.NoError(t, tn.WaitApplied(testCtx(t), st.indexes[len(st.indexes)-1]))

	s := tn.Status()
	require.True(t, s.IsLeader)
	require.Equal(t, uint64(1), s.Lead)
	require.Equal(t, []uint64{1}, s.Voters)
	require.GreaterOrEqual(t, s.Commit, s.Applied)
}

func TestRestartReplaysFromLog(t *testing.T) {
	dir := t.TempDir()
	tn := startTestNode(t, dir)
	tn.waitLeader(t)
	want := tn.proposeSeq(t, "a", 50)
	tn.sm.waitCount(t, len(want))
	before := tn.sm.state()
	appliedBefore := tn.AppliedIndex()
	require.NoError(t, tn.Stop())
	require.NoError(t, tn.Stop(), "Stop is idempotent")
	require.NoError(t, tn.Err())

	tn2 := startTestNode(t, dir)
	require.NoError(t, tn2.WaitApplied(testCtx(t), appliedBefore))
	require.Equal(t, before, tn2.sm.state())
	require.Zero(t, tn2.sm.restores, "no snapshot was taken")
	require.GreaterOrEqual(t, tn2.AppliedIndex(), appliedBefore)

	tn2.waitLeader(t)
	tn2.proposeSeq(t, "b", 1)
	tn2.sm.waitCount(t, len(want)+1)
	after := tn2.sm.state()
	require.Greater(t, after.indexes[len(after.indexes)-1], before.indexes[len(before.indexes)-1])
	require.Empty(t, tn2.sm.violations())
}

func TestSnapshotBoundsLogAndRestores(t *testing.T) {
	const every, keep = 10, 5
	// Small WAL segments, so that deleting whole segments bounds the log.
	setWALSegmentSize(t, 512)
	dir := t.TempDir()
	opts := func(c *Config) { c.SnapshotEvery, c.KeepEntries = every, keep }
	tn := startTestNode(t, dir, opts)
	tn.waitLeader(t)
	tn.proposeEach(t, "s", 100)
	tn.settle(t)
	before := tn.sm.state()
	appliedBefore := tn.AppliedIndex()

	tn.waitSnapshotAbove(t, 50)
	// A snapshot job runs on the snapshotter goroutine and the log is
	// compacted when it is recorded, so one may still be in flight here
	// (settle waits for the loop, not for the job): the log comes down to
	// the bound once it is recorded.
	require.Eventually(t, func() bool { return tn.Status().LogEntries <= uint64(2*(every+keep)) },
		testTimeout, time.Millisecond, "in-memory log is compacted")
	n, err := tn.store.entryCount()
	require.NoError(t, err)
	require.LessOrEqual(t, n, 2*(every+keep), "the WAL is compacted")
	require.NoError(t, tn.Stop())

	files, err := listSnapFiles(filepath.Join(dir, snapDirName))
	require.NoError(t, err)
	require.Len(t, files, snapFilesKept)

	tn2 := startTestNode(t, dir, opts)
	require.Equal(t, 1, tn2.sm.restores)
	require.NoError(t, tn2.WaitApplied(testCtx(t), appliedBefore))
	require.Equal(t, before, tn2.sm.state())
	require.Empty(t, tn2.sm.violations())

	// The restarted node keeps working and snapshotting.
	tn2.waitLeader(t)
	tn2.proposeEach(t, "t", 30)
	tn2.settle(t)
	tn2.waitSnapshotAbove(t, appliedBefore)
}

func TestCorruptSnapshotFailsStart(t *testing.T) {
	dir := t.TempDir()
	opts := func(c *Config) { c.SnapshotEvery, c.KeepEntries = 10, 5 }
	tn := startTestNode(t, dir, opts)
	tn.waitLeader(t)
	tn.proposeEach(t, "c", 30)
	tn.settle(t)
	tn.waitSnapshot(t)
	require.NoError(t, tn.Stop())

	files, err := listSnapFiles(filepath.Join(dir, snapDirName))
	require.NoError(t, err)
	newest := filepath.Join(dir, snapDirName, files[len(files)-1].name)
	b, err := os.ReadFile(newest)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(newest, b, 0o600))

	_, err = tryStartTestNode(t, dir, opts)
	require.ErrorIs(t, err, ErrCorruptSnapshot)
	require.ErrorContains(t, err, "checksum")

	// The failed start released the bbolt file lock.
	require.NoError(t, os.WriteFile(newest, append(b[:len(b)-1:len(b)-1], b[len(b)-1]^0xff), 0o600))
	tn2 := startTestNode(t, dir, opts)
	require.Equal(t, 1, tn2.sm.restores)
}

func TestReadIndexCoversAppliedProposal(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	tn.waitLeader(t)
	tn.sm.waitCount(t, len(tn.proposeSeq(t, "r", 5)))
	last := tn.sm.state().indexes[4]

	ctx := testCtx(t)
	idx, err := tn.ReadIndex(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, idx, last)
	require.GreaterOrEqual(t, tn.AppliedIndex(), idx)

	// Concurrent reads all complete.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := tn.ReadIndex(ctx)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestConcurrentProposalsAreBatched(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	tn.waitLeader(t)
	// Wait until bootstrap entries are out of the way.
	_, err := tn.ReadIndex(testCtx(t))
	require.NoError(t, err)
	before := tn.Status()

	const n = 500
	ctx := testCtx(t)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			errs <- tn.Propose(ctx, []byte{byte(i), byte(i >> 8)})
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	tn.sm.waitCount(t, n)
	after := tn.Status()

	batches := after.PersistBatches - before.PersistBatches
	entries := after.PersistedEntries - before.PersistedEntries
	t.Logf("%d entries in %d bbolt transactions", entries, batches)
	require.GreaterOrEqual(t, entries, uint64(n))
	require.Less(t, batches, entries, "concurrent proposals share fsyncs")
	require.Empty(t, tn.sm.violations())
}

func TestStoppedNodeRefusesWork(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	tn.waitLeader(t)
	require.NoError(t, tn.Stop())
	<-tn.Done()
	ctx := testCtx(t)
	require.ErrorIs(t, tn.Propose(ctx, []byte("x")), ErrStopped)
	_, err := tn.ReadIndex(ctx)
	require.ErrorIs(t, err, ErrStopped)
	require.ErrorIs(t, tn.WaitApplied(ctx, tn.AppliedIndex()+1), ErrStopped)
	require.NoError(t, tn.WaitApplied(ctx, tn.AppliedIndex()))
	require.True(t, tn.Status().Stopped)
	require.False(t, tn.IsLeader())
}

func TestStorageErrorIsFatal(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	tn.waitLeader(t)
	tn.sm.waitCount(t, len(tn.proposeSeq(t, "f", 3)))

	// Pull the log and the database out from under the loop: the next
	// write fails.
	tn.store.mu.Lock()
	require.NoError(t, tn.store.wal.f.Close())
	tn.store.mu.Unlock()
	require.NoError(t, tn.store.db.Close())
	_ = tn.Propose(testCtx(t), []byte("lost"))
	select {
	case <-tn.Done():
	case <-testCtxDone(t):
		t.Fatal("node did not stop after a storage error")
	}
	require.Error(t, tn.Err())
	require.ErrorContains(t, tn.Err(), "persist")
	require.ErrorIs(t, tn.Propose(testCtx(t), []byte("y")), ErrStopped)
	require.Len(t, tn.sm.state().datas, 3, "nothing applied after the failed write")
}

func testCtxDone(t *testing.T) <-chan struct{} { return testCtx(t).Done() }

func TestProposeValidation(t *testing.T) {
	tn := startTestNode(t, t.TempDir())
	require.ErrorIs(t, tn.Propose(testCtx(t), nil), ErrEmptyProposal)
}

// hookStorage calls before at the start of every Write.
type hookStorage struct {
	Storage
	before func(*WriteBatch)
}

func (s hookStorage) Write(w *WriteBatch) error {
	s.before(w)
	return s.Storage.Write(w)
}

// gateSM holds Apply of the entry "a" until gate is closed, for at most
// wait (blocked reports that it gave up).
type gateSM struct {
	*logSM
	gate    chan struct{}
	wait    time.Duration
	blocked atomic.Bool // Apply of "a" gave up waiting
}

func (s *gateSM) Apply(index, term uint64, data []byte) error {
	if string(data) == "a" {
		select {
		case <-s.gate:
		case <-time.After(s.wait):
			s.blocked.Store(true)
		}
	}
	return s.logSM.Apply(index, term, data)
}

// TestLoopWritesNextBatchWithApply: on a single member, a proposal b queued
// while the loop writes entry a goes to raft before the Ready that applies a
// (the loop hands it the queued work first), so that this Ready also writes
// b: while a is applied when more entries than inlineApplyMax are to be
// applied ("overlapping"), and right after a's apply, on the loop, when
// fewer are ("apply first": a goroutine for the write would start later
// than a short apply ends). a's apply waits for b's write to start, for at
// most the case's wait: overlapping, it must not have to wait that long;
// applying first, b's write must not start before a is applied.
func TestLoopWritesNextBatchWithApply(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inlineMax int
		wait      time.Duration
		overlap   bool
	}{
		{"overlapping", 0, 5 * time.Second, true},
		{"apply first", inlineApplyMax, 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aWriting := make(chan struct{})
			release := make(chan struct{})
			sm := &gateSM{logSM: newLogSM(), gate: make(chan struct{}), wait: tc.wait}
			var aOnce, bOnce sync.Once
			var writes, aWrite, bWrite, appliedAtB atomic.Int64
			testWrapStorage = func(s Storage) Storage {
				return hookStorage{Storage: s, before: func(w *WriteBatch) {
					n := writes.Add(1) // every Ready's, empty or not
					for _, e := range w.Entries {
						switch string(e.GetData()) {
						case "a": // hold the write of a until b is queued
							aOnce.Do(func() {
								aWrite.Store(n)
								close(aWriting)
							})
							<-release
						case "b": // a may be applied now
							bOnce.Do(func() {
								bWrite.Store(n)
								appliedAtB.Store(int64(len(sm.state().datas)))
								close(sm.gate)
							})
						}
					}
				}}
			}
			max := tc.inlineMax
			testInlineApplyMax = &max
			t.Cleanup(func() { testWrapStorage, testInlineApplyMax = nil, nil })
			n, err := Start(Config{ID: 1, DataDir: t.TempDir(), TickInterval: 10 * time.Millisecond, Logger: testLogger(t)}, sm)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Stop() })
			ctx := testCtx(t)
			require.Eventually(t, n.IsLeader, testTimeout, 5*time.Millisecond)
			before := len(sm.state().datas) // applied before a (none: raft's empty entries are not applied)

			errc := make(chan error, 2)
			go func() { errc <- n.Propose(ctx, []byte("a")) }()
			<-aWriting
			go func() { errc <- n.Propose(ctx, []byte("b")) }()
			require.Eventually(t, func() bool {
				n.q.mu.Lock()
				defer n.q.mu.Unlock()
				return len(n.q.ops) == 1
			}, testTimeout, time.Millisecond)
			close(release)
			require.NoError(t, <-errc)
			require.NoError(t, <-errc)
			sm.waitCount(t, 2)
			require.Equal(t, aWrite.Load()+1, bWrite.Load(), "b was not written by the Ready after a's write")
			if tc.overlap {
				require.False(t, sm.blocked.Load(), "b was not written while a was applied")
				require.Equal(t, int64(before), appliedAtB.Load(), "a was applied before b's write started")
			} else {
				require.True(t, sm.blocked.Load(), "b's write started while a was applied")
				require.Equal(t, int64(before+1), appliedAtB.Load(), "a was not applied when b's write started")
			}
		})
	}
}

// TestProposeAsyncSharesOneWrite: one caller's ProposeAsync calls do not
// wait for the loop, so everything it queues while the loop is writing goes
// to raft together and into the next log write, in call order (Propose
// would wait for the held write before its second proposal could be queued).
func TestProposeAsyncSharesOneWrite(t *testing.T) {
	const n = 8
	aWriting := make(chan struct{})
	release := make(chan struct{})
	var aOnce sync.Once
	var mu sync.Mutex
	var batches [][]string // the data of every Write after a's
	afterA := false
	testWrapStorage = func(s Storage) Storage {
		return hookStorage{Storage: s, before: func(w *WriteBatch) {
			var data []string
			for _, e := range w.Entries {
				if d := string(e.GetData()); d == "a" {
					aOnce.Do(func() { close(aWriting) })
					<-release
				} else if d != "" {
					data = append(data, d)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if afterA && len(data) > 0 {
				batches = append(batches, data)
			}
			afterA = afterA || len(w.Entries) > 0 && string(w.Entries[0].GetData()) == "a"
		}}
	}
	t.Cleanup(func() { testWrapStorage = nil })
	sm := newLogSM()
	node, err := Start(Config{ID: 1, DataDir: t.TempDir(), TickInterval: 10 * time.Millisecond, Logger: testLogger(t)}, sm)
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Stop() })
	ctx := testCtx(t)
	require.Eventually(t, node.IsLeader, testTimeout, 5*time.Millisecond)

	errc := make(chan error, n+1)
	go func() { errc <- node.Propose(ctx, []byte("a")) }()
	<-aWriting
	queued := make(chan struct{})
	go func() { // one caller, proposing back to back while a's write is held
		defer close(queued)
		for i := range n {
			if err := node.ProposeAsync(ctx, time.Time{}, []byte("b"+string(rune('0'+i))), DoneFunc(func(err error) { errc <- err })); err != nil {
				errc <- err
			}
		}
	}()
	select {
	case <-queued:
	case <-time.After(testTimeout):
		close(release)
		t.Fatal("ProposeAsync waited for the loop's write")
	}
	close(release)
	for range n + 1 {
		require.NoError(t, <-errc)
	}
	sm.waitCount(t, n+1)
	mu.Lock()
	defer mu.Unlock()
	want := make([]string, n)
	for i := range want {
		want[i] = "b" + string(rune('0'+i))
	}
	require.Equal(t, [][]string{want}, batches, "the queued proposals, in order, in the write after a's")
}

// TestProposeAsyncDeadline: a ProposeAsync whose deadline passed before the
// loop reached it is not handed to raft and its done gets
// context.DeadlineExceeded, as with a ctx of that deadline; one with a
// later deadline, or none, is proposed.
func TestProposeAsyncDeadline(t *testing.T) {
	sm := newLogSM()
	node := startLeader(t, sm)
	ctx := testCtx(t)
	for _, tt := range []struct {
		data     string
		deadline time.Time
		want     error
	}{
		{"late", time.Now().Add(-time.Millisecond), context.DeadlineExceeded},
		{"in time", time.Now().Add(time.Hour), nil},
		{"no deadline", time.Time{}, nil},
	} {
		errc := make(chan error, 1)
		require.NoError(t, node.ProposeAsync(ctx, tt.deadline, []byte(tt.data), DoneFunc(func(err error) { errc <- err })))
		select {
		case err := <-errc:
			require.ErrorIs(t, err, tt.want, tt.data)
			if tt.want == nil {
				require.NoError(t, err, tt.data)
			}
		case <-time.After(testTimeout):
			t.Fatalf("%s: done not called", tt.data)
		}
	}
	sm.waitCount(t, 2)
	require.Equal(t, []string{"in time", "no deadline"}, sm.state().datas)
}
