package znode

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestDeleteErrorPrecedence(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	for _, tt := range []struct {
		name    string
		path    string
		version int32
		want    int32
	}{
		{"ok", "/t/leaf", -1, 0},
		{"ok exact version", "/t/leaf", 0, 0},
		{"root", "/", -1, jute.ErrBadArguments},
		{"/zookeeper", "/zookeeper", -1, jute.ErrBadArguments},
		{"/zookeeper/quota", "/zookeeper/quota", -1, jute.ErrBadArguments},
		{"/zookeeper/config", "/zookeeper/config", -1, jute.ErrBadArguments},
		{"no slash", "t", -1, jute.ErrBadArguments},
		{"NUL", "/t\x00", -1, jute.ErrBadArguments},
		{"missing parent", "/nope/x", -1, jute.ErrNoNode},
		{"missing node", "/t/nope", -1, jute.ErrNoNode},
		{"trailing slash is just missing", "/t/", -1, jute.ErrNoNode},
		{"no DELETE on parent", "/locked/x", -1, jute.ErrNoAuth},
		{"no DELETE beats missing child", "/locked/nope", -1, jute.ErrNoAuth},
		{"bad version", "/t/leaf", 3, jute.ErrBadVersion},
		{"version beats children", "/t", 3, jute.ErrBadVersion},
		{"not empty", "/t", -1, jute.ErrNotEmpty},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := mustNewTree(t)
			c := newClient(t, tree)
			c.mustCreate("/t")
			c.mustCreate("/t/leaf")
			c.mustCreate("/locked")
			c.mustCreate("/locked/x")
			require.Zero(t, c.setACL("/locked", []jute.ACL{acl(jute.PermAll, "digest", bob.ID)}, -1).Err)
			before := tree.Digest()
			r, ev := c.apply(&Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: tt.path, Version: tt.version}})
			require.Equal(t, tt.want, r.Err)
			if tt.want != 0 {
				require.Empty(t, ev)
				require.Equal(t, before, tree.Digest())
				return
			}
			require.Equal(t, []Event{{jute.EventNodeDeleted, tt.path}, {jute.EventNodeChildrenChanged, "/t"}}, ev)
		})
	}
}

func TestSetData(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/a")
	created := c.stat("/a")
	r, ev := c.apply(&Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: "/a", Data: []byte("abc"), Version: 0}})
	require.Zero(t, r.Err)
	require.Equal(t, []Event{{jute.EventNodeDataChanged, "/a"}}, ev)
	require.Equal(t, int32(1), r.Stat.Version)
	require.Equal(t, c.zxid, r.Stat.Mzxid)
	require.Equal(t, c.time, r.Stat.Mtime)
	require.Equal(t, created.Czxid, r.Stat.Czxid)
	require.Equal(t, created.Ctime, r.Stat.Ctime)
	require.Equal(t, created.Pzxid, r.Stat.Pzxid)
	require.Equal(t, int32(3), r.Stat.DataLength)
	require.Equal(t, r.Stat, c.stat("/a"))

	require.Equal(t, jute.ErrBadVersion, c.setData("/a", nil, 0).Err)
	require.Zero(t, c.setData("/a", nil, 1).Err)
	data, st, _ := tree.GetData("/a")
	require.Nil(t, data)
	require.Equal(t, int32(2), st.Version)
	require.Equal(t, jute.ErrNoNode, c.setData("/b", nil, -1).Err)
	require.Equal(t, jute.ErrBadArguments, c.setData("/a/", nil, -1).Err)
	require.Equal(t, jute.ErrBadArguments, c.setData("a", nil, -1).Err)

	// Precedence: path -> exists -> WRITE -> version.
	require.Zero(t, c.setACL("/a", []jute.ACL{acl(jute.PermRead|jute.PermAdmin, "world", "anyone")}, -1).Err)
	require.Equal(t, jute.ErrNoAuth, c.setData("/a", nil, 99).Err)
	require.Equal(t, jute.ErrNoAuth, c.setData("/zookeeper/config", []byte("x"), -1).Err)

	// Version wraps as a Java int.
	tree.nodes.get("/a").version = math.MaxInt32
	c.auth = []jute.Id{{Scheme: "super"}}
	r = c.setData("/a", nil, math.MaxInt32)
	require.Zero(t, r.Err)
	require.Equal(t, int32(math.MinInt32), r.Stat.Version)
}

