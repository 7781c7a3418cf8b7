package znode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// randomWorkload applies n seeded random writes (all kinds, many failing)
// to tree, checking the invariants after each, and returns the results.
func randomWorkload(t testing.TB, tree *Tree, seed int64, n int) []Result {
	rng := rand.New(rand.NewSource(seed))
	paths := []string{"/a", "/b", "/c"}
	pick := func() string { return paths[rng.Intn(len(paths))] }
	acls := [][]jute.ACL{
		open,
		{acl(jute.PermAll, "ip", "127.0.0.0/8")},
		{acl(jute.PermRead|jute.PermCreate|jute.PermDelete, "world", "anyone"), acl(jute.PermAll, "digest", "bob:x")},
		nil,
	}
	var out []Result
	zxid, now := int64(1), int64(1_000_000)
	for n := range tree.nodes.all() { // continue after the tree's zxids and times
		zxid = max(zxid, n.czxid, n.mzxid, n.pzxid)
		now = max(now, n.mtime)
	}
	for _, p := range paths {
		zxid++
		tree.Apply(TxnContext{Zxid: zxid, Time: now, Auth: local}, createW(jute.OpCreate, p, nil, open, 0, 0))
	}
	randCreate := func() (int32, *jute.CreateTTLRequest) {
		op := []int32{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL}[rng.Intn(4)]
		flags := int32(rng.Intn(10)) - 3
		if flags < 0 {
			flags = 0
		}
		var data []byte
		if rng.Intn(4) > 0 {
			data = make([]byte, rng.Intn(20))
			rng.Read(data)
		}
		name := fmt.Sprintf("%s/%c", pick(), 'a'+rng.Intn(6))
		if rng.Intn(5) == 0 {
			name = pick() + "/s-"
		}
		return op, &jute.CreateTTLRequest{Path: name, Data: data, ACL: acls[rng.Intn(len(acls))%3], Flags: flags, TTL: int64(rng.Intn(3000))}
	}
	for i := 0; i < n; i++ {
		zxid++
		now += int64(rng.Intn(500))
		ctx := TxnContext{Zxid: zxid, Time: now, SessionID: int64(1 + rng.Intn(3)), Auth: local}
		var w *Write
		switch k := rng.Intn(10); {
		case k < 4:
			op, c := randCreate()
			w = &Write{Type: op, Create: c}
		case k < 5:
			w = &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: pick(), Version: int32(rng.Intn(3)) - 1}}
		case k < 6:
			w = &Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: pick(), Data: []byte{byte(i)}, Version: -1}}
		case k < 7:
			w = &Write{Type: jute.OpSetACL, SetACL: &jute.SetACLRequest{Path: pick(), ACL: acls[rng.Intn(len(acls))], Version: -1}}
		case k < 8:
			var ops []jute.MultiOp
			for j := rng.Intn(4); j >= 0; j-- {
				switch rng.Intn(4) {
				case 0:
					op, c := randCreate()
					if op == jute.OpCreateTTL {
						ops = append(ops, jute.MultiOp{Type: op, CreateTTL: c})
					} else {
						ops = append(ops, jute.MultiOp{Type: op, Create: &jute.CreateRequest{Path: c.Path, Data: c.Data, ACL: c.ACL, Flags: c.Flags}})
					}
				case 1:
					ops = append(ops, opDelete(pick(), -1))
				case 2:
					ops = append(ops, opSetData(pick(), "m", -1))
				case 3:
					ops = append(ops, opCheck(pick(), int32(rng.Intn(2))-1))
				}
			}
			w = multiW(ops...)
		case k < 9:
			tree.DeleteEphemerals(ctx, ctx.SessionID)
			continue
		default:
			cont, ttls := tree.ExpiryCandidates(now)
			for _, p := range cont {
				out = append(out, apply1(tree, &ctx, &Write{Type: jute.OpDeleteContainer, Path: p}))
			}
			for _, p := range ttls {
				out = append(out, apply1(tree, &ctx, &Write{Type: OpDeleteTTL, Path: p}))
			}
			continue
		}
		r := apply1(tree, &ctx, w)
		if r.Err == 0 && r.Path != "" && rng.Intn(2) == 0 {
			paths = append(paths, r.Path)
		}
		for _, m := range r.Multi {
			if m.Path != "" {
				paths = append(paths, m.Path)
			}
		}
		out = append(out, r)
		if err := tree.Check(); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, i, err)
		}
	}
	return out
}

