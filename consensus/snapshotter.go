package consensus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Local snapshots are taken off the loop goroutine.
//
// The loop decides when a snapshot is due (maybeSnapshot) and, between two
// Applies, asks the state machine for a frozen view of its state at the
// applied index I (SnapshotFreezer.FreezeSnapshot: a cheap copy), together
// with I's term and the ConfState as of I. The snapshotter goroutine, owned
// by the node and stopped and waited for before storage is closed,
// serializes the view, writes and fsyncs the snapshot file, records its
// metadata and compacts the log below I-KeepEntries in one bbolt
// transaction, then installs the snapshot in raft's MemoryStorage. At most
// one local snapshot is in flight; the loop learns that it finished through
// snapDoneC.
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
// returns is then run on another goroutine, concurrently with later Apply
// calls, and must return what Snapshot would have returned at the time of
// FreezeSnapshot. A StateMachine without it is snapshotted on the loop
// (Snapshot), and only the file writing happens off the loop.
type SnapshotFreezer interface {
	FreezeSnapshot() (func() ([]byte, error), error)
}

// snapJob is one local snapshot handed from the loop to the snapshotter.
type snapJob struct {
	index, term uint64
	confState   *pb.ConfState
	serialize   func() ([]byte, error)
}

// snapshotter owns the goroutine that writes local snapshots.
type snapshotter struct {
	jobs  chan snapJob  // capacity 1; the loop sends only when none is in flight
	doneC chan error    // capacity 1; one result per job, read by the loop
	stopc chan struct{} // closed by stop
	wg    sync.WaitGroup
	// inflight is owned by the loop: a job was sent and its result not read.
	inflight bool
	// mu orders recording a local snapshot against the loop recording one
	// received from the leader.
	mu sync.Mutex
}

func (s *snapshotter) init() {
	s.jobs = make(chan snapJob, 1)
	s.doneC = make(chan error, 1)
	s.stopc = make(chan struct{})
}

// start launches the goroutine.
func (n *Node) startSnapshotter() {
	n.snaps.wg.Add(1)
	go func() {
		defer n.snaps.wg.Done()
		for {
			select {
			case <-n.snaps.stopc:
				return
			case job := <-n.snaps.jobs:
				err := n.writeSnapshot(job)
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

// writeSnapshot runs on the snapshotter goroutine.
func (n *Node) writeSnapshot(job snapJob) error {
	data, err := job.serialize()
	if err != nil {
		return fmt.Errorf("state machine snapshot at index %d: %w", job.index, err)
	}
	if err := writeSnapFile(n.store.snapDir, job.term, job.index, data); err != nil {
		return fmt.Errorf("save snapshot at index %d: %w", job.index, err)
	}
	n.snaps.mu.Lock()
	defer n.snaps.mu.Unlock()
	if job.index <= n.snapIndex.Load() {
		// The leader's snapshot, recorded meanwhile, is newer.
		_ = os.Remove(filepath.Join(n.store.snapDir, snapFileName(job.term, job.index)))
		return nil
	}
	var compactBelow uint64
	if job.index > n.cfg.KeepEntries {
		compactBelow = job.index - n.cfg.KeepEntries
	}
	w := writeBatch{
		snapshot:     &pb.SnapshotMetadata{Index: new(job.index), Term: new(job.term), ConfState: job.confState},
		compactBelow: compactBelow,
	}
	if err := n.store.write(&w); err != nil {
		return err
	}
	if _, err := n.mem.CreateSnapshot(job.index, job.confState, data); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
		return fmt.Errorf("create snapshot in raft storage: %w", err)
	}
	if first, _ := n.mem.FirstIndex(); compactBelow >= first {
		if err := n.mem.Compact(compactBelow); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("compact raft storage below %d: %w", compactBelow, err)
		}
	}
	n.snapIndex.Store(job.index)
	if err := pruneSnapFiles(n.store.snapDir); err != nil {
		return err
	}
	n.lg.Debug().Uint64("index", job.index).Uint64("term", job.term).Int("bytes", len(data)).
		Uint64("compact_below", compactBelow).Msg("snapshot taken")
	return nil
}

// maybeSnapshot runs on the loop: once SnapshotEvery entries were applied
// since the last snapshot (or a conf change asks for one), it freezes the
// state machine and hands the snapshot to the snapshotter, unless one is in
// flight already.
func (n *Node) maybeSnapshot() error {
	applied := n.applied.get()
	last := n.snapIndex.Load()
	if n.snaps.inflight || applied <= last || (applied-last < n.cfg.SnapshotEvery && !n.snapAfterConfChange) {
		return nil
	}
	term, err := n.mem.Term(applied)
	if err != nil {
		return fmt.Errorf("term of applied index %d: %w", applied, err)
	}
	var serialize func() ([]byte, error)
	if f, ok := n.sm.(SnapshotFreezer); ok {
		if serialize, err = f.FreezeSnapshot(); err != nil {
			return fmt.Errorf("freeze state machine at index %d: %w", applied, err)
		}
	} else {
		data, err := n.sm.Snapshot()
		if err != nil {
			return fmt.Errorf("state machine snapshot at index %d: %w", applied, err)
		}
		serialize = func() ([]byte, error) { return data, nil }
	}
	n.snapAfterConfChange = false
	n.snaps.inflight = true
	n.snaps.jobs <- snapJob{index: applied, term: term, confState: n.confState.Load(), serialize: serialize}
	return nil
}

// snapshotDone runs on the loop when the snapshotter finished a job.
func (n *Node) snapshotDone(err error) error {
	n.snaps.inflight = false
	if err != nil {
		return err
	}
	// A conf change may have asked for a snapshot while this one was being
	// written.
	return n.maybeSnapshot()
}
