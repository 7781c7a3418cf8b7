package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Local snapshots are taken off the loop goroutine.
//
// The Core decides when a snapshot is due (maybeSnapshot) and, between two
// Applies, asks the state machine for a frozen view of its state at the
// applied index I (SnapshotFreezer.FreezeSnapshot: a cheap copy), together
// with I's term and the ConfState as of I, and hands it out as a
// SnapshotJob. Node runs the job on its snapshotter goroutine, owned by the
// node and stopped and waited for before storage is closed (the simulator
// runs it inline): it serializes the view straight into the snapshot file
// (Storage.SaveSnapshotFrom: the payload is streamed, never whole in
// memory), fsyncs it, records its metadata and compacts the log below I-KeepEntries in one
// Storage.Write (bbolt, then WAL segments deleted), then installs the snapshot in raft's MemoryStorage. At
// most one local snapshot is in flight; the loop learns that it finished
// through the snapshotter's doneC and tells the Core (SnapshotDone).
//
// Invariants:
//   - A local snapshot is recorded only if it is newer than the recorded
//     one: a snapshot from the leader, recorded by the loop meanwhile, wins
//     (snapMu orders the two).
//   - A recorded snapshot may be ahead of the durable HardState's commit
//     index (the commit index is written lazily); Start then raises the
//     commit index to the snapshot's, which only holds committed entries.
//   - A failed local snapshot is fatal to the node, like every storage
//     error.

// SnapshotFreezer may be implemented by a StateMachine so that snapshots
// are serialized off the raft loop. FreezeSnapshot is called on the loop
// goroutine between Apply calls and must return quickly; the function it
// returns is then run once on another goroutine, concurrently with later
// Apply calls, and must write to w exactly what Snapshot would have
// returned at the time of FreezeSnapshot (a local snapshot streams it into
// the snapshot file, so it need never be whole in memory), returning w's
// first error. A StateMachine without it is snapshotted on the loop
// (Snapshot), and only the file writing happens off the loop.
type SnapshotFreezer interface {
	FreezeSnapshot() (func(w io.Writer) error, error)
}

// Collect runs a SnapshotFreezer's function into memory and returns what
// it wrote (a *bytes.Buffer, which an encoder may size up front): for the
// callers that need the payload whole (StateMachine.Snapshot, backups, the
// simulator's and tests' in-memory storages).
func Collect(write func(io.Writer) error) ([]byte, error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeBytes is a SnapshotFreezer's function for a payload already made.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// SnapshotJob is one local snapshot the Core decided to take: the state
// machine frozen at the applied index. Its owner runs Run exactly once,
// anywhere (Node: on the snapshotter goroutine, concurrently with later
// Readys; the simulator: inline), then hands Run's result to
// Core.SnapshotDone on the core's goroutine. Until then the Core decides no
// other local snapshot.
type SnapshotJob struct {
	c           *Core
	index, term uint64
	confState   *pb.ConfState
	serialize   func(io.Writer) error
	// compactMax caps CompactBelow: the Core's raftApplying when the job
	// was decided. index may be above it (applyMirrored applies ahead of
	// raft), and raft still reads the entries after raftApplying.
	compactMax uint64
}

// Index is the raft index the snapshot is taken at.
func (j *SnapshotJob) Index() uint64 { return j.index }

// Run serializes the frozen state straight into the payload's storage
// (Storage.SaveSnapshotFrom: a file, never the whole payload in memory),
// which makes it durable, then records
// its metadata and compacts the log below min(index-KeepEntries, the
// index raft was applying when the job was decided) in one
// Storage.Write, installs it in raft's MemoryStorage and prunes old
// payloads. A snapshot from the leader recorded meanwhile wins.
func (j *SnapshotJob) Run() error {
	c := j.c
	size, err := c.store.SaveSnapshotFrom(j.term, j.index, j.serialize)
	if err != nil {
		return fmt.Errorf("save snapshot at index %d: %w", j.index, err)
	}
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if j.index <= c.snapIndex.Load() {
		// The leader's snapshot, recorded meanwhile, is newer.
		_ = c.store.DeleteSnapshot(j.term, j.index)
		return nil
	}
	var compactBelow uint64
	if j.index > c.cfg.KeepEntries {
		compactBelow = j.index - c.cfg.KeepEntries
	}
	compactBelow = min(compactBelow, j.compactMax)
	w := WriteBatch{
		Snapshot:     snapshotMeta(j.index, j.term, j.confState),
		CompactBelow: compactBelow,
	}
	if err := c.store.Write(&w); err != nil {
		return err
	}
	// Without the payload, which raftStorage reads from the file.
	if _, err := c.mem.CreateSnapshot(j.index, j.confState, nil); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) { // raftStorage.Snapshot moves its conf index
		return fmt.Errorf("create snapshot in raft storage: %w", err)
	}
	if first, _ := c.mem.FirstIndex(); compactBelow >= first {
		if err := c.mem.Compact(compactBelow); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("compact raft storage below %d: %w", compactBelow, err)
		}
	}
	c.snapIndex.Store(j.index)
	c.snapsTaken.Add(1)
	if err := c.store.PruneSnapshots(); err != nil {
		return err
	}
	c.lg.Debug().Uint64("index", j.index).Uint64("term", j.term).Int64("bytes", size).
		Uint64("compact_below", compactBelow).Msg("snapshot taken")
	return nil
}

