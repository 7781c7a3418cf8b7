package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestContainerExpiry(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	r, _ := c.apply(createW(jute.OpCreateContainer, "/used", nil, open, 0, 0))
	require.Zero(t, r.Err)
	c.apply(createW(jute.OpCreateContainer, "/never", nil, open, 0, 0))
	c.mustCreate("/used/child")
	c.mustCreate("/plain")
	cont, ttls := tree.ExpiryCandidates(c.time)
	require.Empty(t, cont, "a container with a child is no candidate")
	require.Empty(t, ttls)

	require.Zero(t, c.delete("/used/child", -1))
	cont, _ = tree.ExpiryCandidates(c.time)
	require.Equal(t, []string{"/used"}, cont, "a never-used container stays")

	del := func(op int32, path string) (Result, []Event) {
		return c.apply(&Write{Type: op, Path: path})
	}
	// Re-checked at apply: a child appeared meanwhile.
	c.mustCreate("/used/again")
	r, ev := del(jute.OpDeleteContainer, "/used")
	require.Equal(t, jute.ErrNotEmpty, r.Err)
	require.Empty(t, ev)
	require.Zero(t, c.delete("/used/again", -1))

	for _, tt := range []struct {
		op   int32
		path string
		want int32
	}{
		{jute.OpDeleteContainer, "/never", jute.ErrBadArguments},
		{jute.OpDeleteContainer, "/plain", jute.ErrBadArguments},
		{jute.OpDeleteContainer, "/missing", jute.ErrNoNode},
		{jute.OpDeleteContainer, "/zookeeper", jute.ErrBadArguments},
		{jute.OpDeleteContainer, "nope", jute.ErrBadArguments},
		{OpDeleteTTL, "/used", jute.ErrBadArguments},
	} {
		r, ev := del(tt.op, tt.path)
		require.Equal(t, tt.want, r.Err, "%d %q", tt.op, tt.path)
		require.Empty(t, ev)
	}
	r, ev = del(jute.OpDeleteContainer, "/used")
	require.Zero(t, r.Err)
	require.Equal(t, []Event{{jute.EventNodeDeleted, "/used"}, {jute.EventNodeChildrenChanged, "/"}}, ev)
	require.Equal(t, c.zxid, c.stat("/").Pzxid)
	cont, _ = tree.ExpiryCandidates(c.time)
	require.Empty(t, cont)
}

func TestTTLExpiry(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	c := newClient(t, tree)
	mk := func(path string, ttl int64) {
		r, _ := c.apply(createW(jute.OpCreateTTL, path, nil, open, jute.FlagPersistentWithTTL, ttl))
		require.Zero(t, r.Err)
	}
	mk("/b", 1000)
	mk("/a", 1000)
	mk("/long", 1_000_000)
	mk("/parent", 1000)
	c.mustCreate("/parent/kid")
	created := c.stat("/a").Mtime
	createdB := c.stat("/b").Mtime
	require.Less(t, createdB, created)

	_, ttls := tree.ExpiryCandidates(createdB + 1000)
	require.Empty(t, ttls, "not yet: now - mtime must exceed ttl")
	_, ttls = tree.ExpiryCandidates(createdB + 1001)
	require.Equal(t, []string{"/b"}, ttls)
	_, ttls = tree.ExpiryCandidates(created + 1001)
	require.Equal(t, []string{"/a", "/b"}, ttls)

	// setData resets the clock: the deletion re-checks and fails.
	require.Zero(t, c.setData("/b", []byte("x"), -1).Err)
	ctx := TxnContext{Zxid: c.zxid + 1, Time: created + 1001}
	c.zxid++
	r, ev := tree.Apply(ctx, &Write{Type: OpDeleteTTL, Path: "/b"})
	require.Equal(t, jute.ErrBadArguments, r.Err)
	require.Empty(t, ev)

	c.zxid++
	r, ev = tree.Apply(TxnContext{Zxid: c.zxid, Time: created + 1001}, &Write{Type: OpDeleteTTL, Path: "/a"})
	require.Zero(t, r.Err)
	require.Equal(t, []Event{{jute.EventNodeDeleted, "/a"}, {jute.EventNodeChildrenChanged, "/"}}, ev)
	c.zxid++
	r, _ = tree.Apply(TxnContext{Zxid: c.zxid, Time: created + 1_000_000}, &Write{Type: OpDeleteTTL, Path: "/parent"})
	require.Equal(t, jute.ErrNotEmpty, r.Err)
	c.zxid++
	r, _ = tree.Apply(TxnContext{Zxid: c.zxid, Time: created + 1_000_000}, &Write{Type: jute.OpDeleteContainer, Path: "/long"})
	require.Equal(t, jute.ErrBadArguments, r.Err, "deleteContainer does not take TTL nodes")
}
