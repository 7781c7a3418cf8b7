package znode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/cputime"
)

// cmpSortByPath is the order writeSnapshot used before sortByPath, kept as
// the oracle: a comparison sort by strings.Compare.
func cmpSortByPath(nodes []*node) {
	slices.SortFunc(nodes, func(a, b *node) int { return strings.Compare(a.path(), b.path()) })
}

// requireSortedLikeOracle sorts nodes made of paths with sortByPath and
// requires the oracle's order.
func requireSortedLikeOracle(t testing.TB, paths []string) {
	t.Helper()
	nodes := make([]*node, len(paths))
	for i, p := range paths {
		nodes[i] = tn(p, meta{})
	}
	want := slices.Clone(nodes)
	cmpSortByPath(want)
	sortByPath(nodes)
	for i := range nodes {
		if nodes[i] != want[i] {
			t.Fatalf("%d paths: position %d holds %q, want %q", len(paths), i, nodes[i].path(), want[i].path())
		}
	}
}

// pathGen returns a random string; rng drives it.
type pathGen func(rng *rand.Rand) string

func randBytes(rng *rand.Rand, alphabet string, maxLen int) string {
	b := make([]byte, rng.Intn(maxLen+1))
	for i := range b {
		if alphabet == "" {
			b[i] = byte(rng.Intn(256))
		} else {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
	}
	return string(b)
}

// edgy holds bytes around '/' and the extremes: a name may contain bytes
// below '/' ("-", ".", "\x00"), so "/a-b" < "/a/b" < "/a0".
const edgy = "\x00\x01 -./0a\x7f\x80\xff"

func TestSortByPathMatchesComparisonSort(t *testing.T) {
	prefixes := []string{"", "/", "/scale/p", "/scale/p3/n", strings.Repeat("/long", 12), "\x00\x00\x00\x00\x00\x00\x00", "\xff\xff\xff\xff\xff\xff\xff\xff"}
	gens := []struct {
		name string
		gen  pathGen
	}{
		{"any bytes", func(rng *rand.Rand) string { return randBytes(rng, "", 12) }},
		{"edgy bytes", func(rng *rand.Rand) string { return randBytes(rng, edgy, 20) }},
		{"few bytes, long", func(rng *rand.Rand) string { return randBytes(rng, "/a", 40) }},
		{"zero bytes only", func(rng *rand.Rand) string { return randBytes(rng, "\x00", 30) }},
		{"1000-byte shared prefix", func(rng *rand.Rand) string {
			return strings.Repeat("/x", 500)[:rng.Intn(4)+997] + randBytes(rng, "/-a", 10)
		}},
		{"shared prefixes", func(rng *rand.Rand) string {
			return prefixes[rng.Intn(len(prefixes))] + randBytes(rng, edgy, 16)
		}},
		{"scale shape", func(rng *rand.Rand) string {
			return fmt.Sprintf("/scale/p%d/n%d", rng.Intn(10), rng.Intn(1_000_000))
		}},
		{"tree paths", func(rng *rand.Rand) string {
			var b strings.Builder
			for range 1 + rng.Intn(5) {
				b.WriteString("/" + []string{"a", "a-b", "a.b", "ab", "a0", "b", "zookeeper", "é"}[rng.Intn(8)])
			}
			return b.String()
		}},
	}
	orders := []struct {
		name  string
		order func(rng *rand.Rand, paths []string)
	}{
		{"shuffled", func(rng *rand.Rand, p []string) { rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] }) }},
		{"sorted", func(_ *rand.Rand, p []string) { slices.Sort(p) }},
		{"reversed", func(_ *rand.Rand, p []string) { slices.Sort(p); slices.Reverse(p) }},
	}
	for _, g := range gens {
		for _, o := range orders {
			for _, size := range []int{0, 1, 2, 3, smallRun, smallRun + 1, 100, 1000, 5000} {
				t.Run(fmt.Sprintf("%s/%s/%d", g.name, o.name, size), func(t *testing.T) {
					rng := rand.New(rand.NewSource(int64(size)))
					// Unique paths, as in a tree, plus prefixes of some
					// of them (a path that is a prefix of another).
					seen := map[string]bool{}
					var paths []string
					add := func(p string) {
						if !seen[p] && len(paths) < size {
							seen[p] = true
							paths = append(paths, p)
						}
					}
					for tries := 0; len(paths) < size && tries < 20*size; tries++ {
						p := g.gen(rng)
						add(p)
						if rng.Intn(4) == 0 && len(p) > 0 {
							add(p[:rng.Intn(len(p))])
						}
					}
					o.order(rng, paths)
					requireSortedLikeOracle(t, paths)
				})
			}
		}
	}
}