// snapshotter owns the goroutine that runs a Node's SnapshotJobs.
type snapshotter struct {
	jobs  chan *SnapshotJob // capacity 1; the loop sends only when none is in flight
	doneC chan error        // capacity 1; one result per job, read by the loop
	stopc chan struct{}     // closed by stop
	wg    sync.WaitGroup
}

func (s *snapshotter) init() {
	s.jobs = make(chan *SnapshotJob, 1)
	s.doneC = make(chan error, 1)
	s.stopc = make(chan struct{})
}

// startSnapshotter launches the goroutine.
func (n *Node) startSnapshotter() {
	n.snaps.wg.Add(1)
	go func() {
		defer n.snaps.wg.Done()
		for {
			select {
			case <-n.snaps.stopc:
				return
			case job := <-n.snaps.jobs:
				err := job.Run()
				select {
				case n.snaps.doneC <- err:
				case <-n.snaps.stopc:
					return
				}
			}
		}
	}()
}

// stopSnapshotter stops the goroutine and waits for it (a snapshot being
// written is finished first).
func (n *Node) stopSnapshotter() {
	close(n.snaps.stopc)
	n.snaps.wg.Wait()
}

// maybeSnapshot runs on the core's goroutine: once SnapshotEvery entries
// were applied since the last snapshot (or a conf change or RequestSnapshot
// asks for one), it freezes the state machine and keeps the job for
// SnapshotJob, unless one is in flight already.
func (c *Core) maybeSnapshot() error {
	applied := c.applied.get()
	last := c.snapIndex.Load()
	if c.snapInflight || applied <= last || (applied-last < c.snapshotThreshold(last) && !c.snapNow) {
		return nil
	}
	term, err := c.mem.Term(applied)
	if err != nil {
		return fmt.Errorf("term of applied index %d: %w", applied, err)
	}
	var serialize func(io.Writer) error
	if f, ok := c.sm.(SnapshotFreezer); ok {
		if serialize, err = f.FreezeSnapshot(); err != nil {
			return fmt.Errorf("freeze state machine at index %d: %w", applied, err)
		}
	} else {
		data, err := c.sm.Snapshot()
		if err != nil {
			return fmt.Errorf("state machine snapshot at index %d: %w", applied, err)
		}
		serialize = writeBytes(data)
	}
	c.snapNow = false
	c.snapInflight = true
	c.job = &SnapshotJob{c: c, index: applied, term: term, confState: c.confState.Load(), serialize: serialize, compactMax: c.raftApplying}
	return nil
}

// snapshotThreshold is how many entries applied after the snapshot at last
// make maybeSnapshot take the next one. On a member alone in its
// configuration it is SnapshotEvery. In a group it is between half of
// SnapshotEvery and all of it, a function of the member's id and last
// (deterministic, as the simulator needs), so that the members, which
// apply the same entries, do not all freeze, encode and write a snapshot
// at the same index: at once, they slow every quorum together (on hosts
// that share CPUs or a disk, as in tests and benchmarks, they also
// compete). ZooKeeper rolls snapCount/2 plus a random part of snapCount/2
// per server for the same reason.
func (c *Core) snapshotThreshold(last uint64) uint64 {
	every := c.cfg.SnapshotEvery
	cs := c.confState.Load()
	if every < 2 || cs == nil || len(cs.GetVoters())+len(cs.GetLearners())+len(cs.GetVotersOutgoing()) <= 1 {
		return every
	}
	half := every / 2
	return every - half + splitmix64(c.cfg.ID^(last*0x9e3779b97f4a7c15))%(half+1)
}

// splitmix64 is a fixed mixing function (SplitMix64's finalizer): an
// even spread of thresholds across members and snapshots.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// SnapshotJob returns the local snapshot the Core decided to take, once;
// nil if none. The owner must run it and report with SnapshotDone.
func (c *Core) SnapshotJob() *SnapshotJob {
	j := c.job
	c.job = nil
	return j
}

// RequestSnapshot asks for a local snapshot at the applied index as soon as
// none is in flight (at once if possible: then SnapshotJob returns it).
func (c *Core) RequestSnapshot() error {
	c.snapNow = true
	return c.maybeSnapshot()
}

// SnapshotDone takes the result of the last SnapshotJob's Run. A non-nil
// err is fatal and returned. A conf change may have asked for another
// snapshot meanwhile: SnapshotJob then returns it.
func (c *Core) SnapshotDone(err error) error {
	c.snapInflight = false
	if err != nil {
		return err
	}
	return c.maybeSnapshot()
}
