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