func TestSetACL(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/a")
	c.mustCreate("/a/b")
	before := c.stat("/a")
	readOnly := []jute.ACL{acl(jute.PermRead, "world", "anyone")}
	r, ev := c.apply(&Write{Type: jute.OpSetACL, SetACL: &jute.SetACLRequest{Path: "/a", ACL: readOnly, Version: 0}})
	require.Zero(t, r.Err)
	require.Empty(t, ev, "setACL fires no events")
	want := before
	want.Aversion = 1
	require.Equal(t, want, r.Stat, "only aversion changes")
	got, _, _ := tree.GetACL("/a")
	require.Equal(t, readOnly, got)

	// Precedence: path -> ACL -> exists -> ADMIN -> aversion.
	require.Equal(t, jute.ErrBadArguments, c.setACL("/a/", nil, 7).Err)
	require.Equal(t, jute.ErrInvalidACL, c.setACL("/nope", nil, 7).Err)
	require.Equal(t, jute.ErrNoNode, c.setACL("/nope", open, 7).Err)
	require.Equal(t, jute.ErrNoAuth, c.setACL("/a", open, 7).Err)
	require.Equal(t, jute.ErrBadVersion, c.setACL("/a/b", open, 7).Err)
	require.Zero(t, c.setACL("/a/b", open, 0).Err)

	// The children of a READ-only node can't be created, nor data set.
	c.create("/a/c", 0, jute.ErrNoAuth)
	require.Equal(t, jute.ErrNoAuth, c.setData("/a", nil, -1).Err)
	// DELETE is checked on the parent.
	require.Equal(t, jute.ErrNoAuth, c.delete("/a/b", -1))

	// /zookeeper/config: aversion -1, READ only.
	require.Equal(t, jute.ErrNoAuth, c.setACL("/zookeeper/config", open, -1).Err)
	c.auth = []jute.Id{{Scheme: "super"}}
	r = c.setACL("/zookeeper/config", open, -1)
	require.Zero(t, r.Err)
	require.Equal(t, int32(0), r.Stat.Aversion)
}

func TestMalformedWrites(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	before := tree.Digest()
	for _, tt := range []struct {
		w    *Write
		want int32
	}{
		{nil, jute.ErrMarshallingError},
		{&Write{Type: jute.OpCreate}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpDelete}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpSetData}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpSetACL}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpMulti}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpCheck}, jute.ErrUnimplemented},
		{&Write{Type: jute.OpGetData}, jute.ErrUnimplemented},
		{&Write{Type: 999}, jute.ErrUnimplemented},
		{&Write{Type: jute.OpMulti, Multi: &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: "/"}}}}}, jute.ErrMarshallingError},
		{&Write{Type: jute.OpMulti, Multi: &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpDelete}}}}, jute.ErrMarshallingError},
	} {
		r, ev := c.apply(tt.w)
		require.Equal(t, Result{Err: tt.want}, r)
		require.Empty(t, ev)
	}
	require.Equal(t, before, tree.Digest())
}

// TestApplyAppend: ApplyAppend appends a write's events to the given ones,
// and leaves them as they were when the write failed, whatever its kind.
func TestApplyAppend(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mustCreate("/a")
	prior := []Event{{jute.EventNodeCreated, "/earlier"}}
	for _, tt := range []struct {
		name string
		w    *Write
		want []Event
	}{
		{"setData", &Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}},
			[]Event{{jute.EventNodeDataChanged, "/a"}}},
		{"create", createW(jute.OpCreate, "/a/b", nil, open, 0, 0),
			[]Event{{jute.EventNodeCreated, "/a/b"}, {jute.EventNodeChildrenChanged, "/a"}}},
		{"multi", &Write{Type: jute.OpMulti, Multi: &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: "/a/b", Version: -1}}}}},
			[]Event{{jute.EventNodeDeleted, "/a/b"}, {jute.EventNodeChildrenChanged, "/a"}}},
		{"failed setData", &Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: "/a", Version: 99}}, nil},
		{"failed create", createW(jute.OpCreate, "/a", nil, open, 0, 0), nil},
		{"failed multi", &Write{Type: jute.OpMulti, Multi: &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: "/a", Version: -1}},
			{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: "/none", Version: -1}}}}}, nil},
		{"malformed", &Write{Type: jute.OpSetData}, nil},
	} {
		in := append(make([]Event, 0, 8), prior...)
		_, ev := tree.ApplyAppend(c.next(), tt.w, in)
		require.Equal(t, append(append([]Event(nil), prior...), tt.want...), ev, tt.name)
	}
}
