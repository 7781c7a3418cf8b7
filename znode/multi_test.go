package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func opCreate(typ int32, path string, flags int32) jute.MultiOp {
	return jute.MultiOp{Type: typ, Create: &jute.CreateRequest{Path: path, Data: []byte("v"), ACL: open, Flags: flags}}
}

func opDelete(path string, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: path, Version: version}}
}

func opSetData(path string, data string, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: path, Data: []byte(data), Version: version}}
}

func opCheck(path string, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCheck, Check: &jute.CheckVersionRequest{Path: path, Version: version}}
}

func multiW(ops ...jute.MultiOp) *Write {
	return &Write{Type: jute.OpMulti, Multi: &jute.MultiRequest{Ops: ops}}
}

func TestMultiSuccess(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	c := newClient(t, tree)
	c.mustCreate("/t")
	c.mustCreate("/t/old")
	r, ev := c.apply(multiW(
		opCreate(jute.OpCreate, "/t/a", 0),
		opSetData("/t/a", "new", 0), // sees the create
		opCreate(jute.OpCreate2, "/t/s-", jute.FlagPersistentSequential),
		opCreate(jute.OpCreate, "/t/s-", jute.FlagPersistentSequential), // consecutive numbers
		opCheck("/t/a", 1),
		opDelete("/t/old", 0),
		opCreate(jute.OpCreateContainer, "/t/c", 0),
		jute.MultiOp{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: "/t/ttl", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 5}},
	))
	zxid, now := c.zxid, c.time
	require.Zero(t, r.Err)
	require.Len(t, r.Multi, 8)
	require.Equal(t, jute.MultiResult{Type: jute.OpCreate, Path: "/t/a"}, r.Multi[0])
	require.Equal(t, int32(jute.OpSetData), r.Multi[1].Type)
	require.Equal(t, int32(1), r.Multi[1].Stat.Version)
	require.Equal(t, int32(jute.OpCreate2), r.Multi[2].Type)
	require.Equal(t, "/t/s-0000000002", r.Multi[2].Path)
	require.Equal(t, zxid, r.Multi[2].Stat.Czxid)
	require.Equal(t, jute.MultiResult{Type: jute.OpCreate, Path: "/t/s-0000000003"}, r.Multi[3])
	require.Equal(t, jute.MultiResult{Type: jute.OpCheck}, r.Multi[4])
	require.Equal(t, jute.MultiResult{Type: jute.OpDelete}, r.Multi[5])
	require.Equal(t, int32(jute.OpCreate2), r.Multi[6].Type, "createContainer answers type 15")
	require.Equal(t, int32(jute.OpCreate2), r.Multi[7].Type, "createTTL answers type 15")

	// One zxid and time for all ops.
	for _, p := range []string{"/t/a", "/t/s-0000000002", "/t/c", "/t/ttl"} {
		st := c.stat(p)
		require.Equal(t, zxid, st.Czxid, p)
		require.Equal(t, now, st.Ctime, p)
	}
	require.Equal(t, []Event{
		{jute.EventNodeCreated, "/t/a"}, {jute.EventNodeChildrenChanged, "/t"},
		{jute.EventNodeDataChanged, "/t/a"},
		{jute.EventNodeCreated, "/t/s-0000000002"}, {jute.EventNodeChildrenChanged, "/t"},
		{jute.EventNodeCreated, "/t/s-0000000003"}, {jute.EventNodeChildrenChanged, "/t"},
		{jute.EventNodeDeleted, "/t/old"}, {jute.EventNodeChildrenChanged, "/t"},
		{jute.EventNodeCreated, "/t/c"}, {jute.EventNodeChildrenChanged, "/t"},
		{jute.EventNodeCreated, "/t/ttl"}, {jute.EventNodeChildrenChanged, "/t"},
	}, ev)
}

func TestMultiEmpty(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	r, ev := c.apply(multiW())
	require.Equal(t, Result{}, r)
	require.Empty(t, ev)
}

func TestMultiFailureRollsBackEverything(t *testing.T) {
	for _, tt := range []struct {
		name string
		ops  []jute.MultiOp
		fail int
		code int32
	}{
		{"bad version after changes", []jute.MultiOp{
			opCreate(jute.OpCreate, "/t/s-", jute.FlagPersistentSequential),
			opSetData("/t/x", "changed", -1),
			opDelete("/t/y", -1),
			opCreate(jute.OpCreate, "/t/z", jute.FlagEphemeral),
			opCheck("/t/x", 0), // now version 1
			opCreate(jute.OpCreate, "/t/never", 0),
		}, 4, jute.ErrBadVersion},
		{"first op fails", []jute.MultiOp{
			opDelete("/t/nope", -1),
			opCreate(jute.OpCreate, "/t/a", 0),
		}, 0, jute.ErrNoNode},
		{"delete then recreate then fail", []jute.MultiOp{
			opDelete("/t/y", -1),
			opCreate(jute.OpCreate, "/t/y", 0),
			opSetData("/t/y", "q", -1),
			opDelete("/t/y", -1),
			opDelete("/t", -1), // still has /t/x
		}, 4, jute.ErrNotEmpty},
		{"create under a node made in the multi, then fail", []jute.MultiOp{
			opCreate(jute.OpCreate, "/t/n", 0),
			opCreate(jute.OpCreate, "/t/n/m", 0),
			opCreate(jute.OpCreate, "/t/n/m", 0),
		}, 2, jute.ErrNodeExists},
		{"check a missing node", []jute.MultiOp{
			opCreate(jute.OpCreate2, "/t/n", 0),
			opCheck("/t/missing", -1),
		}, 1, jute.ErrNoNode},
		{"bad path in check", []jute.MultiOp{opCheck("/t/", -1)}, 0, jute.ErrBadArguments},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := mustNewTree(t)
			c := newClient(t, tree)
			c.mustCreate("/t")
			c.mustCreate("/t/x")
			c.mustCreate("/t/y")
			before := tree.Digest()
			statT := c.stat("/t")
			size := tree.ApproximateDataSize()
			r, ev := c.apply(multiW(tt.ops...))
			require.Zero(t, r.Err, "the top-level error of a multi is 0")
			require.Empty(t, ev)
			require.Len(t, r.Multi, len(tt.ops))
			for i, res := range r.Multi {
				want := jute.MultiResult{Type: jute.OpError}
				switch {
				case i == tt.fail:
					want.Err = tt.code
				case i > tt.fail:
					want.Err = jute.ErrRuntimeInconsistency
				}
				require.Equal(t, want, res, "result %d", i)
			}
			require.Equal(t, before, tree.Digest(), "tree changed")
			require.Equal(t, statT, c.stat("/t"))
			require.Equal(t, size, tree.ApproximateDataSize())
			require.Empty(t, tree.EphemeralOwners())
			// No sequence number was used.
			r2 := c.create("/t/s-", jute.FlagPersistentSequential, 0)
			require.Equal(t, "/t/s-0000000002", r2.Path)
		})
	}
}
