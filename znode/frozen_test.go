package znode

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
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
			size, err := f.SnapshotSize()
			require.NoError(t, err)
			require.Equal(t, b.Len(), size)
		})
	}
}

// The snapshot length the tree keeps (snapshotSize, which SnapshotSize
// returns without a pass over the nodes) is the length WriteSnapshot
// writes, after every kind of write: creates of every kind, deletes,
// setData, setACL to ACLs of several entries and to none, multis rolled
// back, quota stats, SetConfig, session closes, and for trees made by
// ReadSnapshot and by Build with nodes of no ACL. A Frozen's SnapshotSize
// stays its own length while the tree changes after it.
func TestSnapshotSizeKept(t *testing.T) {
	for _, tt := range []struct {
		name string
		tree func(t *testing.T) *Tree
	}{
		{"fresh", func(t *testing.T) *Tree { return mustNewTree(t) }},
		{"random writes", func(t *testing.T) *Tree { tree, _ := frozenScenarioTree(t, 1); return tree }},
		{"other seed", func(t *testing.T) *Tree { tree, _ := frozenScenarioTree(t, 2); return tree }},
		{"sessions closed", func(t *testing.T) *Tree {
			tree, c := frozenScenarioTree(t, 3)
			for s := int64(1); s <= 3; s++ {
				tree.DeleteEphemerals(c.next(), s)
			}
			return tree
		}},
		{"read from a snapshot", func(t *testing.T) *Tree {
			tree, _ := frozenScenarioTree(t, 4)
			var b bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&b))
			read, err := ReadSnapshot(&b, Options{})
			require.NoError(t, err)
			mustCheckAtEnd(t, read)
			return read
		}},
		{"built, no ACLs", func(t *testing.T) *Tree {
			tree, err := Build(Options{}, []BuiltNode{{Path: "/", Data: []byte{}, Creates: 1},
				{Path: "/x", Data: []byte("abc"), Creates: 1}, {Path: "/x/y", ACL: open}})
			require.NoError(t, err)
			mustCheckAtEnd(t, tree)
			return tree
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := tt.tree(t)
			var b bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&b))
			require.Equal(t, int64(b.Len()), tree.snapshotSize())
			require.NoError(t, tree.Check())

			f := tree.Freeze()
			defer f.Release()
			want := b.Len()
			randomWorkload(t, tree, 9, 200)
			b.Reset()
			require.NoError(t, tree.WriteSnapshot(&b))
			require.Equal(t, int64(b.Len()), tree.snapshotSize(), "after more writes")
			require.NotEqual(t, want, b.Len(), "the writes changed the length")
			require.Equal(t, want, len(frozenBytes(t, f)), "the frozen tree's length")
		})
	}
}

// deepFreeze is what Freeze did before it was copy-on-write: a copy of
// every node's path and meta.
func deepFreeze(tree *Tree) []*node {
	nodes := make([]*node, 0, tree.nodes.len())
	for n := range tree.nodes.all() {
		nodes = append(nodes, &node{meta: n.meta}) // pd is never mutated: shared
	}
	return nodes
}

// frozenBytes returns f's snapshot, and checks SnapshotSize against it.
func frozenBytes(t *testing.T, f *Frozen) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, f.WriteSnapshot(&b))
	size, err := f.SnapshotSize()
	require.NoError(t, err)
	require.Equal(t, b.Len(), size)
	return b.Bytes()
}

// requireSameSnapshot compares two snapshots, reporting the first
// difference only (a full diff of snapshots is unreadable).
func requireSameSnapshot(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < min(len(want), len(got)) && want[i] == got[i] {
		i++
	}
	t.Fatalf("snapshots differ at byte %d (lengths %d and %d): want %q, got %q",
		i, len(want), len(got), want[i:min(i+40, len(want))], got[i:min(i+40, len(got))])
}

// wantFrozen returns the snapshot of a deep copy of tree's nodes taken now.
func wantFrozen(t *testing.T, tree *Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, writeSnapshot(&b, deepFreeze(tree), nil))
	var live bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&live))
	require.Equal(t, b.Bytes(), live.Bytes())
	return b.Bytes()
}

// frozenScenarioTree returns a tree after a random workload, with a quota
// on /q (whose stats node changes through save) and /zookeeper/config set.
func frozenScenarioTree(t *testing.T, seed int64) (*Tree, *client) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", nil, 0) // untouched by randomWorkload
	c.setQuota("/q", 10)
	c.mk("/q/n", []byte("12345"), 0)
	tree.SetConfig(c.next(), []byte("server.1=a:1:2"))
	randomWorkload(t, tree, seed, 200)
	c.zxid = 1 << 40 // after randomWorkload's zxids
	return tree, c
}

