package znode

import "io"

// Frozen is a copy of a Tree's nodes (path and meta, not children) taken by
// Freeze, for writing a snapshot while the tree goes on changing. Taking it
// costs one struct copy per node: data and ACL slices are shared, which is
// safe because writes replace them and never mutate them in place.
type Frozen struct {
	nodes []node
}

// Freeze copies the tree's nodes. It must be called under the same lock as
// any other read; the Frozen is then independent of the tree.
func (t *Tree) Freeze() *Frozen {
	f := &Frozen{nodes: make([]node, 0, len(t.nodes))}
	for _, n := range t.nodes {
		f.nodes = append(f.nodes, node{path: n.path, meta: n.meta})
	}
	return f
}

// WriteSnapshot writes the frozen tree exactly as Tree.WriteSnapshot wrote
// the tree when it was frozen.
func (f *Frozen) WriteSnapshot(w io.Writer) error {
	ptrs := make([]*node, len(f.nodes))
	for i := range f.nodes {
		ptrs[i] = &f.nodes[i]
	}
	return writeSnapshot(w, ptrs)
}

// SnapshotSize returns the exact number of bytes WriteSnapshot writes, so
// that a caller can encode into one buffer of the right size instead of a
// growing one (at a million znodes a snapshot is hundreds of MB, and each
// doubling of a buffer is a transient copy).
func (f *Frozen) SnapshotSize() int {
	size := len(snapMagic) + 8 + 4 // magic, node count, CRC
	for i := range f.nodes {
		size += encodedSize(&f.nodes[i])
	}
	return size
}
