package znode

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

var (
	aclX = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "digest", ID: "x:x1CQ5VtJ1ug2YpJBJlnJiQBN3Ak="}}}
	aclY = []jute.ACL{{Perms: jute.PermRead, ID: jute.Id{Scheme: "digest", ID: "x:x1CQ5VtJ1ug2YpJBJlnJiQBN3Ak="}}}
	// aclXY holds aclX's entry twice, which fixupACL stores as aclX.
	aclXY = append(append([]jute.ACL{}, aclX...), aclX...)
	// superAuth passes every ACL check.
	superAuth = []jute.Id{{Scheme: "super", ID: "admin"}}
)

// Nodes with equal ACLs, made by create or setACL, hold one aclList; nodes
// with different ones do not; the table holds only the ACLs nodes hold.
func TestACLShared(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.auth = superAuth
	acl := func(p string) *aclList { return tree.nodes.get(p).acl }
	mk := func(p string, a []jute.ACL) {
		r, _ := c.apply(createW(jute.OpCreate, p, nil, a, 0, 0))
		require.Zero(t, r.Err, "create %s", p)
	}
	builtin := len(tree.acls) // open and /zookeeper/config's
	mk("/a", aclX)
	mk("/b", aclXY)
	mk("/c", aclY)
	mk("/o", open)
	require.Same(t, acl("/a"), acl("/b"), "equal ACLs by create")
	require.NotSame(t, acl("/a"), acl("/c"), "different ACLs")
	require.Same(t, tree.open, acl("/o"))
	require.Equal(t, 2, acl("/a").refs)
	require.Len(t, tree.acls, builtin+2)

	require.Zero(t, c.setACL("/c", aclX, -1).Err)
	require.Same(t, acl("/a"), acl("/c"), "equal ACLs by setACL")
	require.Len(t, tree.acls, builtin+1, "aclY dropped with its last node")
	require.Zero(t, c.setACL("/o", aclY, -1).Err)
	require.NotSame(t, acl("/a"), acl("/o"))
	require.Equal(t, aclY, acl("/o").list())

	for _, p := range []string{"/a", "/b", "/c", "/o"} {
		require.Zero(t, c.delete(p, -1))
	}
	require.Len(t, tree.acls, builtin, "no ACL left behind by deleted nodes")
}

// A failed multi's rollback puts back the ACL counts its creates and
// deletes changed.
func TestACLSharedRollback(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.auth = superAuth
	r, _ := c.apply(createW(jute.OpCreate, "/a", nil, aclX, 0, 0))
	require.Zero(t, r.Err)
	x := tree.nodes.get("/a").acl
	builtin := len(tree.acls)
	mkX := jute.MultiOp{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/b", ACL: aclX}}
	mkY := jute.MultiOp{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/c", ACL: aclY}}
	r, _ = c.apply(multiW(opDelete("/a", -1), mkX, mkY, opCheck("/a", -1)))
	require.Equal(t, jute.ErrNoNode, r.Multi[3].Err)
	require.Same(t, x, tree.nodes.get("/a").acl)
	require.Equal(t, 1, x.refs)
	require.Len(t, tree.acls, builtin)
	r, _ = c.apply(createW(jute.OpCreate, "/b", nil, aclX, 0, 0))
	require.Zero(t, r.Err)
	require.Same(t, x, tree.nodes.get("/b").acl, "the restored aclList is the table's")
}

// A snapshot keeps ACLs as they were: the bytes written again are the
// same, and the nodes read share an aclList per distinct ACL.
func TestACLSharedSnapshot(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.auth = superAuth
	for _, p := range []struct {
		path string
		acl  []jute.ACL
	}{{"/a", aclX}, {"/a/1", aclY}, {"/a/2", aclX}, {"/b", aclY}, {"/b/1", open}, {"/b/2", aclX}} {
		r, _ := c.apply(createW(jute.OpCreate, p.path, []byte("v"), p.acl, 0, 0))
		require.Zero(t, r.Err, "create %s", p.path)
	}
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	got, err := ReadSnapshotBytes(buf.Bytes(), Options{})
	require.NoError(t, err)
	mustCheckAtEnd(t, got)
	var again bytes.Buffer
	require.NoError(t, got.WriteSnapshot(&again))
	require.Equal(t, buf.Bytes(), again.Bytes())
	acl := func(p string) *aclList { return got.nodes.get(p).acl }
	require.Same(t, acl("/a"), acl("/a/2"))
	require.Same(t, acl("/a"), acl("/b/2"))
	require.Same(t, acl("/a/1"), acl("/b"))
	require.NotSame(t, acl("/a"), acl("/b"))
	require.Same(t, got.open, acl("/b/1"))
	require.Len(t, got.acls, len(tree.acls))
}

// A frozen node keeps its ACL while a setACL changes the live one.
func TestACLSharedFrozen(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.auth = superAuth
	r, _ := c.apply(createW(jute.OpCreate, "/a", nil, aclX, 0, 0))
	require.Zero(t, r.Err)
	var want bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&want))
	f := tree.Freeze()
	defer f.Release()
	require.Zero(t, c.setACL("/a", aclY, -1).Err)
	require.Zero(t, c.delete("/a", -1))
	var got bytes.Buffer
	require.NoError(t, f.WriteSnapshot(&got))
	require.Equal(t, want.Bytes(), got.Bytes())
}
