package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestoreKeepsSnapshotZxid restores a snapshot whose last zxid Z is
// below the raft index I it was taken at (entries that are not client
// writes, such as conf changes and a new leader's empty entry, use raft
// indexes but no zxid). The restored member must report Z, like its peers,
// not I: a client that saw I would be refused by every other member.
func TestRestoreKeepsSnapshotZxid(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	require.Zero(t, sm.apply(create("/a", 1, 1)).Err)
	z := sm.lastZxid.Load()
	require.EqualValues(t, 2, z)
	snap, err := sm.Snapshot()
	require.NoError(t, err)

	const index = 9 // three conf changes and an empty entry later
	restored := newTestSM(t)
	require.NoError(t, restored.Restore(index, snap))
	require.Equal(t, z, restored.lastZxid.Load())

	// The next write takes its raft index as zxid, above Z.
	restored.index = index
	restored.createSession(8, 2)
	require.EqualValues(t, index+1, restored.lastZxid.Load())

	// A snapshot cannot hold a zxid beyond the index it was taken at.
	require.ErrorContains(t, newTestSM(t).Restore(uint64(z)-1, snap), "zxid")
}
