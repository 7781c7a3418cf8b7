package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestNewBuiltins(t *testing.T) {
	tree := mustNewTree(t)
	require.Equal(t, 4, tree.NodeCount())
	require.Equal(t, int64(len("/")+len("/zookeeper")+len("/zookeeper/quota")+len("/zookeeper/config")), tree.ApproximateDataSize())

	root, ok := tree.Exists("/")
	require.True(t, ok)
	require.Equal(t, jute.Stat{Cversion: -1, NumChildren: 1}, root)
	zk, _ := tree.Exists("/zookeeper")
	require.Equal(t, jute.Stat{Cversion: -2, NumChildren: 2}, zk)
	data, st, ok := tree.GetData("/zookeeper/config")
	require.True(t, ok)
	require.NotNil(t, data)
	require.Empty(t, data)
	require.Equal(t, jute.Stat{Aversion: -1}, st)
	a, _, _ := tree.GetACL("/zookeeper/config")
	require.Equal(t, []jute.ACL{acl(jute.PermRead, "world", "anyone")}, a)
	a, _, _ = tree.GetACL("/zookeeper/quota")
	require.Equal(t, open, a)
	kids, _, _ := tree.GetChildren("/zookeeper")
	require.Equal(t, []string{"config", "quota"}, kids)
	n, ok := tree.CountDescendants("/")
	require.True(t, ok)
	require.Equal(t, int32(3), n)
	n, _ = tree.CountDescendants("/zookeeper")
	require.Equal(t, int32(2), n)
	_, ok = tree.CountDescendants("/x")
	require.False(t, ok)
}

