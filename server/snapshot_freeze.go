package server

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zkraft/zkraft/consensus"
)

var _ consensus.SnapshotFreezer = (*stateMachine)(nil)

// FreezeSnapshot implements consensus.SnapshotFreezer. On the raft loop it
// takes what a snapshot needs: the tree's copy-on-write freeze (a pointer
// per node; the tree saves a node's old meta for it when a later entry
// changes the node, until the returned function ends; see znode.Frozen),
// the session table (already serialized: it is small), the
// write order per session and the pending lock-delay deletions. The returned
// function builds the snapshot's bytes as of this point, off the loop, while
// later entries are applied; Snapshot is the two steps at once, so there is
// one encoding.
func (sm *stateMachine) FreezeSnapshot() (func() ([]byte, error), error) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	return sm.freezeLocked()
}

// freezeLocked is FreezeSnapshot with sm.mu held (read or write).
func (sm *stateMachine) freezeLocked() (func() ([]byte, error), error) {
	tree := sm.tree.Freeze()
	var sessions bytes.Buffer
	if err := sm.sessions.WriteSnapshot(&sessions); err != nil {
		tree.Release()
		return nil, fmt.Errorf("snapshot sessions: %w", err)
	}
	zxid := uint64(sm.lastZxid.Load())
	type orderRec struct {
		id int64
		o  connOrder
	}
	order := make([]orderRec, 0, len(sm.order))
	for id, o := range sm.order {
		order = append(order, orderRec{id, o})
	}
	type delayedRec struct{ id, deadline int64 }
	delayed := make([]delayedRec, 0, len(sm.delayed))
	for id, d := range sm.delayed {
		delayed = append(delayed, delayedRec{id, d})
	}
	return func() ([]byte, error) {
		// One buffer of the exact size, the tree encoded straight into it:
		// no growing buffer and no copy of the tree's encoding, the bulk
		// of the snapshot (transient memory at a million znodes: the
		// payload once instead of about three times).
		// The tree's copy-on-write freeze ends here, written or not.
		defer tree.Release()
		treeLen, err := tree.SnapshotSize()
		if err != nil {
			return nil, fmt.Errorf("snapshot tree: %w", err)
		}
		out := make([]byte, 0, len(snapshotMagic)+24+treeLen+sessions.Len()+24*len(order)+8+16*len(delayed))
		if len(delayed) == 0 {
			out = append(out, snapshotMagic...)
		} else {
			out = append(out, snapshotMagicDelayed...)
		}
		out = binary.BigEndian.AppendUint64(out, zxid)
		out = binary.BigEndian.AppendUint64(out, uint64(treeLen))
		tb := bytes.NewBuffer(out)
		if err := tree.WriteSnapshot(tb); err != nil {
			return nil, fmt.Errorf("snapshot tree: %w", err)
		}
		if got := tb.Len() - len(out); got != treeLen {
			return nil, fmt.Errorf("snapshot tree: %d bytes written, %d announced", got, treeLen)
		}
		out = tb.Bytes()
		slices.SortFunc(order, func(a, b orderRec) int { return cmp.Compare(a.id, b.id) })
		out = binary.BigEndian.AppendUint64(out, uint64(sessions.Len()))
		out = append(out, sessions.Bytes()...)
		out = binary.BigEndian.AppendUint64(out, uint64(len(order)))
		for _, r := range order {
			out = binary.BigEndian.AppendUint64(out, uint64(r.id))
			out = binary.BigEndian.AppendUint64(out, r.o.ConnID)
			out = binary.BigEndian.AppendUint64(out, r.o.Seq)
		}
		if len(delayed) > 0 {
			slices.SortFunc(delayed, func(a, b delayedRec) int { return cmp.Compare(a.id, b.id) })
			out = binary.BigEndian.AppendUint64(out, uint64(len(delayed)))
			for _, r := range delayed {
				out = binary.BigEndian.AppendUint64(out, uint64(r.id))
				out = binary.BigEndian.AppendUint64(out, uint64(r.deadline))
			}
		}
		return out, nil
	}, nil
}
