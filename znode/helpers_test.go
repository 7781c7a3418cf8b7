package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// mustNewTree returns a fresh tree whose invariants are checked when the
// test ends.
func mustNewTree(t testing.TB, opts ...Options) *Tree {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	tr := New(o)
	mustCheckAtEnd(t, tr)
	return tr
}

// mustCheckAtEnd registers a cleanup asserting tr.Check() == nil.
func mustCheckAtEnd(t testing.TB, tr *Tree) {
	t.Cleanup(func() {
		if err := tr.Check(); err != nil {
			t.Errorf("Check() after test: %v", err)
		}
	})
}

var (
	open  = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	local = []jute.Id{{Scheme: "ip", ID: "127.0.0.1"}}
)

// client applies writes to a tree with increasing zxids and times.
type client struct {
	t       testing.TB
	tree    *Tree
	zxid    int64
	time    int64
	session int64
	auth    []jute.Id
}

func newClient(t testing.TB, tr *Tree) *client {
	return &client{t: t, tree: tr, zxid: 100, time: 1_700_000_000_000, session: 0x1000000000001, auth: local}
}

func (c *client) next() TxnContext {
	c.zxid++
	c.time += 10
	return TxnContext{Zxid: c.zxid, Time: c.time, SessionID: c.session, Auth: c.auth}
}

func (c *client) apply(w *Write) (Result, []Event) {
	c.t.Helper()
	return c.tree.Apply(c.next(), w)
}

func createW(op int32, path string, data []byte, acl []jute.ACL, flags int32, ttl int64) *Write {
	return &Write{Type: op, Create: &jute.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: flags, TTL: ttl}}
}

// create makes a node with opcode 15 and returns its result; code is the
// expected error.
func (c *client) create(path string, flags int32, code int32) Result {
	c.t.Helper()
	r, ev := c.apply(createW(jute.OpCreate2, path, []byte("d"), open, flags, 0))
	require.Equal(c.t, code, r.Err, "create %q flags %d", path, flags)
	if code != 0 {
		require.Empty(c.t, ev)
	}
	return r
}

func (c *client) mustCreate(path string) Result {
	c.t.Helper()
	return c.create(path, 0, 0)
}

func (c *client) delete(path string, version int32) int32 {
	c.t.Helper()
	r, _ := c.apply(&Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: path, Version: version}})
	return r.Err
}

func (c *client) setData(path string, data []byte, version int32) Result {
	c.t.Helper()
	r, _ := c.apply(&Write{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: path, Data: data, Version: version}})
	return r
}

func (c *client) setACL(path string, acl []jute.ACL, version int32) Result {
	c.t.Helper()
	r, _ := c.apply(&Write{Type: jute.OpSetACL, SetACL: &jute.SetACLRequest{Path: path, ACL: acl, Version: version}})
	return r
}

func (c *client) stat(path string) jute.Stat {
	c.t.Helper()
	st, ok := c.tree.Exists(path)
	require.True(c.t, ok, "exists %q", path)
	return st
}

// tn returns a node at path with nil data and the rest of m.
func tn(path string, m meta) *node { return newNode(path, nil, m) }
