package znode

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// checkSorted sorts nodes (duplicates allowed) and checks the path sequence
// equals the oracle's and the result is a permutation of the input.
func checkSorted(t *testing.T, paths []string) []*node {
	t.Helper()
	nodes := make([]*node, len(paths))
	for i, p := range paths {
		nodes[i] = tn(p, meta{})
	}
	want := slices.Clone(paths)
	slices.Sort(want)
	in := map[*node]bool{}
	for _, n := range nodes {
		in[n] = true
	}
	sortByPath(nodes)
	for i, n := range nodes {
		if !in[n] {
			t.Fatalf("node %p at %d not from input (or duplicated)", n, i)
		}
		delete(in, n)
		if n.path() != want[i] {
			t.Fatalf("%d paths: position %d holds %q, want %q", len(paths), i, n.path(), want[i])
		}
	}
	return nodes
}

// Every string over a small alphabet of extreme bytes up to 9 bytes (so
// across the first chunk boundary), each present twice (duplicates across
// chunk boundaries), shuffled.
func TestSortByPathExhaustiveSmallAlphabet(t *testing.T) {
	for _, alpha := range []string{"\x00\x01\xff", "\x00./0", "\x00\xff"} {
		maxLen := 8
		if len(alpha) == 2 {
			maxLen = 11
		}
		var all []string
		var gen func(prefix string)
		gen = func(prefix string) {
			all = append(all, prefix, prefix)
			if len(prefix) == maxLen {
				return
			}
			for i := 0; i < len(alpha); i++ {
				gen(prefix + alpha[i:i+1])
			}
		}
		gen("")
		rng := rand.New(rand.NewSource(1))
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		checkSorted(t, all)
	}
}

// Many nodes with equal paths (> smallRun), of lengths around chunk
// multiples, and determinism of the order among duplicates.
func TestSortByPathDuplicates(t *testing.T) {
	for _, l := range []int{0, 1, 6, 7, 8, 13, 14, 15, 70, 1001} {
		for _, b := range []byte{0, '/', 0xff} {
			p := strings.Repeat(string([]byte{b}), l)
			var paths []string
			for i := 0; i < 100; i++ {
				paths = append(paths, p)
				if i%3 == 0 {
					paths = append(paths, p+"\x00", p[:l/2])
				}
			}
			rng := rand.New(rand.NewSource(int64(l)))
			rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
			checkSorted(t, paths)
			// determinism: same input order gives same permutation
			mk := func() []int {
				nodes := make([]*node, len(paths))
				idx := map[*node]int{}
				for i, p := range paths {
					nodes[i] = tn(p, meta{})
					idx[nodes[i]] = i
				}
				sortByPath(nodes)
				out := make([]int, len(nodes))
				for i, n := range nodes {
					out[i] = idx[n]
				}
				return out
			}
			if a, b := mk(), mk(); !slices.Equal(a, b) {
				t.Fatalf("nondeterministic order among duplicates")
			}
		}
	}
}

// All nodes in one bucket: a long shared prefix, then a single differing
// byte at each position mod 8 of a chunk (incl. the count byte: differing
// adversarialPending builds paths that leave many small buckets pending
// below one bucket that keeps splitting ("~"^i + c (+"a") for c in
// a printable alphabet below '~'), as top-level znode names.
func adversarialPending(n int) []string {
	const alpha = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var paths []string
	for lvl := 0; len(paths) < n; lvl++ {
		pre := "/" + strings.Repeat("~", lvl)
		for i := 0; i < len(alpha) && len(paths) < n; i++ {
			paths = append(paths, pre+alpha[i:i+1], pre+alpha[i:i+1]+"a")
		}
	}
	return paths
}

// The runs waiting to be split stay few whatever the paths: the largest
// bucket of a split is taken last, so every run above it is at most half
// of its parent. Paths that keep one bucket splitting while leaving many
// small ones pending below it made the pending slice grow to about n/2 runs
// (64 to 77 bytes allocated a node instead of 8).
func TestSortByPathPendingStaysSmall(t *testing.T) {
	for _, n := range []int{20000, 100000} {
		paths := adversarialPending(n)
		rng := rand.New(rand.NewSource(1))
		rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
		nodes := make([]*node, len(paths))
		for i, p := range paths {
			nodes[i] = tn(p, meta{})
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		sortByPath(nodes)
		runtime.ReadMemStats(&after)
		perNode := float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
		if perNode > 12 {
			t.Errorf("n=%d: sortByPath allocated %.1f bytes a node, want about 8", n, perNode)
		}
		for i := 1; i < len(nodes); i++ {
			if nodes[i-1].path() > nodes[i].path() {
				t.Fatalf("n=%d: unsorted at %d", n, i)
			}
		}
	}
}

// The insertion sorts of small runs compare keys, not paths, on zkbench's
// tree shapes: a small run whose keys are all equal gets the next chunk's
// keys first. Before, such runs (common: all the names of a bucket share
// the 7 bytes after its depth) went to the insertion sort as they were,
// and each of its comparisons read both paths' suffixes: 1.8 suffix
// comparisons a node on the scale shape, most of the sort's time on the
// create workloads' shape in the server's profile.
func TestSortByPathSmallRunsCompareKeys(t *testing.T) {
	for _, shape := range []struct {
		name string
		path func(i int) string
	}{
		{"scale", func(i int) string { return fmt.Sprintf("/scale/p%d/n%d", i%10, i) }},
		{"bench", func(i int) string { return fmt.Sprintf("/bench/c%d-%d", i%16, i/16) }},
	} {
		for _, n := range []int{20000, 200000} {
			t.Run(fmt.Sprintf("%s/%d", shape.name, n), func(t *testing.T) {
				nodes := make([]*node, n)
				for i := range nodes {
					nodes[i] = tn(shape.path(i), meta{})
				}
				rand.New(rand.NewSource(1)).Shuffle(n, func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
				got := sortPaths(nodes)
				for i := 1; i < n; i++ {
					if nodes[i-1].path() >= nodes[i].path() {
						t.Fatalf("unsorted at %d: %q, %q", i, nodes[i-1].path(), nodes[i].path())
					}
				}
				if got > n/10 {
					t.Errorf("%d suffix comparisons for %d nodes, want at most one a 10 nodes", got, n)
				}
			})
		}
	}
}
