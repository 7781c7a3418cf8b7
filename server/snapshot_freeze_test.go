package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// A frozen snapshot, serialized after more entries were applied, is
// byte-for-byte the snapshot of the state when it was frozen, and restores.
func TestFreezeSnapshotMatchesSnapshot(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	for i := range 20 {
		require.Zero(t, sm.apply(create(fmt.Sprintf("/n%d", i), 1, uint64(i+1))).Err)
	}
	want, err := sm.Snapshot()
	require.NoError(t, err)
	serialize, err := sm.FreezeSnapshot()
	require.NoError(t, err)

	sm.createSession(8, 2)
	for i := range 20 {
		require.Zero(t, sm.apply(create(fmt.Sprintf("/m%d", i), 1, uint64(21+i))).Err)
	}
	var buf bytes.Buffer
	require.NoError(t, serialize(&buf))
	got := buf.Bytes()
	require.Equal(t, want, got)

	restored := newTestSM(t)
	require.NoError(t, restored.Restore(21, got))
	_, _, ok := restored.tree.GetData("/n19")
	require.True(t, ok, "nodes of then restored")
	_, _, ok = restored.tree.GetData("/m0")
	require.False(t, ok, "nodes created after the freeze are not in it")
}

// The frozen state is serialized on another goroutine while later entries
// change, delete and recreate the frozen nodes (as the snapshotter does):
// the bytes are the snapshot at the freeze, and the race detector (go test
// -race) sees the copy-on-write tree's protocol.
func TestFreezeSnapshotSerializesWhileApplying(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	seq := uint64(0)
	write := func(op int32, body jute.Record) {
		seq++
		r := sm.apply(&entry{Type: op, SessionID: 7, ConnID: 1, Seq: seq, Body: jute.Marshal(body)})
		require.Zero(t, r.Err, "op %d", op)
	}
	openACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	const nodes = 2000
	for i := range nodes {
		write(jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: []byte("v0"), ACL: openACL})
	}
	want, err := sm.Snapshot()
	require.NoError(t, err)
	serialize, err := sm.FreezeSnapshot()
	require.NoError(t, err)
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		err := serialize(&buf)
		done <- result{buf.Bytes(), err}
	}()
	for i := range nodes {
		p := fmt.Sprintf("/n%d", i)
		write(jute.OpSetData, &jute.SetDataRequest{Path: p, Data: []byte("v1"), Version: -1})
		if i%2 == 0 {
			write(jute.OpDelete, &jute.DeleteRequest{Path: p, Version: -1})
			write(jute.OpCreate, &jute.CreateRequest{Path: p, Data: []byte("v2"), ACL: openACL})
		}
	}
	r := <-done
	require.NoError(t, r.err)
	require.True(t, bytes.Equal(want, r.b), "the serialized state differs from the state at the freeze")
}

// Serializing a frozen state into memory (a bytes.Buffer, as Snapshot and
// backups do) allocates about the payload once: the encoder grows the
// buffer to the exact size first, not by doubling (about three times the
// payload, hundreds of MB of transient heap at a million znodes), also with
// a lock-delay section (the in-memory encoder's buffer was 8 bytes short
// of it, and its last append copied the whole payload). Allowed beyond the
// payload: the per-node pointer slice of the sort (8 bytes a node) and
// fixed buffers.
func TestFreezeSnapshotAllocatesThePayloadOnce(t *testing.T) {
	if checksEveryWrite {
		t.Skip("builds 20k znodes write by write: quadratic under -tags invariants")
	}
	for _, delayed := range []bool{false, true} {
		t.Run(fmt.Sprintf("lock-delay section %v", delayed), func(t *testing.T) {
			sm := newTestSM(t)
			sm.createSession(7, 1)
			const nodes = 20000
			createOpenNodes(t, sm, nodes, make([]byte, 100), 0)
			if delayed {
				sm.delayed[99] = 12345
			}
			serialize, err := sm.FreezeSnapshot()
			require.NoError(t, err)
			var buf bytes.Buffer
			allocated := allocatedBy(func() { err = serialize(&buf) })
			require.NoError(t, err)
			out := buf.Bytes()
			limit := uint64(len(out)) + 8*nodes + 256<<10
			require.LessOrEqual(t, allocated, limit, "allocated %d bytes for a %d-byte snapshot", allocated, len(out))
		})
	}
}

// Restore reads the tree section in place: it allocates what decoding the
// tree allocates, not also a copy of the section (most of a snapshot).
func TestRestoreDoesNotCopyTheTreeSection(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	const nodes = 5000
	createOpenNodes(t, sm, nodes, make([]byte, 100), 0)
	snap, err := sm.Snapshot()
	require.NoError(t, err)
	treeLen := int(binary.BigEndian.Uint64(snap[len(snapshotMagic)+8:]))
	section := snap[len(snapshotMagic)+16 : len(snapshotMagic)+16+treeLen]
	allocated := allocatedBy
	decode := allocated(func() {
		_, err := znode.ReadSnapshot(bytes.NewReader(section), znode.Options{})
		require.NoError(t, err)
	})
	restored := newTestSM(t)
	restore := allocated(func() { require.NoError(t, restored.Restore(uint64(nodes+1), snap)) })
	require.Less(t, restore, decode+uint64(treeLen)/2, "Restore allocated %d bytes, decoding the tree %d, the section is %d", restore, decode, treeLen)
}

// createOpenNodes creates /n0../n<n-1> with value and world:anyone, by
// session 1's client; every ephemeralEvery-th one (from the fourth) is an
// ephemeral of session 7 if ephemeralEvery > 0.
func createOpenNodes(t *testing.T, sm *testSM, n int, value []byte, ephemeralEvery int) {
	t.Helper()
	openACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	for i := range n {
		w := create(fmt.Sprintf("/n%d", i), 1, uint64(i+1))
		req := &jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: value, ACL: openACL}
		if ephemeralEvery > 0 && i%ephemeralEvery == 3 {
			req.Flags = jute.FlagEphemeral // of session 7
		}
		w.Body = jute.Marshal(req)
		require.Zero(t, sm.apply(w).Err)
	}
}

// allocatedBy returns the bytes f allocated (after a GC first).
func allocatedBy(f func()) uint64 {
	_, bytes := allocationsBy(f)
	return bytes
}

// allocationsBy returns the heap objects and bytes f allocated (after a GC
// first), as the process's MemStats count them.
func allocationsBy(f func()) (objects, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}