// chunkKey orders chunks as strings.Compare orders the strings from d, at
// the cases the count byte is there for.
func TestChunkKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"", "\x00"},
		{"/a", "/a\x00"},
		{"/a\x00", "/a\x00\x00"},
		{"/a-b", "/a/b"},
		{"/a", "/a-b"},
		{"/abcdef", "/abcdef\x00"}, // 7 bytes, 8 bytes
		{"/abcde", "/abcdef"},      // 6, 7
		{"/abcdef\xff", "/abcdeg"}, // decided in the chunk
		{"\x7f", "\x80"},           // unsigned
		{"/abcdefg", "/abcdefgh"},  // equal chunks; the next one decides
	} {
		ka, kb := chunkKey(c.a, 0), chunkKey(c.b, 0)
		if c.a[:min(len(c.a), chunkLen)] == c.b[:min(len(c.b), chunkLen)] && min(len(c.a), len(c.b)) >= chunkLen {
			require.Equal(t, ka, kb, "%q %q", c.a, c.b)
			continue
		}
		require.Less(t, ka, kb, "%q %q", c.a, c.b)
	}
}

// FuzzSortByPath sorts paths built from the input and compares with the
// comparison sort. Each path is a prefix of the one before (length from a
// byte) plus up to 15 new bytes, so shared prefixes and prefixes of another
// path are common.
func FuzzSortByPath(f *testing.F) {
	f.Add([]byte("\x00\x03/ab\x02\x02-b\x02\x02/b\x01\x00"))
	f.Add(bytes.Repeat([]byte("\x08\x05\x00\x00\x00\x00\x01"), 40))
	f.Add(bytes.Repeat([]byte("\x06\x09/scale/p3"), 30))
	f.Fuzz(func(t *testing.T, in []byte) {
		seen := map[string]bool{}
		var paths []string
		prev := ""
		for len(in) >= 2 {
			keep, n := int(in[0])%(len(prev)+1), int(in[1])%16
			in = in[2:]
			n = min(n, len(in))
			p := prev[:keep] + string(in[:n])
			in = in[n:]
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
			prev = p
		}
		requireSortedLikeOracle(t, paths)
	})
}

// oldOrderSnapshot encodes nodes in the snapshot format in the order of the
// comparison sort writeSnapshot used before sortByPath.
func oldOrderSnapshot(nodes []*node) []byte {
	nodes = slices.Clone(nodes)
	cmpSortByPath(nodes)
	b := binary.BigEndian.AppendUint64([]byte(snapMagic), uint64(len(nodes)))
	for _, n := range nodes {
		b = appendNode(b, &n.meta)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// A Frozen's snapshot and the live tree's are byte for byte what the
// comparison sort's order gave, for a random tree whose names hold bytes
// below and above '/' and share prefixes, including after writes that
// follow the freeze.
func TestSnapshotBytesAsComparisonOrder(t *testing.T) {
	names := []string{"a", "a-b", "a.b", "a b", "ab", "a0", "abcdefgh", "abcdefg", "n1", "n10", "n2", "~", "é", "中"}
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tree, c := frozenScenarioTree(t, seed)
			rng := rand.New(rand.NewSource(seed))
			paths := []string{"/"}
			for range 3000 {
				parent := paths[rng.Intn(len(paths))]
				p := parent + "/" + names[rng.Intn(len(names))]
				if parent == "/" {
					p = p[1:]
				}
				if tree.nodes.get(p) != nil || strings.HasPrefix(p, "/zookeeper") {
					continue
				}
				c.mk(p, []byte(p), 0)
				paths = append(paths, p)
			}
			require.Greater(t, tree.NodeCount(), 2000)

			var live bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&live))
			requireSameSnapshot(t, oldOrderSnapshot(deepFreeze(tree)), live.Bytes())

			want := oldOrderSnapshot(deepFreeze(tree))
			f := tree.Freeze()
			defer f.Release()
			for _, p := range paths[1:200] {
				c.setData(p, []byte("changed"), -1)
			}
			requireSameSnapshot(t, want, frozenBytes(t, f))
		})
	}
}

// BenchmarkFrozenSnapshot1M is Freeze, WriteSnapshot (to io.Discard) and
// Release of a tree of a million znodes shaped like zkbench's scale run.
// Building the tree takes seconds.
func BenchmarkFrozenSnapshot1M(b *testing.B) {
	tree := scaleTree(1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := tree.Freeze()
		if err := f.WriteSnapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
		f.Release()
	}
}

// BenchmarkSortByPath1M is the sort alone, on the paths of a million-znode
// scale tree in a random order, against the comparison sort. cpu-ns/op is
// the process's CPU time a sort (see BenchmarkSnapshotJob1M).
func BenchmarkSortByPath1M(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	nodes := make([]*node, 1_000_000)
	for i := range nodes {
		nodes[i] = tn(fmt.Sprintf("/scale/p%d/n%d", i%10, i), meta{})
	}
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	work := make([]*node, len(nodes))
	for _, s := range []struct {
		name string
		sort func([]*node)
	}{{"radix", sortByPath}, {"compare", cmpSortByPath}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				copy(work, nodes)
				start := cputime.Process()
				b.StartTimer()
				s.sort(work)
				cpu += cputime.Process() - start
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
