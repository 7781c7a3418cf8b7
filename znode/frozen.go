package znode

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Freezing is copy-on-write.
//
// Freeze collects pointers to the tree's nodes and registers a freezeState
// with the tree; it copies no node. From then on the apply goroutine, in
// Tree.save (through which every change to a node's meta goes, for the undo
// log already), copies the node's meta into the saved map of each active
// freezeState that has no copy of it yet, before the change. The encoder,
// on another goroutine, copies each frozen node's meta under the
// freezeState's mutex: the saved copy if there is one, else the live meta,
// which cannot change before the apply goroutine has stored a copy under
// that mutex. It copies the metas of up to metaBatch nodes per hold of the
// mutex (metasOf): a lock and a look-up per node were most of the cost of
// reading metas (a quarter of a local snapshot's CPU in a server's profile
// at 1 M znodes, SnapshotSize's pass, which read them too, included), and
// a batch bounds how long a save on the apply goroutine can wait for the
// encoder: metaBatch copies of a meta, nodes mostly out of cache (at 1 M
// znodes in path order, a median of 2 µs for 64, 7 for 256, with the same
// snapshot CPU: so 64).
//
// Invariants:
//   - Every write to a node's meta happens after save(n) returned, except
//     the writes that make a new node before it is inserted (verified by
//     the tests comparing a Frozen's bytes with a deep copy taken at
//     Freeze, under -race).
//   - For an active freeze and a node n in its list, either n.meta is as it
//     was at the freeze, or saved[n] holds that meta (the first copy is
//     kept: a later save of n does not replace it). A node created after
//     the freeze may get a copy too (not in the list, it is never read).
//   - A node's meta is not cleared by remove and nodes are never reused, so
//     a frozen node removed afterwards still holds its frozen meta (or has
//     a copy); a multi's rollback writes metas its own saves copied first.
//   - A meta's pd (path and data) and aclLists are never mutated in place,
//     so a meta copy shares them safely (an aclList's refs changes, but
//     only the apply goroutine reads it).
//   - The encoder's sort reads each frozen node's path without the mutex
//     (node.sortPath): every pd a node ever has starts with its path, and
//     pd is stored atomically (meta.setPD) once the node is in the tree.
//
// There is no per-node mark of "copied already": it would take 8 bytes a
// node (a node of 96 bytes would move to the 112-byte size class), while
// a freeze is active a save costs only a mutex and a map lookup more.
//
// Several freezes may be active at once (a local snapshot and a backup):
// each has its own saved map, and save copies into each. A Frozen is
// released by Release once written; one dropped without Release is released
// when the garbage collector finds it unreachable (runtime.AddCleanup), so
// an abandoned snapshot does not keep collecting copies.

// freezeState is the part of a Frozen the tree holds while it is active.
type freezeState struct {
	mu sync.Mutex
	// saved maps a frozen node changed since the freeze to its meta at
	// the freeze. Guarded by mu; nil once released. Pointers, not values:
	// the map then grows by moving 16-byte entries, not whole metas
	// (BenchmarkApplySetData/frozen=true: about 1.9 instead of 4 µs a
	// first save, 311 instead of 492 bytes).
	saved    map[*node]*meta
	released atomic.Bool // set under mu; read without it to prune
}

// release drops the saved copies; save stores none after it.
func (s *freezeState) release() {
	s.mu.Lock()
	s.saved = nil
	s.released.Store(true)
	s.mu.Unlock()
}

// metaBatch is the most nodes metasOf copies under one hold of the mutex
// (see above).
const metaBatch = 64

