package znode

import (
	"cmp"
	"slices"
)

// sortByPath sorts nodes by path in byte order: afterwards
// strings.Compare(nodes[i].path, nodes[i+1].path) <= 0 for every i, which
// is the order slices.SortFunc with strings.Compare gives (the snapshot
// format's order, so a parent precedes its children). Paths in a tree are
// unique, so that order, and with it the snapshot's bytes, does not depend
// on how the sort gets there; with equal paths the order among them is
// unspecified but still deterministic (the sort reads no clock, random
// source or map).
//
// Why not a comparison sort: the paths of a big tree share long prefixes
// ("/scale/p3/n"), and each of a comparison sort's n·log n comparisons
// re-reads them. This is an MSD radix sort whose digit is a chunk of
// chunkLen bytes: the nodes sharing the first d bytes of path are ordered
// by a 64-bit key made of their bytes [d, d+chunkLen) (chunkKey), then each
// run of equal keys that has not reached the end of its paths is ordered
// the same way from d+chunkLen. So each byte of a path is read a bounded
// number of times, not once per comparison, and the key sorts are over
// fixed-size integers in one contiguous array. Runs of at most smallRun
// nodes finish with an insertion sort on the rest of the paths.
//
// Bounds: it does not recurse; pending runs are kept in a slice (at most
// len(nodes)/2 of them, as runs are disjoint and hold two or more nodes).
// Each level is a pdqsort of the run's keys (slices.SortFunc, O(m log m)
// in the worst case), and a node takes part in at most len(path)/chunkLen+1
// levels, so the total work is O(n log n · (L/chunkLen + 1)) for paths of
// at most L bytes, whatever the input. It allocates 32 bytes per node.
func sortByPath(nodes []*node) {
	if len(nodes) <= smallRun {
		insertionSortByPath(nodes)
		return
	}
	items := make([]pathItem, len(nodes))
	for i, n := range nodes {
		items[i] = pathItem{path: n.path, n: n}
	}
	// Invariant: every pending run holds two or more items whose paths
	// share their first depth bytes, and is unordered only relative to
	// itself: every item before it (after it) in items has a smaller
	// (greater) path than each of its items, or is in another pending run.
	type run struct{ lo, hi, depth int }
	pending := []run{{0, len(items), 0}}
	for len(pending) > 0 {
		r := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		s := items[r.lo:r.hi]
		if len(s) <= smallRun {
			insertionSortItems(s, r.depth)
			continue
		}
		same := true
		for i := range s {
			s[i].key = chunkKey(s[i].path, r.depth)
			same = same && s[i].key == s[0].key
		}
		if !same {
			slices.SortFunc(s, func(a, b pathItem) int { return cmp.Compare(a.key, b.key) })
		}
		for i := 0; i < len(s); {
			j := i + 1
			for j < len(s) && s[j].key == s[i].key {
				j++
			}
			// Equal keys with fewer than chunkLen bytes mean the paths
			// ended together: they are equal, nothing left to order.
			if j-i > 1 && s[i].key&0xff == chunkLen {
				pending = append(pending, run{r.lo + i, r.lo + j, r.depth + chunkLen})
			}
			i = j
		}
	}
	for i := range items {
		nodes[i] = items[i].n
	}
}

// chunkLen is the number of path bytes in a key; smallRun the size of a run
// left to insertion sort.
const (
	chunkLen = 7
	smallRun = 16
)

// pathItem is a node being sorted, with its path's header copied next to
// the key so that computing keys reads no node.
type pathItem struct {
	key  uint64
	path string
	n    *node
}

// chunkKey returns the key of s's bytes [d, d+chunkLen): those bytes
// big-endian in the top 56 bits, zero-padded if s ends before d+chunkLen,
// and in the low 8 bits how many there are (0..chunkLen). For two strings
// a, b with the same first d bytes, chunkKey(a, d) < chunkKey(b, d) implies
// a < b: either they differ at a byte in the chunk (the first such byte
// decides, as padding is only compared against a byte where one string
// ended, and a string that ends is smaller unless the other continues with
// zero bytes only, where the count decides), or one ends within the chunk
// and is a prefix of the other. Equal keys mean equal chunks of the same
// length; d <= len(s) is required.
func chunkKey(s string, d int) uint64 {
	if len(s)-d > chunkLen {
		b := s[d : d+8]
		// The eight loads combine into one big-endian load; the eighth
		// byte is masked off for the count.
		k := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
		return k&^0xff | chunkLen
	}
	rest := s[d:]
	var k uint64
	for i := 0; i < len(rest); i++ {
		k |= uint64(rest[i]) << (56 - 8*i)
	}
	return k | uint64(len(rest))
}

// insertionSortItems sorts s by path; all paths share their first depth
// bytes, which are not compared again.
func insertionSortItems(s []pathItem, depth int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].path[depth:] < s[j-1].path[depth:]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// insertionSortByPath sorts a few nodes by path.
func insertionSortByPath(nodes []*node) {
	for i := 1; i < len(nodes); i++ {
		for j := i; j > 0 && nodes[j].path < nodes[j-1].path; j-- {
			nodes[j], nodes[j-1] = nodes[j-1], nodes[j]
		}
	}
}