func apply1(tree *Tree, ctx *TxnContext, w *Write) Result {
	r, _ := tree.Apply(*ctx, w)
	ctx.Zxid++
	return r
}

// requireSameTree compares everything the read API shows.
func requireSameTree(t *testing.T, want, got *Tree) {
	t.Helper()
	require.Equal(t, want.Digest(), got.Digest())
	require.Equal(t, want.NodeCount(), got.NodeCount())
	require.Equal(t, want.ApproximateDataSize(), got.ApproximateDataSize())
	require.Equal(t, want.EphemeralOwners(), got.EphemeralOwners())
	for n := range want.nodes.all() {
		p := n.path()
		g := got.nodes.get(p)
		require.NotNil(t, g, p)
		// pd is compared by content (path and data), the children by
		// their names (childSet's slot order follows addresses).
		require.Equal(t, n.data(), g.data(), p)
		wm, gm := n.meta, g.meta
		wm.pd, gm.pd = nil, nil
		require.Equal(t, wm, gm, p)
		wantChildren, _, _ := want.GetChildren(p)
		gotChildren, _, _ := got.GetChildren(p)
		require.Equal(t, wantChildren, gotChildren, p)
	}
	for _, now := range []int64{0, 1 << 40} {
		wc, wt := want.ExpiryCandidates(now)
		gc, gt := got.ExpiryCandidates(now)
		require.Equal(t, wc, gc)
		require.Equal(t, wt, gt)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			opts := Options{ExtendedTypesEnabled: seed%2 == 1}
			tree := mustNewTree(t, opts)
			randomWorkload(t, tree, seed, 800)
			require.Greater(t, tree.NodeCount(), 20)

			var buf bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&buf))
			got, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), opts)
			require.NoError(t, err)
			mustCheckAtEnd(t, got)
			requireSameTree(t, tree, got)

			var again bytes.Buffer
			require.NoError(t, got.WriteSnapshot(&again))
			require.Equal(t, buf.Bytes(), again.Bytes(), "equal trees give equal bytes")

			// Both trees go on identically.
			r1 := randomWorkload(t, tree, seed+100, 200)
			r2 := randomWorkload(t, got, seed+100, 200)
			require.Equal(t, r1, r2)
			requireSameTree(t, tree, got)
		})
	}
}

func TestDeterminism(t *testing.T) {
	a, b := mustNewTree(t, Options{ExtendedTypesEnabled: true}), mustNewTree(t, Options{ExtendedTypesEnabled: true})
	ra := randomWorkload(t, a, 42, 1000)
	rb := randomWorkload(t, b, 42, 1000)
	require.Equal(t, ra, rb)
	requireSameTree(t, a, b)
	c := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	randomWorkload(t, c, 43, 1000)
	require.NotEqual(t, a.Digest(), c.Digest())
}

func TestSnapshotFreshTree(t *testing.T) {
	tree := mustNewTree(t)
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	got, err := ReadSnapshot(&buf, Options{})
	require.NoError(t, err)
	mustCheckAtEnd(t, got)
	requireSameTree(t, tree, got)
	st, _ := got.Exists("/zookeeper")
	require.Equal(t, int32(-2), st.Cversion)
}

func TestSnapshotCorrupt(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	randomWorkload(t, tree, 7, 60)
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	good := buf.Bytes()

	// Every truncation fails.
	for n := 0; n < len(good); n++ {
		_, err := ReadSnapshot(bytes.NewReader(good[:n]), Options{})
		require.Error(t, err, "truncated to %d", n)
		require.True(t, errors.Is(err, ErrCorruptSnapshot), "truncated to %d: %v", n, err)
	}
	// Every single-bit flip fails (CRC-32C catches them all).
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		bad := bytes.Clone(good)
		pos := rng.Intn(len(bad))
		bad[pos] ^= 1 << rng.Intn(8)
		_, err := ReadSnapshot(bytes.NewReader(bad), Options{})
		require.Error(t, err, "bit flip at %d", pos)
	}
	// Random garbage never panics.
	for i := 0; i < 500; i++ {
		bad := make([]byte, rng.Intn(200))
		rng.Read(bad)
		if rng.Intn(2) == 0 && len(bad) >= 8 {
			copy(bad, snapMagic)
		}
		_, err := ReadSnapshot(bytes.NewReader(bad), Options{})
		require.Error(t, err)
	}
}

