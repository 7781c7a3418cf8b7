package server

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// legacySnapshot is the encoder FreezeSnapshot had before it streamed: the
// whole payload built in one buffer of the exact size. It is the reference
// the streamed encoding must equal byte for byte (and what the allocation
// figures compare with).
func legacySnapshot(sm *stateMachine) ([]byte, error) {
	sm.mu.RLock()
	tree := sm.tree.Freeze()
	var sessions bytes.Buffer
	if err := sm.sessions.WriteSnapshot(&sessions); err != nil {
		sm.mu.RUnlock()
		tree.Release()
		return nil, err
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
	sm.mu.RUnlock()
	defer tree.Release()
	treeLen, err := tree.SnapshotSize()
	if err != nil {
		return nil, err
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
		return nil, err
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
}

// pieceWriter keeps what is written to it and counts the writes; it is not
// a *bytes.Buffer (which the encoder grows to the size first).
type pieceWriter struct {
	b      []byte
	writes int
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.writes++
	w.b = append(w.b, p...)
	return len(p), nil
}

// countWriter counts and drops what is written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// fillSM gives sm nodes znodes of value under /n, sessions with write
// order and, if delayed, pending lock-delay deletions.
func fillSM(t *testing.T, sm *testSM, nodes int, value []byte, delayed bool) {
	t.Helper()
	for id := int64(1); id <= 5; id++ {
		sm.createSession(id*7919%97, uint64(id))
	}
	sm.createSession(7, 1)
	createOpenNodes(t, sm, nodes, value, 10)
	if delayed {
		// Dead sessions with pending lock-delay deletions, in no order.
		for _, id := range []int64{1001, 55, 4242, 9} {
			sm.delayed[id] = 1_700_000_000_000 + id
		}
	}
}

// The streamed encoding (FreezeSnapshot's function writing to a plain
// io.Writer, and Snapshot through a bytes.Buffer) is byte for byte what
// the in-memory encoder wrote for the same state, with and without the
// lock-delay section, and restores.
func TestFreezeSnapshotStreamsTheOldEncoding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   int
		delayed bool
	}{
		{"empty tree", 0, false},
		{"tree and sessions", 3000, false},
		{"tree, sessions and lock-delay", 3000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := newTestSM(t)
			fillSM(t, sm, tc.nodes, bytes.Repeat([]byte("v"), 100), tc.delayed)
			want, err := legacySnapshot(sm.stateMachine)
			require.NoError(t, err)
			if tc.delayed {
				require.Equal(t, snapshotMagicDelayed, string(want[:len(snapshotMagicDelayed)]))
			}

			write, err := sm.FreezeSnapshot()
			require.NoError(t, err)
			var pw pieceWriter
			require.NoError(t, write(&pw))
			require.True(t, bytes.Equal(want, pw.b), "streamed %d bytes differ from the %d of the in-memory encoding", len(pw.b), len(want))
			require.Greater(t, pw.writes, 1, "streamed in pieces")

			got, err := sm.Snapshot()
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "Snapshot differs from the in-memory encoding")

			restored := newTestSM(t)
			require.NoError(t, restored.Restore(sm.index, pw.b))
			again, err := restored.Snapshot()
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, again), "the restored state snapshots differently")
		})
	}
}

// A frozen state streamed to a writer allocates fixed buffers only, not
// the payload: at 100k znodes of 100 bytes (a payload of about 21 MB) the
// in-memory encoder allocated the payload once (more than twice with a
// lock-delay section: its buffer was 8 bytes short, so the last append
// copied the whole payload); the streaming one allocates a few hundred KB
// whatever the size (the tree encoder's buffers and the small sections).
func TestFreezeSnapshotStreamAllocatesLittle(t *testing.T) {
	if testing.Short() || checksEveryWrite {
		t.Skip("builds 100k znodes write by write (quadratic under -tags invariants)")
	}
	measure := allocatedBy
	for _, delayed := range []bool{false, true} {
		t.Run(fmt.Sprintf("lock-delay section %v", delayed), func(t *testing.T) {
			sm := newTestSM(t)
			const nodes = 100_000
			fillSM(t, sm, nodes, make([]byte, 100), delayed)
			var legacy []byte
			legacyAlloc := measure(func() { // with its freeze: 8 bytes a node
				var err error
				legacy, err = legacySnapshot(sm.stateMachine)
				require.NoError(t, err)
			})
			write, err := sm.FreezeSnapshot() // on the raft loop: not the job's
			require.NoError(t, err)
			var cw countWriter
			streamAlloc := measure(func() { require.NoError(t, write(&cw)) })
			require.Equal(t, int64(len(legacy)), cw.n)
			t.Logf("payload %d bytes: in-memory encoder allocated %d bytes, streaming encoder %d bytes", cw.n, legacyAlloc, streamAlloc)
			require.LessOrEqual(t, streamAlloc, uint64(snapshotStreamBytes),
				"streaming a %d-byte snapshot allocated %d bytes", cw.n, streamAlloc)
		})
	}
}
