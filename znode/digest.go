package znode

import "hash/fnv"

// Digest returns a 64-bit FNV-1a hash of the tree's snapshot bytes: every
// field of every node in path order. Replicas that applied the same entries
// have equal digests.
func (t *Tree) Digest() uint64 {
	h := fnv.New64a()
	// Writing to a hash never fails.
	_ = t.WriteSnapshot(h)
	return h.Sum64()
}