// TestSnapshotStructureChecks builds structurally bad snapshots with a valid
// checksum and expects each to be refused.
func TestSnapshotStructureChecks(t *testing.T) {
	build := func(nodes ...*node) []byte {
		b := append([]byte(nil), snapMagic...)
		b = append(b, 0, 0, 0, 0, 0, 0, 0, byte(len(nodes)))
		for _, n := range nodes {
			b = appendNode(b, &n.meta)
		}
		crc := crcOf(b)
		return append(b, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	}
	root := func() *node { return tn("/", meta{acl: &aclList{entries: open}}) }
	for _, tt := range []struct {
		name  string
		nodes []*node
	}{
		{"empty", nil},
		{"no root first", []*node{tn("/a", meta{}), root()}},
		{"orphan", []*node{root(), tn("/a/b", meta{})}},
		{"duplicate", []*node{root(), tn("/a", meta{}), tn("/a", meta{})}},
		{"duplicate after a step back", []*node{root(), tn("/b", meta{}), tn("/a", meta{}), tn("/b", meta{})}},
		{"duplicate root", []*node{root(), tn("/a", meta{}), root()}},
		{"out of order, then a bad counter", []*node{root(), tn("/b", meta{}), tn("/a", meta{czxid: 5})}},
		{"bad path", []*node{root(), tn("/a/", meta{})}},
		{"bad kind", []*node{root(), tn("/a", meta{kind: 9})}},
		{"ephemeral without owner", []*node{root(), tn("/a", meta{kind: kindEphemeral})}},
		{"owner on persistent", []*node{root(), tn("/a", meta{ext: 5})}},
		{"ttl without ttl", []*node{root(), tn("/a", meta{kind: kindTTL})}},
		{"ttl too big", []*node{root(), tn("/a", meta{kind: kindTTL, ext: 1 << 40})}},
		{"child of ephemeral", []*node{root(), tn("/a", meta{kind: kindEphemeral, ext: 1}), tn("/a/b", meta{})}},
		{"pzxid below child czxid", []*node{root(), tn("/a", meta{czxid: 5, creates: 1})}},
		{"counter below children", []*node{root(), tn("/a", meta{})}},
		{"ephemeral root", []*node{tn("/", meta{kind: kindEphemeral, ext: 1})}},
	} {
		_, err := ReadSnapshot(bytes.NewReader(build(tt.nodes...)), Options{})
		require.Error(t, err, tt.name)
		require.True(t, errors.Is(err, ErrCorruptSnapshot), "%s: %v", tt.name, err)
	}
	// Out of path order (no writer makes one, but the format allows it)
	// reads too, parents first.
	got, err := ReadSnapshot(bytes.NewReader(build(tn("/", meta{acl: &aclList{entries: open}, creates: 2}),
		tn("/b", meta{acl: &aclList{entries: open}, creates: 1}), tn("/a", meta{}), tn("/b/c", meta{}))), Options{})
	require.NoError(t, err)
	require.Equal(t, 4, got.NodeCount())
	// The minimal valid snapshot: just the root.
	got, err = ReadSnapshot(bytes.NewReader(build(root())), Options{})
	require.NoError(t, err)
	require.Equal(t, 1, got.NodeCount())
}

// Reading a snapshot allocates per node only the node, its path and its
// data: open ACLs share the tree's, other ACLs' scheme and id strings are
// one copy per distinct value, and strings are not read through an
// intermediate []byte (9 allocations a node before, 3 now).
func TestReadSnapshotAllocations(t *testing.T) {
	digest := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "digest", ID: "app:x1CQ5VtJ1ug2YpJBJlnJiQBN3Ak="}}}
	tests := []struct {
		name string
		acl  []jute.ACL
	}{
		{"open ACL", open},
		{"digest ACL", digest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := mustNewTree(t)
			const nodes = 2000
			c := newClient(t, tree)
			if r, _ := c.apply(createW(jute.OpCreate, "/p", nil, open, 0, 0)); r.Err != 0 {
				t.Fatal(r.Err)
			}
			for i := range nodes {
				if r, _ := c.apply(createW(jute.OpCreate, fmt.Sprintf("/p/n%d", i), make([]byte, 100), tt.acl, 0, 0)); r.Err != 0 {
					t.Fatal(r.Err)
				}
			}
			var buf bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&buf))
			var got *Tree
			allocs := testing.AllocsPerRun(3, func() {
				var err error
				got, err = ReadSnapshot(bytes.NewReader(buf.Bytes()), Options{})
				require.NoError(t, err)
			})
			require.LessOrEqual(t, allocs/nodes, readSnapshotAllocsPerNode, "%.0f allocations for %d nodes", allocs, nodes)
			a, b := got.nodes.get("/p/n1").acl.list(), got.nodes.get("/p/n2").acl.list()
			require.Equal(t, tt.acl, a)
			require.Same(t, unsafe.StringData(a[0].ID.ID), unsafe.StringData(b[0].ID.ID), "ACL ids interned")
		})
	}
}