func TestCreateErrorPrecedence(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	setup := func(t *testing.T, ext bool) *client {
		tree := mustNewTree(t, Options{ExtendedTypesEnabled: ext})
		c := newClient(t, tree)
		c.mustCreate("/t")
		c.mustCreate("/a")
		c.create("/e", jute.FlagEphemeral, 0)
		r, _ := c.apply(createW(jute.OpCreate, "/locked", nil, []jute.ACL{acl(jute.PermAll, "digest", bob.ID)}, 0, 0))
		require.Zero(t, r.Err)
		return c
	}
	for _, tt := range []struct {
		name  string
		op    int32
		path  string
		acl   []jute.ACL
		flags int32
		ttl   int64
		ext   bool
		want  int32
	}{
		{"ok", jute.OpCreate, "/t/x", open, 0, 0, false, 0},
		{"bad flags", jute.OpCreate, "/t/x", open, 7, 0, false, jute.ErrBadArguments},
		{"negative flags", jute.OpCreate, "/t/x", open, -1, 0, false, jute.ErrBadArguments},
		{"bad flags beat bad path", jute.OpCreate, "t", nil, 9, 0, false, jute.ErrBadArguments},
		{"ttl mode while disabled", jute.OpCreateTTL, "/t/x", open, jute.FlagPersistentWithTTL, 100, false, jute.ErrUnimplemented},
		{"ttl disabled beats bad path", jute.OpCreateTTL, "x", nil, jute.FlagPersistentWithTTL, 100, false, jute.ErrUnimplemented},
		{"ttl mode on opcode 1", jute.OpCreate, "/t/x", open, jute.FlagPersistentWithTTL, 0, true, jute.ErrBadArguments},
		{"ttl mode on opcode 15", jute.OpCreate2, "/t/x", open, jute.FlagPersistentSequentialWithTTL, 0, true, jute.ErrBadArguments},
		{"non-ttl mode on opcode 21", jute.OpCreateTTL, "/t/x", open, 0, 100, true, jute.ErrBadArguments},
		{"non-ttl mode on opcode 21 while disabled", jute.OpCreateTTL, "/t/x", open, 0, 100, false, jute.ErrBadArguments},
		{"ttl 0", jute.OpCreateTTL, "/t/x", open, jute.FlagPersistentWithTTL, 0, true, jute.ErrBadArguments},
		{"ttl too big", jute.OpCreateTTL, "/t/x", open, jute.FlagPersistentWithTTL, 1 << 40, true, jute.ErrBadArguments},
		{"ttl max", jute.OpCreateTTL, "/t/x", open, jute.FlagPersistentWithTTL, 1<<40 - 1, true, 0},
		{"ttl ok", jute.OpCreateTTL, "/t/x", open, jute.FlagPersistentWithTTL, 1, true, 0},
		{"no slash", jute.OpCreate, "t", open, 0, 0, false, jute.ErrBadArguments},
		{"NUL", jute.OpCreate, "/t/a\x00", open, 0, 0, false, jute.ErrBadArguments},
		{"path beats acl", jute.OpCreate, "t", nil, 0, 0, false, jute.ErrBadArguments},
		{"bad acl", jute.OpCreate, "/t/x", nil, 0, 0, false, jute.ErrInvalidACL},
		{"acl beats missing parent", jute.OpCreate, "/nope/x", []jute.ACL{acl(31, "world", "x")}, 0, 0, false, jute.ErrInvalidACL},
		{"missing parent", jute.OpCreate, "/nope/x", open, 0, 0, false, jute.ErrNoNode},
		{"trailing slash", jute.OpCreate, "/t/", open, 0, 0, false, jute.ErrBadArguments},
		{"trailing slash, missing parent", jute.OpCreate, "/nope/", open, 0, 0, false, jute.ErrNoNode},
		{"double slash: parent lookup first", jute.OpCreate, "/a//b", open, 0, 0, false, jute.ErrNoNode},
		{"dot component: parent lookup first", jute.OpCreate, "/a/./b", open, 0, 0, false, jute.ErrNoNode},
		{"dot last", jute.OpCreate, "/a/.", open, 0, 0, false, jute.ErrBadArguments},
		{"bad char", jute.OpCreate, "/a/\x01", open, 0, 0, false, jute.ErrBadArguments},
		{"root", jute.OpCreate, "/", open, 0, 0, false, jute.ErrNodeExists},
		{"exists", jute.OpCreate, "/t", open, 0, 0, false, jute.ErrNodeExists},
		{"builtin exists", jute.OpCreate, "/zookeeper", open, 0, 0, false, jute.ErrNodeExists},
		{"no CREATE on parent", jute.OpCreate, "/locked/x", open, 0, 0, false, jute.ErrNoAuth},
		{"no CREATE beats exists", jute.OpCreate, "/locked/x", open, 0, 0, false, jute.ErrNoAuth},
		{"no CREATE beats bad full path", jute.OpCreate, "/locked/.", open, 0, 0, false, jute.ErrNoAuth},
		{"create under /zookeeper/config", jute.OpCreate, "/zookeeper/config/x", open, 0, 0, false, jute.ErrNoAuth},
		{"create under /zookeeper ok", jute.OpCreate, "/zookeeper/x", open, 0, 0, false, 0},
		{"under ephemeral", jute.OpCreate, "/e/x", open, 0, 0, false, jute.ErrNoChildrenForEphemerals},
		{"exists beats ephemeral parent", jute.OpCreate, "/e/x", open, 0, 0, false, jute.ErrNoChildrenForEphemerals},
		{"bad path beats ephemeral parent", jute.OpCreate, "/e/.", open, 0, 0, false, jute.ErrBadArguments},
		{"container under ephemeral", jute.OpCreateContainer, "/e/x", open, 0, 0, false, jute.ErrNoChildrenForEphemerals},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := setup(t, tt.ext)
			before := c.tree.Digest()
			r, ev := c.apply(createW(tt.op, tt.path, nil, tt.acl, tt.flags, tt.ttl))
			require.Equal(t, tt.want, r.Err)
			if tt.want != 0 {
				require.Empty(t, ev)
				require.Equal(t, Result{Err: tt.want}, r)
				require.Equal(t, before, c.tree.Digest(), "a failed create changed the tree")
			}
		})
	}
}

