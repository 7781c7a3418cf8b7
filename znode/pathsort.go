package znode

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
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
// re-reads them. This is an MSD radix sort (American flag sort: in-place
// byte buckets) whose bytes come from a cached 64-bit key per node instead
// of from the path: the key holds chunkLen bytes of the path from a depth
// d shared by the run being sorted (chunkKey), so one read of a path's
// memory serves up to chunkLen byte positions. A run is split on the first
// key byte in which its keys differ (found from the OR and AND of its keys,
// so shared bytes cost no pass of their own); a run whose keys are all
// equal and cover a full chunk gets keys from d+chunkLen, whatever its
// size; other runs of at most smallRun nodes finish with an insertion sort,
// whose comparisons mostly end at the keys.
//
// Bounds: it does not recurse (its stack depth is constant whatever the
// paths); pending runs are kept in a heap slice of at most
// 255·log2(len(nodes))+1 runs: a split pushes its largest bucket first, so
// it is taken last, and every run above it is at most half of its parent. Each pass over a run
// is O(len(run)) (+256 for a split, and a split run has more than smallRun
// nodes); a node is in at most 8 splits per chunk of its path and one key
// computation per chunk, and ends in at most one insertion sort of at most
// smallRun nodes, so the total work is O(smallRun · total path bytes)
// whatever the input: there is no quadratic worst case in n. Besides nodes, sorted in place, it allocates 8 bytes per node (the
// keys; a copy of each path's string header next to its key would save a
// cache miss per key computation, but triple that, and the server bounds
// what serializing a snapshot allocates).
func sortByPath(nodes []*node) { sortPaths(nodes) }

// sortPaths is sortByPath, returning how many comparisons of its insertion
// sorts went past the keys (for the tests).
func sortPaths(nodes []*node) (suffixCompares int) {
	if len(nodes) <= smallRun {
		s := pathSorter{nodes: nodes}
		s.insertionSort(0, len(nodes), 0)
		return s.suffixCompares
	}
	s := pathSorter{nodes: nodes, keys: make([]uint64, len(nodes))}
	s.rekey(0, len(nodes), 0)
	// Invariant: the keys of a pending run hold its paths' chunks at its
	// depth, and its paths share their first depth bytes. Every node
	// before (after) a pending run's nodes has a smaller (greater) path
	// than each of them, or is in another pending run.
	pending := []pathRun{{0, len(nodes), 0}}
	for len(pending) > 0 {
		r := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if r.hi-r.lo < 2 {
			continue
		}
		keys := s.keys[r.lo:r.hi]
		or, and := keys[0], keys[0]
		for _, k := range keys[1:] {
			or |= k
			and &= k
		}
		if or == and {
			// Equal keys: equal paths if they ended within the chunk,
			// else the next chunk decides.
			if and&0xff == chunkLen {
				r.depth += chunkLen
				s.rekey(r.lo, r.hi, r.depth)
				pending = append(pending, r)
			}
			continue
		}
		if r.hi-r.lo <= smallRun {
			// Keys differ: most comparisons end at them. (Taken before
			// the equal-keys case, a small run of equal keys would make
			// the insertion sort compare whole suffixes, reading every
			// path again for each of its O(smallRun²) comparisons.)
			s.insertionSort(r.lo, r.hi, r.depth)
			continue
		}
		// The most significant byte in which the keys differ; the bytes
		// above it are the same in every key.
		shift := uint(56 - bits.LeadingZeros64(or^and)&^7)
		pending = s.split(r, shift, pending)
	}
	return s.suffixCompares
}

// chunkLen is the number of path bytes in a key; smallRun the size of a run
// left to insertion sort.
const (
	chunkLen = 7
	smallRun = 32
)

// pathSorter holds the nodes being sorted with, at the same index, each
// one's key.
type pathSorter struct {
	nodes []*node
	keys  []uint64
	// suffixCompares counts the comparisons less made of the paths
	// themselves, keys equal or absent.
	suffixCompares int
}

// pathRun is the nodes [lo, hi) of a pathSorter, with keys at depth.
type pathRun struct{ lo, hi, depth int }

func (s *pathSorter) swap(i, j int) {
	s.nodes[i], s.nodes[j] = s.nodes[j], s.nodes[i]
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
}

