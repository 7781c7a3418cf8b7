package znode

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/cputime"
	"github.com/zkraft/zkraft/jute"
)

func BenchmarkApplyCreate(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/n%d", i)
	}
	data := make([]byte, 64)
	w := createW(jute.OpCreate, "", data, open, 0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Create.Path = paths[i]
		if r, _ := tree.Apply(TxnContext{Zxid: int64(i + 2), Time: int64(i), SessionID: 1, Auth: local}, w); r.Err != 0 {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkApplySequentialCreate(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	w := createW(jute.OpCreate, "/bench/lock-", make([]byte, 16), open, jute.FlagEphemeralSequential, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, _ := tree.Apply(TxnContext{Zxid: int64(i + 2), Time: int64(i), SessionID: 1, Auth: local}, w); r.Err != 0 {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkGetData(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	const n = 10000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/n%d", i)
		tree.Apply(TxnContext{Zxid: int64(i + 2), Auth: local}, createW(jute.OpCreate, paths[i], make([]byte, 64), open, 0, 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, ok := tree.GetData(paths[i%n]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	for i := 0; i < 10000; i++ {
		tree.Apply(TxnContext{Zxid: int64(i + 2), Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/bench/n%d", i), make([]byte, 64), open, 0, 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = tree.Digest()
	}
}

// BenchmarkReadSnapshot decodes the snapshot of a tree shaped like zkbench's
// scale run: 200k znodes of 100 bytes under 10 parents.
func BenchmarkReadSnapshot(b *testing.B) {
	tree := scaleTree(200000)
	var buf bytes.Buffer
	if err := tree.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		read func([]byte) (*Tree, error)
	}{
		{"reader", func(in []byte) (*Tree, error) { return ReadSnapshot(bytes.NewReader(in), Options{}) }},
		{"bytes", func(in []byte) (*Tree, error) { return ReadSnapshotBytes(in, Options{}) }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := r.read(buf.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scaleTree returns a tree shaped like zkbench's scale run: n znodes of 100
// bytes under 10 parents.
func scaleTree(n int) *Tree {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/scale", nil, open, 0, 0))
	zxid := int64(2)
	for p := 0; p < 10; p++ {
		tree.Apply(TxnContext{Zxid: zxid, Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/scale/p%d", p), nil, open, 0, 0))
		zxid++
	}
	data := make([]byte, 100)
	for i := 0; i < n; i++ {
		tree.Apply(TxnContext{Zxid: zxid, Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/scale/p%d/n%d", i%10, i), data, open, 0, 0))
		zxid++
	}
	return tree
}

// BenchmarkFreeze is the pause a snapshot costs the apply loop: freezing a
// tree of 200k znodes.
func BenchmarkFreeze(b *testing.B) {
	tree := scaleTree(200000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tree.Freeze().Release()
	}
}

// BenchmarkApplySetData is setData on 100k znodes, with no freeze and while
// a freeze is active (each save then copies the node's meta for it, once).
func BenchmarkApplySetData(b *testing.B) {
	for _, frozen := range []bool{false, true} {
		b.Run(fmt.Sprintf("frozen=%v", frozen), func(b *testing.B) {
			const n = 100000
			tree := scaleTree(n)
			if frozen {
				f := tree.Freeze()
				defer f.Release()
			}
			w := &Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Data: make([]byte, 100), Version: -1}}
			paths := make([]string, n)
			for i := range paths {
				paths[i] = fmt.Sprintf("/scale/p%d/n%d", i%10, i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.SetData.Path = paths[i%n]
				if r, _ := tree.Apply(TxnContext{Zxid: int64(n + 20 + i), Auth: local}, w); r.Err != 0 {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// BenchmarkCreatePause reports the longest single create (wall time, GC
// included) while a tree grows from 0 to 1.2 M znodes (one run; b.N is
// ignored): the pause an index growth can cost a write. max-1M is the
// longest among the creates from 1 M znodes on.
func BenchmarkCreatePause(b *testing.B) {
	const n = 1200000
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/scale", nil, open, 0, 0))
	for p := range 10 {
		tree.Apply(TxnContext{Zxid: int64(2 + p), Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/scale/p%d", p), nil, open, 0, 0))
	}
	w := createW(jute.OpCreate, "", make([]byte, 100), open, 0, 0)
	var longest, longest1M time.Duration
	for i := range n {
		w.Create.Path = fmt.Sprintf("/scale/p%d/n%d", i%10, i)
		start := time.Now()
		r, _ := tree.Apply(TxnContext{Zxid: int64(20 + i), Auth: local}, w)
		d := time.Since(start)
		if r.Err != 0 {
			b.Fatal(r.Err)
		}
		longest = max(longest, d)
		if i >= 1000000 {
			longest1M = max(longest1M, d)
		}
	}
	b.ReportMetric(float64(longest.Microseconds()), "max-µs")
	b.ReportMetric(float64(longest1M.Microseconds()), "max-1M-µs")
}

// BenchmarkGetData1M is GetData on a tree of 1 M znodes (scaleTree), in
// an order unrelated to creation: the index and nodes are out of cache.
func BenchmarkGetData1M(b *testing.B) {
	const n = 1000000
	tree := scaleTree(n)
	paths := make([]string, n)
	for i := range paths {
		j := (i * 7919) % n // 7919 is prime to n: a permutation
		paths[i] = fmt.Sprintf("/scale/p%d/n%d", j%10, j)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, ok := tree.GetData(paths[i%n]); !ok {
			b.Fatal("missing")
		}
	}
}

// trees1M are the two shapes of a 1 M-znode tree zkbench leaves, each
// built once per process: its scale run's (10 parents of /scale/p%d/n%d,
// 100 bytes each) and its create workloads' (/bench/c%d-%d from 16
// clients and /bench/p%d-%d from 4 pipelined sessions, 128 bytes each).
var trees1M = []struct {
	name string
	tree func() *Tree
}{
	{"scale", sync.OnceValue(func() *Tree { return scaleTree(1000000) })},
	{"bench", sync.OnceValue(func() *Tree { return benchCreateTree(16, 31250, 4, 125000) })},
}

// benchCreateTree returns a tree holding what zkbench's create workloads
// make: /bench/c<client>-<i> for clients clients of perClient creates, and
// /bench/p<session>-<i> for sessions sessions of perSession creates.
func benchCreateTree(clients, perClient, sessions, perSession int) *Tree {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	zxid := int64(2)
	w := createW(jute.OpCreate, "", make([]byte, 128), open, 0, 0)
	mk := func(prefix string, ids, per int) {
		for i := range per {
			for id := range ids {
				w.Create.Path = fmt.Sprintf("/bench/%s%d-%d", prefix, id, i)
				if r, _ := tree.Apply(TxnContext{Zxid: zxid, Auth: local}, w); r.Err != 0 {
					panic(fmt.Sprintf("create %s: %v", w.Create.Path, r.Err))
				}
				zxid++
			}
		}
	}
	mk("c", clients, perClient)
	mk("p", sessions, perSession)
	return tree
}

// BenchmarkSnapshotJob1M is the CPU a local snapshot's tree section costs
// at 1 M znodes (see trees1M): Freeze, then what the server's
// writeFrozenState does with the Frozen (SnapshotSize, then WriteSnapshot)
// into io.Discard, then Release; cpu-ns/op is the process's CPU time an
// op (the GC's included). The trees are built once per process
// (BenchmarkFrozenSnapshot1M rebuilds its tree on every b.N round).
func BenchmarkSnapshotJob1M(b *testing.B) {
	for _, shape := range trees1M {
		b.Run(shape.name, func(b *testing.B) {
			tree := shape.tree()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Process()
			defer func() {
				// The process's CPU time (GC included) per op: on a shared
				// machine, steadier than ns/op.
				b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			}()
			for i := 0; i < b.N; i++ {
				f := tree.Freeze()
				size, err := f.SnapshotSize()
				if err != nil {
					b.Fatal(err)
				}
				if err := f.WriteSnapshot(io.Discard); err != nil {
					b.Fatal(err)
				}
				f.Release()
				b.SetBytes(int64(size))
			}
		})
	}
}