func TestCreateResultAndEvents(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	r, ev := c.apply(createW(jute.OpCreate2, "/a", []byte("hello"), open, 0, 0))
	require.Zero(t, r.Err)
	require.Equal(t, "/a", r.Path)
	want := jute.Stat{Czxid: c.zxid, Mzxid: c.zxid, Ctime: c.time, Mtime: c.time, DataLength: 5, Pzxid: c.zxid}
	require.Equal(t, want, r.Stat)
	require.Equal(t, want, c.stat("/a"))
	require.Equal(t, []Event{{jute.EventNodeCreated, "/a"}, {jute.EventNodeChildrenChanged, "/"}}, ev)

	r, ev = c.apply(createW(jute.OpCreate, "/a/b", nil, open, 0, 0))
	require.Zero(t, r.Err)
	require.Equal(t, []Event{{jute.EventNodeCreated, "/a/b"}, {jute.EventNodeChildrenChanged, "/a"}}, ev)
	data, st, _ := tree.GetData("/a/b")
	require.Nil(t, data, "null data stays null")
	require.Zero(t, st.DataLength)

	r, _ = c.apply(createW(jute.OpCreate, "/a/c", []byte{}, open, 0, 0))
	require.Zero(t, r.Err)
	data, _, _ = tree.GetData("/a/c")
	require.NotNil(t, data, "empty data stays empty")

	// Apply copies the data: the caller may reuse its buffer.
	buf := []byte("xyz")
	c.apply(createW(jute.OpCreate, "/a/d", buf, open, 0, 0))
	buf[0] = 'Q'
	data, _, _ = tree.GetData("/a/d")
	require.Equal(t, []byte("xyz"), data)
}