// A Frozen writes the bytes a deep copy of the tree taken at Freeze writes,
// whatever writes follow (creates, deletes, setData, setACL, multis rolled
// back, expiry, session closes, quota stats, SetConfig), with several
// freezes active at once and released in any order.
func TestFrozenCopyOnWriteMatchesDeepCopy(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tree, c := frozenScenarioTree(t, seed)
			want1 := wantFrozen(t, tree)
			f1 := tree.Freeze()

			// A multi that changes frozen nodes and rolls back.
			r, _ := c.apply(multiW(opSetData("/q", "x", -1), opSetData("/zookeeper/quota/q/zookeeper_stats", "s", -1), opCheck("/q", 99)))
			require.Equal(t, jute.ErrBadVersion, r.Multi[2].Err, "%+v", r.Multi)
			tree.SetConfig(c.next(), []byte("server.1=b:1:2"))
			c.setData("/q", []byte("y"), -1)
			randomWorkload(t, tree, seed+100, 150)

			want2 := wantFrozen(t, tree)
			f2 := tree.Freeze()
			randomWorkload(t, tree, seed+200, 150)
			tree.SetConfig(c.next(), nil)
			if seed%2 == 0 { // f1 written and released first
				requireSameSnapshot(t, want1, frozenBytes(t, f1))
				f1.Release()
				randomWorkload(t, tree, seed+300, 100)
				requireSameSnapshot(t, want2, frozenBytes(t, f2))
				f2.Release()
			} else {
				requireSameSnapshot(t, want2, frozenBytes(t, f2))
				f2.Release()
				randomWorkload(t, tree, seed+300, 100)
				requireSameSnapshot(t, want1, frozenBytes(t, f1))
				f1.Release()
			}
			c.setData("/q", []byte("z"), -1)
			for _, st := range tree.freezes { // not pruned yet, but empty
				require.True(t, st.released.Load())
				require.Nil(t, st.saved)
			}
			f3 := tree.Freeze() // prunes the released freezes
			require.Len(t, tree.freezes, 1)
			f3.Release()
			require.ErrorIs(t, f1.WriteSnapshot(&bytes.Buffer{}), ErrReleased)
		})
	}
}

// SetConfig saves the config node before changing it, as every write of a
// node's meta must: a Frozen taken before shows the old configuration.
func TestFrozenSetConfig(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	tree.SetConfig(c.next(), []byte("server.1=a:1:2"))
	want := wantFrozen(t, tree)
	f := tree.Freeze()
	defer f.Release()
	tree.SetConfig(c.next(), []byte("server.1=b:1:2"))
	requireSameSnapshot(t, want, frozenBytes(t, f))
}

// Encoders run on their own goroutines while the tree is written: the
// race detector (go test -race) checks the copy-on-write protocol, and the
// bytes are those of the tree at each Freeze.
func TestFrozenEncodersRaceWithWrites(t *testing.T) {
	tree, c := frozenScenarioTree(t, 9)
	for i := range 500 {
		c.mk(fmt.Sprintf("/b%d", i), []byte("data"), 0)
	}
	type job struct {
		want []byte
		got  chan []byte
	}
	var jobs []job
	for i := range 3 {
		j := job{want: wantFrozen(t, tree), got: make(chan []byte, 1)}
		f := tree.Freeze()
		go func() {
			defer f.Release()
			var b bytes.Buffer
			if err := f.WriteSnapshot(&b); err != nil {
				b.Reset()
			}
			j.got <- b.Bytes()
		}()
		jobs = append(jobs, j)
		for k := range 500 {
			c.setData(fmt.Sprintf("/b%d", k), []byte{byte(i)}, -1)
			if k%3 == i {
				require.Zero(t, c.delete(fmt.Sprintf("/b%d", k), -1))
				c.mk(fmt.Sprintf("/b%d", k), nil, 0)
			}
		}
		randomWorkload(t, tree, int64(10+i), 100)
	}
	for _, j := range jobs {
		requireSameSnapshot(t, j.want, <-j.got)
	}
}

// Freeze copies no node: freezing 100k znodes allocates the pointer slice
// and a few small objects (the copying Freeze allocated 144 bytes a node).
func TestFreezeAllocatesNoNodeCopies(t *testing.T) {
	if checkEveryWrite {
		// scaleTree's writes would each run Check: quadratic.
		t.Skip("allocation test; -tags invariants checks the tree after every write")
	}
	tree := scaleTree(100000)
	n := tree.NodeCount()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f := tree.Freeze()
	runtime.ReadMemStats(&after)
	f.Release()
	alloc := after.TotalAlloc - before.TotalAlloc
	limit := uint64(8*n + 64<<10)
	require.LessOrEqual(t, alloc, limit, "Freeze of %d nodes allocated %d bytes", n, alloc)
}

