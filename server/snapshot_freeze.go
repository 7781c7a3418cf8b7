package server

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/znode"
)

var _ consensus.SnapshotFreezer = (*stateMachine)(nil)

// FreezeSnapshot implements consensus.SnapshotFreezer. On the raft loop it
// takes what a snapshot needs: the tree's copy-on-write freeze (a pointer
// per node; the tree saves a node's old meta for it when a later entry
// changes the node, until the returned function ends; see znode.Frozen),
// the session table (already serialized: it is small), the
// write order per session and the pending lock-delay deletions. The returned
// function writes the snapshot's bytes as of this point to a writer, off
// the loop, while later entries are applied; a local snapshot streams them
// into its file. Snapshot is the two steps at once into memory, so there is
// one encoding.
func (sm *stateMachine) FreezeSnapshot() (func(io.Writer) error, error) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	return sm.freezeLocked()
}

// freezeLocked is FreezeSnapshot with sm.mu held (read or write).
func (sm *stateMachine) freezeLocked() (func(io.Writer) error, error) {
	tree := sm.tree.Freeze()
	var sessions bytes.Buffer
	if err := sm.sessions.WriteSnapshot(&sessions); err != nil {
		tree.Release()
		return nil, fmt.Errorf("snapshot sessions: %w", err)
	}
	zxid := uint64(sm.lastZxid.Load())
	order := make([]orderRec, 0, len(sm.order))
	for id, o := range sm.order {
		order = append(order, orderRec{id, o})
	}
	delayed := make([]delayedRec, 0, len(sm.delayed))
	for id, d := range sm.delayed {
		delayed = append(delayed, delayedRec{id, d})
	}
	return func(w io.Writer) error {
		// The tree's copy-on-write freeze ends here, written or not.
		defer tree.Release()
		return writeFrozenState(w, tree, zxid, sessions.Bytes(), order, delayed)
	}, nil
}

type orderRec struct {
	id int64
	o  connOrder
}

type delayedRec struct{ id, deadline int64 }

// writeFrozenState writes the snapshot of a frozen state to w, streaming:
// besides small fixed buffers it allocates nothing that grows with the tree
// (the tree's encoding, the bulk of the snapshot, goes to w in pieces).
//
// The tree section's length precedes it, so it is taken first
// (tree.SnapshotSize: recorded at the freeze from the sums the tree keeps,
// no pass over the nodes) rather than patched afterwards: w need only be
// an io.Writer, and the snapshot file's CRC32C, computed as the bytes go
// by, covers the length. Should the two ever differ, the write fails
// below rather than leave a snapshot that does not restore.
// If w is a *bytes.Buffer (Snapshot, backups) it is grown to the exact size
// first, so that the payload is allocated once.
func writeFrozenState(w io.Writer, tree *znode.Frozen, zxid uint64, sessions []byte, order []orderRec, delayed []delayedRec) error {
	treeLen, err := tree.SnapshotSize()
	if err != nil {
		return fmt.Errorf("snapshot tree: %w", err)
	}
	slices.SortFunc(order, func(a, b orderRec) int { return cmp.Compare(a.id, b.id) })
	slices.SortFunc(delayed, func(a, b delayedRec) int { return cmp.Compare(a.id, b.id) })
	tailLen := 8 + 24*len(order)
	if len(delayed) > 0 {
		tailLen += 8 + 16*len(delayed)
	}
	if b, ok := w.(*bytes.Buffer); ok {
		growExact(b, len(snapshotMagic)+16+treeLen+8+len(sessions)+tailLen)
	}

	head := make([]byte, 0, len(snapshotMagic)+16)
	if len(delayed) == 0 {
		head = append(head, snapshotMagic...)
	} else {
		head = append(head, snapshotMagicDelayed...)
	}
	head = binary.BigEndian.AppendUint64(head, zxid)
	head = binary.BigEndian.AppendUint64(head, uint64(treeLen))
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("snapshot header: %w", err)
	}
	cw := countingWriter{w: w}
	if err := tree.WriteSnapshot(&cw); err != nil {
		return fmt.Errorf("snapshot tree: %w", err)
	}
	if cw.n != int64(treeLen) {
		// The announced length is already written: the snapshot would not
		// restore.
		return fmt.Errorf("snapshot tree: %d bytes written, %d announced", cw.n, treeLen)
	}
	if _, err := w.Write(binary.BigEndian.AppendUint64(nil, uint64(len(sessions)))); err != nil {
		return fmt.Errorf("snapshot sessions: %w", err)
	}
	if _, err := w.Write(sessions); err != nil {
		return fmt.Errorf("snapshot sessions: %w", err)
	}
	tail := make([]byte, 0, tailLen)
	tail = binary.BigEndian.AppendUint64(tail, uint64(len(order)))
	for _, r := range order {
		tail = binary.BigEndian.AppendUint64(tail, uint64(r.id))
		tail = binary.BigEndian.AppendUint64(tail, r.o.ConnID)
		tail = binary.BigEndian.AppendUint64(tail, r.o.Seq)
	}
	if len(delayed) > 0 {
		tail = binary.BigEndian.AppendUint64(tail, uint64(len(delayed)))
		for _, r := range delayed {
			tail = binary.BigEndian.AppendUint64(tail, uint64(r.id))
			tail = binary.BigEndian.AppendUint64(tail, uint64(r.deadline))
		}
	}
	if _, err := w.Write(tail); err != nil {
		return fmt.Errorf("snapshot write order: %w", err)
	}
	return nil
}

// countingWriter counts what it passes on to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// growExact makes room for n more bytes in b with one allocation of n when
// b is empty (bytes.Buffer.Grow allocates through append(nil, make(n)...),
// which a -race build does not fuse: the payload twice).
func growExact(b *bytes.Buffer, n int) {
	if b.Available() >= n {
		return
	}
	if b.Len() == 0 {
		*b = *bytes.NewBuffer(make([]byte, 0, n))
		return
	}
	b.Grow(n)
}
