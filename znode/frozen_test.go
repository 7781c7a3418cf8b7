package znode

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Frozen tree writes the bytes the tree wrote when it was frozen, however
// the tree changes afterwards.
func TestFrozenWritesTheTreeAsFrozen(t *testing.T) {
	tree := mustNewTree(t)
	randomWorkload(t, tree, 1, 300)
	var want bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&want))
	f := tree.Freeze()

	randomWorkload(t, tree, 2, 300) // creates, deletes, set data and ACLs
	var after bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&after))
	require.NotEqual(t, want.Bytes(), after.Bytes(), "the workload changed the tree")

	var got bytes.Buffer
	require.NoError(t, f.WriteSnapshot(&got))
	require.Equal(t, want.Bytes(), got.Bytes())
}

// SnapshotSize is exactly the length WriteSnapshot writes, for a fresh
// tree and for trees after random workloads (data nil and not, ACLs of
// several entries and schemes, ephemerals, TTLs, containers).
func TestFrozenSnapshotSize(t *testing.T) {
	tests := []struct {
		name string
		seed int64
		ops  int
	}{
		{"fresh", 0, 0},
		{"small", 1, 50},
		{"larger", 2, 500},
		{"other seed", 3, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := mustNewTree(t)
			if tt.ops > 0 {
				randomWorkload(t, tree, tt.seed, tt.ops)
			}
			f := tree.Freeze()
			var b bytes.Buffer
			require.NoError(t, f.WriteSnapshot(&b))
			require.Equal(t, b.Len(), f.SnapshotSize())
		})
	}
}