// A Frozen dropped without Release is released once the garbage collector
// finds it unreachable: the tree stops saving copies for it.
func TestFrozenDroppedIsReleased(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/a", nil, 0)
	func() { _ = tree.Freeze() }()
	require.Len(t, tree.freezes, 1)
	st := tree.freezes[0]
	for i := 0; i < 100 && !st.released.Load(); i++ {
		runtime.GC()
		runtime.Gosched()
	}
	require.True(t, st.released.Load(), "cleanup did not run")
	c.setData("/a", []byte("x"), -1)
	require.Empty(t, tree.freezes)
}

// gcWriter collects garbage on every write, so that a cleanup due while a
// snapshot is being written runs then.
type gcWriter struct{ bytes.Buffer }

func (w *gcWriter) Write(p []byte) (int, error) {
	for range 5 {
		runtime.GC()
		runtime.Gosched()
	}
	return w.Buffer.Write(p)
}

// A Frozen is not released by its cleanup while it is being written, even
// when nothing refers to it any more but the running WriteSnapshot.
func TestFrozenNotReleasedWhileWriting(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	const n = 3000
	for i := range n {
		c.mk(fmt.Sprintf("/n%05d", i), make([]byte, 100), 0)
	}
	want := wantFrozen(t, tree)
	f := tree.Freeze()
	for i := range n {
		c.setData(fmt.Sprintf("/n%05d", i), []byte("changed"), -1)
	}
	var w gcWriter
	require.NoError(t, f.WriteSnapshot(&w)) // the last use of f
	requireSameSnapshot(t, want, w.Bytes())
}

// A node fits the 96-byte allocation size class (copy-on-write freezing
// adds no field to it): at a million znodes each 8 bytes more would move
// nodes to the 112-byte class (16 MB).
func TestNodeSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(node{}), uintptr(96))
}

// A freeze released while its snapshot is being written (here by the
// writer itself, after the first chunk) makes the write fail with
// ErrReleased instead of going on with live metas, later than the freeze.
func TestFrozenReleasedMidWriteFails(t *testing.T) {
	tree := scaleTree(3000)
	f := tree.Freeze()
	w := &releasingWriter{release: f.Release}
	err := f.WriteSnapshot(w)
	require.ErrorIs(t, err, ErrReleased)
}

type releasingWriter struct {
	release func()
	n       int
}

func (w *releasingWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		w.release()
	}
	w.n += len(p)
	return len(p), nil
}

// hookWriter runs hook (once) at its first Write, then collects the bytes;
// before is how many bytes that first Write carried.
type hookWriter struct {
	bytes.Buffer
	hook   func()
	before int
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.hook != nil {
		w.before = len(p)
		w.hook()
		w.hook = nil
	}
	return w.Buffer.Write(p)
}

// Nodes changed while a Frozen is being written, after the metas of the
// first batches were copied and before those of the later ones, still
// appear as they were at the freeze, whichever batch (metasOf, up to
// metaBatch nodes a hold of the mutex) they fall in: the first save since
// the freeze happens mid-write, so a batch taken before it and one taken
// after it are both checked. The writes here run on the encoder's
// goroutine, between two of its batches, so the test is deterministic.
func TestFrozenNodesChangedMidWrite(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	const n = 3000 // 300 KB of snapshot: the first Write comes after 64 KB
	for i := range n {
		c.mk(fmt.Sprintf("/n%05d", i), make([]byte, 100), 0)
	}
	want := wantFrozen(t, tree)
	f := tree.Freeze()
	defer f.Release()
	w := &hookWriter{hook: func() {
		require.Empty(t, f.st.saved, "no save before the write started")
		for i := 0; i < n; i += 7 {
			p := fmt.Sprintf("/n%05d", i)
			if i%2 == 0 {
				c.setData(p, []byte("changed"), -1)
			} else {
				require.Zero(t, c.delete(p, -1))
			}
		}
		c.mk("/n99999", []byte("new"), 0)
	}}
	require.NoError(t, f.WriteSnapshot(w))
	require.Nil(t, w.hook, "the hook ran")
	// The hook ran at the first Write: it must come early enough that most
	// batches are copied after the saves, or the test checks nothing.
	require.Less(t, w.before, len(want)/2, "the first Write came after half the snapshot was encoded")
	requireSameSnapshot(t, want, w.Bytes())
}