// metasOf sets out[i] to nodes[i]'s meta as of the freeze, for every i, or
// returns ErrReleased once the freeze was released (its saved copies are
// gone: the live meta may be later than the freeze). nodes must be frozen
// nodes, at most metaBatch of them, and out at least as long.
func (s *freezeState) metasOf(nodes []*node, out []meta) error {
	if len(nodes) > metaBatch {
		panic("znode: metasOf: batch too large")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released.Load() {
		return ErrReleased
	}
	out = out[:len(nodes)]
	if len(s.saved) == 0 {
		// Nothing changed since the freeze (or not yet): no look-ups.
		for i, n := range nodes {
			out[i] = n.meta
		}
		return nil
	}
	for i, n := range nodes {
		if m := s.saved[n]; m != nil {
			out[i] = *m
		} else {
			out[i] = n.meta
		}
	}
	return nil
}

// Frozen is a Tree's nodes as they were when Freeze took it, for writing a
// snapshot while the tree goes on changing. It may be used on any one
// goroutine, concurrently with the tree's writes.
type Frozen struct {
	st    *freezeState
	nodes []*node // every node at the freeze, unsorted until written
	size  int64   // the tree's snapshotSize at the freeze
}

// ErrReleased is returned for a Frozen used after Release.
var ErrReleased = errors.New("znode: frozen tree used after Release")

// Freeze takes a copy-on-write view of the tree: it collects a pointer per
// node and copies no node (see above). It must be called under the same
// lock as any other read (it may run together with reads, never with a
// write); Freeze calls are serialized internally. The caller should call
// Release once done with the Frozen.
func (t *Tree) Freeze() *Frozen {
	t.freezeMu.Lock()
	defer t.freezeMu.Unlock()
	t.pruneFreezes()
	st := &freezeState{saved: make(map[*node]*meta)}
	t.freezes = append(t.freezes, st)
	f := &Frozen{st: st, nodes: make([]*node, 0, t.nodes.len()), size: t.snapshotSize()}
	for n := range t.nodes.all() {
		f.nodes = append(f.nodes, n)
	}
	runtime.AddCleanup(f, (*freezeState).release, st)
	return f
}

// Release ends the freeze: the tree stops saving copies for it and those
// saved are dropped. The Frozen cannot be written afterwards. Releasing
// twice is harmless.
func (f *Frozen) Release() {
	f.st.release()
	f.nodes = nil
}

// pruneFreezes forgets released freezes. Called with the tree's write lock
// or freezeMu held (the latter under a read lock, which excludes writes).
func (t *Tree) pruneFreezes() {
	live := t.freezes[:0]
	for _, st := range t.freezes {
		if !st.released.Load() {
			live = append(live, st)
		}
	}
	clear(t.freezes[len(live):])
	t.freezes = live
}

// saveFrozen stores n's meta in every active freeze that has no copy of
// it yet, before the caller changes it, and forgets released freezes.
func (t *Tree) saveFrozen(n *node) {
	pruned := false
	for _, st := range t.freezes {
		st.mu.Lock()
		if st.saved == nil {
			pruned = true
		} else if _, ok := st.saved[n]; !ok {
			m := n.meta
			st.saved[n] = &m
		}
		st.mu.Unlock()
	}
	if pruned {
		t.pruneFreezes()
	}
}

// WriteSnapshot writes the frozen tree exactly as Tree.WriteSnapshot wrote
// the tree when it was frozen.
func (f *Frozen) WriteSnapshot(w io.Writer) error {
	if f.st.released.Load() {
		return ErrReleased
	}
	err := writeSnapshot(w, f.nodes, f.st)
	// f's cleanup releases the freeze once f is unreachable, which could
	// otherwise be as soon as its fields were loaded, before the encoding
	// ends.
	runtime.KeepAlive(f)
	return err
}

// SnapshotSize returns the exact number of bytes WriteSnapshot writes, so
// that a caller can encode into one buffer of the right size instead of a
// growing one (at a million znodes a snapshot is hundreds of MB, and each
// doubling of a buffer is a transient copy), or announce the length before
// the bytes. It costs no pass over the nodes: Freeze recorded the length
// the tree keeps up to date (Tree.snapshotSize, which Check verifies
// against the sum of the nodes' encoded sizes). It returns ErrReleased
// after Release.
func (f *Frozen) SnapshotSize() (int, error) {
	if f.st.released.Load() {
		return 0, ErrReleased
	}
	return int(f.size), nil
}
