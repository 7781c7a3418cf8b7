package znode

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// heapPerZnode returns the live heap bytes and objects a znode of build's
// tree costs: the HeapAlloc and HeapObjects deltas after a full GC, divided
// by the number of znodes.
func heapPerZnode(build func() *Tree) (bytes, objects float64, nodes int) {
	var before, after runtime.MemStats
	// Several cycles: what earlier tests dropped (a Frozen's state, freed
	// by its cleanup after a first GC) would otherwise be freed between
	// before and after and hide bytes of the tree (about 11 a znode).
	for range 4 {
		runtime.GC()
	}
	runtime.ReadMemStats(&before)
	tree := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	nodes = tree.NodeCount()
	runtime.KeepAlive(tree)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(nodes),
		float64(after.HeapObjects-before.HeapObjects) / float64(nodes), nodes
}

// builtScaleTree is scaleTree(n) made by Build (as a snapshot is read), so
// that -tags invariants does not run Check after each of n creates.
func builtScaleTree(tb testing.TB, n int) *Tree {
	nodes := []BuiltNode{{Path: "/", Data: []byte{}, ACL: open, Pzxid: 1, Creates: 1},
		{Path: "/scale", ACL: open, Czxid: 1, Mzxid: 1, Pzxid: 2, Creates: 10}}
	for p := range 10 {
		nodes = append(nodes, BuiltNode{Path: fmt.Sprintf("/scale/p%d", p), ACL: open, Czxid: 2, Mzxid: 2, Pzxid: 20, Creates: int32(n/10 + 1)})
	}
	data := make([]byte, 100)
	for i := range n {
		nodes = append(nodes, BuiltNode{Path: fmt.Sprintf("/scale/p%d/n%d", i%10, i), Data: data, ACL: open, Czxid: 20, Mzxid: 20, Pzxid: 20})
	}
	tree, err := Build(Options{}, nodes)
	require.NoError(tb, err)
	return tree
}

// heapBytesPerZnode bounds TestHeapPerZnode. Measured at 100k znodes:
// 350.3 bytes with a 24-byte ACL slice, a 24-byte data slice and apart
// owner and ttl fields in a 144-byte node; 334.3 with an ACL pointer and
// owner and ttl in one field (a 120-byte node, the 128 class); 318.3 with
// the data a string (a 112-byte node); 297.3 (299.1 read from a
// snapshot) with the nodes indexed by a nodeIndex instead of a
// map[string]*node (nodeindex.go); 251.1 (252.9) with path and data in one
// allocation, a 96-byte node and the children in a childSet instead of a
// map of names (2 objects a znode instead of 3). -race adds under 1 byte.
const heapBytesPerZnode = 258.0

// A tree of 100k znodes of 100 bytes costs at most heapBytesPerZnode bytes
// of heap a znode, whether made by creates or read from a snapshot.
func TestHeapPerZnode(t *testing.T) {
	const n = 100000
	for _, tt := range []struct {
		name  string
		build func(testing.TB) *Tree
	}{
		{"create", func(testing.TB) *Tree { return scaleTree(n) }},
		{"snapshot", func(tb testing.TB) *Tree { return builtScaleTree(tb, n) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if checkEveryWrite && tt.name == "create" {
				t.Skip("scaleTree's creates would each run Check: quadratic (the snapshot case runs)")
			}
			bytes, objects, nodes := heapPerZnode(func() *Tree { return tt.build(t) })
			t.Logf("%d znodes: %.1f bytes, %.2f objects a znode", nodes, bytes, objects)
			require.LessOrEqual(t, bytes, heapBytesPerZnode, "heap bytes a znode")
		})
	}
}

// BenchmarkHeapPerZnode reports the heap a znode of scaleTree(1000000)
// costs (one build; b.N is ignored).
func BenchmarkHeapPerZnode(b *testing.B) {
	bytes, objects, _ := heapPerZnode(func() *Tree { return scaleTree(1000000) })
	b.ReportMetric(bytes, "bytes/znode")
	b.ReportMetric(objects, "objects/znode")
}