// rekey sets the keys of nodes [lo, hi) to their paths' chunks at depth d.
//
// It is where the sort waits for memory: each key needs the node (for its
// path's header) and then the path's bytes, both out of cache on a big
// tree, the second load depending on the first. So it goes in blocks: the
// path headers of a block first, then their keys; each loop's loads are
// independent of one another, so the CPU has many misses in flight at once
// rather than a few pairs (BenchmarkSortByPath1M: about 245 ms of CPU a
// sort with one loop, 160 to 200 in blocks, on a shared machine).
func (s *pathSorter) rekey(lo, hi, d int) {
	var paths [64]string
	for b := lo; b < hi; b += len(paths) {
		nodes := s.nodes[b:min(b+len(paths), hi)]
		keys := s.keys[b : b+len(nodes)]
		ps := paths[:len(nodes)]
		for i, n := range nodes {
			ps[i] = n.sortPath()
		}
		for i, p := range ps {
			keys[i] = chunkKey(p, d)
		}
	}
}

// split orders run r by the key byte at shift, in place, and appends each
// resulting bucket of two or more nodes to pending.
func (s *pathSorter) split(r pathRun, shift uint, pending []pathRun) []pathRun {
	var next, end [256]int
	for _, k := range s.keys[r.lo:r.hi] {
		end[byte(k>>shift)]++
	}
	pos := r.lo
	for b := range end {
		next[b] = pos
		pos += end[b]
		end[b] = pos
	}
	// Bucket b is [next[b], end[b]) minus what is already in place.
	// Each step either finds the node at next[b] in place or swaps it
	// into its bucket, which advances that bucket's next.
	for b := range end {
		for next[b] < end[b] {
			i := next[b]
			c := byte(s.keys[i] >> shift)
			if int(c) == b {
				next[b]++
				continue
			}
			s.swap(i, next[c])
			next[c]++
		}
	}
	// The largest bucket is pushed first, so it is taken last: every
	// run above it is at most half of r, which bounds pending by
	// 255·log2(len(nodes)) + 1 runs.
	bigLo, bigHi, start := r.lo, r.lo, r.lo
	for _, e := range end {
		if e-start > bigHi-bigLo {
			bigLo, bigHi = start, e
		}
		start = e
	}
	pending = append(pending, pathRun{bigLo, bigHi, r.depth}) // may hold one node: then a trivial run
	start = r.lo
	for _, e := range end {
		if e-start > 1 && start != bigLo {
			pending = append(pending, pathRun{start, e, r.depth})
		}
		start = e
	}
	return pending
}

// insertionSort sorts nodes [lo, hi) by path; their paths share their first
// depth bytes, and when keys is set it holds their chunks at depth.
func (s *pathSorter) insertionSort(lo, hi, depth int) {
	for i := lo + 1; i < hi; i++ {
		for j := i; j > lo && s.less(j, j-1, depth); j-- {
			s.nodes[j], s.nodes[j-1] = s.nodes[j-1], s.nodes[j]
			if s.keys != nil {
				s.keys[j], s.keys[j-1] = s.keys[j-1], s.keys[j]
			}
		}
	}
}

// less reports whether node i's path is smaller than node j's (see
// insertionSort).
func (s *pathSorter) less(i, j, depth int) bool {
	if s.keys == nil {
		s.suffixCompares++
		return s.nodes[i].sortPath()[depth:] < s.nodes[j].sortPath()[depth:]
	}
	if ki, kj := s.keys[i], s.keys[j]; ki != kj {
		return ki < kj
	} else if ki&0xff != chunkLen {
		return false // equal paths
	}
	s.suffixCompares++
	return s.nodes[i].sortPath()[depth+chunkLen:] < s.nodes[j].sortPath()[depth+chunkLen:]
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
		// One big-endian load of 8 bytes (s[d:] holds at least 8; the
		// slice of its memory is only read); the eighth byte is masked
		// off for the count. Written so, chunkKey is cheap enough to be
		// inlined (8 byte loads combined were not): about a tenth of
		// BenchmarkSortByPath1M's CPU.
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(s[d:]), 8))&^0xff | chunkLen
	}
	return shortChunkKey(s[d:])
}

// shortChunkKey is chunkKey(rest, 0) for a rest of at most chunkLen bytes
// (apart so that chunkKey's common case is inlined).
func shortChunkKey(rest string) uint64 {
	var k uint64
	for i := 0; i < len(rest); i++ {
		k |= uint64(rest[i]) << (56 - 8*i)
	}
	return k | uint64(len(rest))
}
