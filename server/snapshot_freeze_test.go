package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
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
	got, err := serialize()
	require.NoError(t, err)
	require.Equal(t, want, got)

	restored := newTestSM(t)
	require.NoError(t, restored.Restore(21, got))
	_, _, ok := restored.tree.GetData("/n19")
	require.True(t, ok, "nodes of then restored")
	_, _, ok = restored.tree.GetData("/m0")
	require.False(t, ok, "nodes created after the freeze are not in it")
}