// ReadSnapshotBytes agrees with ReadSnapshot on every input: valid
// snapshots (the same tree), truncations, bit flips, trailing bytes and
// garbage (both refuse, with ErrCorruptSnapshot).
func TestReadSnapshotBytesAgrees(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	randomWorkload(t, tree, 11, 200)
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	good := buf.Bytes()
	rng := rand.New(rand.NewSource(2))
	inputs := map[string][]byte{"valid": good, "trailing bytes": append(bytes.Clone(good), 1, 2, 3), "nil": nil, "empty": {}}
	for n := 0; n < len(good); n += 1 + n/50 {
		inputs[fmt.Sprintf("truncated to %d", n)] = good[:n]
	}
	for i := 0; i < 300; i++ {
		bad := bytes.Clone(good)
		pos := rng.Intn(len(bad))
		bad[pos] ^= 1 << rng.Intn(8)
		inputs[fmt.Sprintf("bit flip %d at %d", i, pos)] = bad
	}
	for i := 0; i < 100; i++ {
		bad := make([]byte, rng.Intn(200))
		rng.Read(bad)
		if len(bad) >= 8 {
			copy(bad, snapMagic)
		}
		inputs[fmt.Sprintf("garbage %d", i)] = bad
	}
	for name, in := range inputs {
		want, wantErr := ReadSnapshot(bytes.NewReader(in), Options{})
		got, err := ReadSnapshotBytes(in, Options{})
		if wantErr != nil {
			require.Error(t, err, name)
			require.ErrorIs(t, err, ErrCorruptSnapshot, name)
			continue
		}
		require.NoError(t, err, name)
		var a, b bytes.Buffer
		require.NoError(t, want.WriteSnapshot(&a))
		require.NoError(t, got.WriteSnapshot(&b))
		require.Equal(t, a.Bytes(), b.Bytes(), name)
	}
}

// A corrupt length in a snapshot read from memory fails at once, without
// allocating what the length claims (the restore path reads a raft
// payload in memory): a data length of 4 GB - 1 after a valid node.
func TestReadSnapshotBytesCorruptLengthAllocatesLittle(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	r, _ := c.apply(createW(jute.OpCreate, "/big", make([]byte, 200<<10), open, 0, 0))
	require.Zero(t, r.Err)
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	b := buf.Bytes()
	// The 200 KiB value's length field precedes it: make it claim 4 GB - 1.
	i := bytes.Index(b, binary.BigEndian.AppendUint32(nil, 200<<10))
	require.Positive(t, i)
	binary.BigEndian.PutUint32(b[i:], 0xfffffffe)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadSnapshotBytes(b, Options{})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrCorruptSnapshot)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(b)), "allocated more than the input holds")
}
