package znode

// Each test here checks one sentence of the ZooKeeper documentation
// (Programmer's Guide, 3.8, and the ZooKeeper javadoc), quoted above it, the
// way etcd-io/raft's raft_paper_test.go checks the Raft paper.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// "When creating a znode you can also request that ZooKeeper append a
// monotonically increasing counter to the end of path. This counter is
// unique to the parent znode. The format of the counter is %010d -- that is
// 10 digits with 0 (zero) padding (e.g. "<path>0000000001")."
func TestGuaranteeSequenceCounterPerParent(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/p")
	c.mustCreate("/q")
	require.Equal(t, "/p/n0000000000", c.create("/p/n", jute.FlagPersistentSequential, 0).Path)
	require.Equal(t, "/p/n0000000001", c.create("/p/n", jute.FlagPersistentSequential, 0).Path)
	require.Equal(t, "/q/n0000000000", c.create("/q/n", jute.FlagPersistentSequential, 0).Path)
}

// "the counter used to store the next sequence number is a signed int
// (4bytes) maintained by the parent node, the counter will overflow when
// incremented beyond 2147483647 (resulting in a name "<path>-2147483648")."
func TestGuaranteeSequenceCounterOverflow(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/p")
	c.tree.nodes.get("/p").creates = 2147483647
	c.create("/p/n", jute.FlagPersistentSequential, 0)
	require.Equal(t, "/p/n-2147483648", c.create("/p/n", jute.FlagPersistentSequential, 0).Path)
}

// "These znodes exists as long as the session that created the znode is
// active. When the session ends the znode is deleted. Because of this
// behavior ephemeral znodes are not allowed to have children."
func TestGuaranteeEphemeralLifetime(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.create("/e", jute.FlagEphemeral, 0)
	c.create("/e/child", 0, jute.ErrNoChildrenForEphemerals)
	c.tree.DeleteEphemerals(c.next(), c.session)
	_, ok := c.tree.Exists("/e")
	require.False(t, ok)
}

// "When the last child of a container is deleted, the container becomes a
// candidate to be deleted by the server at some point in the future."
func TestGuaranteeContainerCandidate(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.apply(createW(jute.OpCreateContainer, "/c", nil, open, jute.FlagContainer, 0))
	c.mustCreate("/c/x")
	c.mustCreate("/c/y")
	require.Zero(t, c.delete("/c/x", -1))
	cont, _ := c.tree.ExpiryCandidates(c.time)
	require.Empty(t, cont)
	require.Zero(t, c.delete("/c/y", -1))
	cont, _ = c.tree.ExpiryCandidates(c.time)
	require.Equal(t, []string{"/c"}, cont)
}

// "If the znode is not modified within the TTL and has no children it will
// become a candidate to be deleted by the server at some point in the
// future." ... "TTL Nodes must be enabled via System property as they are
// disabled by default."
func TestGuaranteeTTL(t *testing.T) {
	off := newClient(t, mustNewTree(t))
	r, _ := off.apply(createW(jute.OpCreateTTL, "/t", nil, open, jute.FlagPersistentWithTTL, 100))
	require.Equal(t, jute.ErrUnimplemented, r.Err)

	c := newClient(t, mustNewTree(t, Options{ExtendedTypesEnabled: true}))
	r, _ = c.apply(createW(jute.OpCreateTTL, "/t", nil, open, jute.FlagPersistentWithTTL, 100))
	require.Zero(t, r.Err)
	_, ttls := c.tree.ExpiryCandidates(c.time + 50)
	require.Empty(t, ttls)
	c.time += 90
	c.setData("/t", nil, -1) // modified: the clock restarts
	_, ttls = c.tree.ExpiryCandidates(c.time + 50)
	require.Empty(t, ttls)
	_, ttls = c.tree.ExpiryCandidates(c.time + 101)
	require.Equal(t, []string{"/t"}, ttls)
}

// ZooKeeper.multi: "Executes multiple ZooKeeper operations. In case of
// transactions all of them or none of them will be executed."
func TestGuaranteeMultiAllOrNothing(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	before := c.tree.Digest()
	r, _ := c.apply(multiW(opCreate(jute.OpCreate, "/a", 0), opCreate(jute.OpCreate, "/a/b", 0), opDelete("/missing", -1)))
	require.Equal(t, jute.ErrNoNode, r.Multi[2].Err)
	require.Equal(t, before, c.tree.Digest())
}

// ZooKeeper.setData: "Set the data for the node of the given path if such a
// node exists and the given version matches the version of the node (if the
// given version is -1, it matches any node's versions)."
func TestGuaranteeSetDataVersion(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/a")
	require.Equal(t, jute.ErrBadVersion, c.setData("/a", nil, 5).Err)
	require.Zero(t, c.setData("/a", nil, 0).Err)
	require.Zero(t, c.setData("/a", nil, -1).Err)
	require.Equal(t, int32(2), c.stat("/a").Version)
}

// ZooKeeper.delete: "A KeeperException with error code
// KeeperException.NotEmpty will be thrown if the node has children."
func TestGuaranteeDeleteNotEmpty(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/a")
	c.mustCreate("/a/b")
	require.Equal(t, jute.ErrNotEmpty, c.delete("/a", -1))
}

// "ACLs are not recursive. ... an ACL pertains only to a specific znode. In
// particular it does not apply to children."
func TestGuaranteeACLNotRecursive(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/a")
	c.mustCreate("/a/b")
	require.Zero(t, c.setACL("/a", []jute.ACL{acl(jute.PermRead, "world", "anyone")}, -1).Err)
	require.Zero(t, c.setData("/a/b", []byte("still writable"), -1).Err)
}

// "ip uses the client host IP as an ACL identity. The ACL expression is of
// the form addr/bits where the most significant bits of addr are matched
// against the most significant bits of the client host IP."
func TestGuaranteeIPBits(t *testing.T) {
	a := []jute.ACL{acl(jute.PermAll, "ip", "192.168.0.0/16")}
	require.True(t, CheckACL(a, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "192.168.44.3"}}))
	require.False(t, CheckACL(a, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "192.169.0.1"}}))
}

// "Every node in a ZooKeeper tree is referred to by a path ... Every znode
// has a stat structure: czxid: The zxid of the change that caused this znode
// to be created. mzxid: The zxid of the change that last modified this
// znode. pzxid: The zxid of the change that last modified children of this
// znode. ... version: The number of changes to the data of this znode.
// cversion: The number of changes to the children of this znode. aversion:
// The number of changes to the ACL of this znode."
func TestGuaranteeStatCounters(t *testing.T) {
	c := newClient(t, mustNewTree(t))
	c.mustCreate("/a")
	czxid := c.zxid
	c.mustCreate("/a/x")
	c.mustCreate("/a/y")
	require.Zero(t, c.delete("/a/x", -1))
	pz := c.zxid
	c.setData("/a", []byte("1"), -1)
	mz := c.zxid
	c.setACL("/a", open, -1)
	st := c.stat("/a")
	require.Equal(t, jute.Stat{Czxid: czxid, Mzxid: mz, Ctime: st.Ctime, Mtime: st.Mtime, Version: 1, Cversion: 3,
		Aversion: 1, DataLength: 1, NumChildren: 1, Pzxid: pz}, st)
}