func TestSequentialNaming(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/t")
	c.mustCreate("/t/x")                  // C: 0 -> 1
	c.mustCreate("/t/y")                  // 1 -> 2
	require.Zero(t, c.delete("/t/y", -1)) // deletes keep C
	r := c.create("/t/a-", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/t/a-0000000002", r.Path)
	r = c.create("/t/a-", jute.FlagEphemeralSequential, 0)
	require.Equal(t, "/t/a-0000000003", r.Path)
	require.Equal(t, c.session, r.Stat.EphemeralOwner)
	r = c.create("/t/", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/t/0000000004", r.Path, "a trailing slash is fine for sequential creates")
	r = c.create("/s", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/s0000000001", r.Path, "root's C counts /t")

	// A failed create uses no number.
	c.create("/t/a-", 9, jute.ErrBadArguments)
	r = c.create("/t/a-", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/t/a-0000000005", r.Path)
}

func TestSequentialCounterWraps(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/t")
	tree.nodes.get("/t").creates = 2147483647
	r := c.create("/t/a-", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/t/a-2147483647", r.Path)
	r = c.create("/t/a-", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/t/a--2147483648", r.Path)
	// The wrapped counter is past the invariant check (C < 0 is skipped).
}

func TestCversionAndPzxid(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/t")
	created := c.zxid
	require.Equal(t, created, c.stat("/t").Pzxid, "a new node has pzxid = czxid")
	c.mustCreate("/t/a")
	c.mustCreate("/t/b")
	zb := c.zxid
	st := c.stat("/t")
	require.Equal(t, int32(2), st.Cversion)
	require.Equal(t, zb, st.Pzxid)
	require.Equal(t, created, st.Mzxid, "child changes leave mzxid alone")
	require.Zero(t, c.delete("/t/a", -1))
	st = c.stat("/t")
	require.Equal(t, int32(3), st.Cversion, "2 creates + 1 delete")
	require.Equal(t, int32(1), st.NumChildren)
	require.Equal(t, c.zxid, st.Pzxid)

	// On delete, pzxid moves only forward.
	c.mustCreate("/t/c")
	zc := c.zxid
	ctx := TxnContext{Zxid: zc - 5, Time: c.time, Auth: local}
	r, _ := tree.Apply(ctx, &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: "/t/b", Version: -1}})
	require.Zero(t, r.Err)
	require.Equal(t, zc, c.stat("/t").Pzxid)

	// setData and setACL leave the parent alone.
	c.setData("/t/c", []byte("x"), -1)
	c.setACL("/t/c", open, -1)
	require.Equal(t, zc, c.stat("/t").Pzxid)
}

func TestEphemerals(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/app")
	c.session = 7
	c.create("/app/e1", jute.FlagEphemeral, 0)
	c.create("/abc", jute.FlagEphemeral, 0)
	c.session = 9
	c.create("/app/e2", jute.FlagEphemeral, 0)
	c.create("/app/e2/x", 0, jute.ErrNoChildrenForEphemerals)
	c.session = 0
	c.create("/app/e0", jute.FlagEphemeral, jute.ErrBadArguments)

	require.Equal(t, int64(7), c.stat("/app/e1").EphemeralOwner)
	require.Equal(t, []int64{7, 9}, tree.EphemeralOwners())
	require.Equal(t, []string{"/abc", "/app/e1"}, tree.Ephemerals(7, ""))
	require.Equal(t, []string{"/abc", "/app/e1"}, tree.Ephemerals(7, "/"))
	require.Equal(t, []string{"/abc"}, tree.Ephemerals(7, "/ab"))
	require.Equal(t, []string{"/app/e1"}, tree.Ephemerals(7, "/app"))
	require.Empty(t, tree.Ephemerals(8, ""))

	appBefore := c.stat("/app")
	ev := tree.DeleteEphemerals(TxnContext{Zxid: 500, Time: 1}, 7)
	require.Equal(t, []Event{
		{jute.EventNodeDeleted, "/abc"}, {jute.EventNodeChildrenChanged, "/"},
		{jute.EventNodeDeleted, "/app/e1"}, {jute.EventNodeChildrenChanged, "/app"},
	}, ev)
	_, ok := tree.Exists("/app/e1")
	require.False(t, ok)
	st := c.stat("/app")
	require.Equal(t, int64(500), st.Pzxid)
	require.Equal(t, appBefore.Cversion+1, st.Cversion)
	require.Equal(t, []int64{9}, tree.EphemeralOwners())
	require.Empty(t, tree.DeleteEphemerals(TxnContext{Zxid: 501}, 7))
}

func TestContainerAndFlagFour(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	c := newClient(t, tree)
	// Opcode 19 makes a container whatever the flags.
	r, _ := c.apply(createW(jute.OpCreateContainer, "/c", nil, open, 0, 0))
	require.Zero(t, r.Err)
	require.Zero(t, r.Stat.EphemeralOwner, "containers report owner 0")
	require.Equal(t, kindContainer, tree.nodes.get("/c").kind)
	// Flag 4 on opcode 1 gives a persistent node.
	r, _ = c.apply(createW(jute.OpCreate, "/p", nil, open, jute.FlagContainer, 0))
	require.Zero(t, r.Err)
	require.Equal(t, kindPersistent, tree.nodes.get("/p").kind)
	// TTL nodes report owner 0 too.
	r, _ = c.apply(createW(jute.OpCreateTTL, "/ttl-", nil, open, jute.FlagPersistentSequentialWithTTL, 1000))
	require.Zero(t, r.Err)
	require.Equal(t, "/ttl-0000000002", r.Path)
	require.Zero(t, r.Stat.EphemeralOwner)
	require.Equal(t, kindTTL, tree.nodes.get(r.Path).kind)
	// Containers and TTL nodes may have children.
	c.mustCreate("/c/x")
	c.mustCreate(r.Path + "/x")
}
