package znode

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// mk creates path with data (opcode 1), requiring code.
func (c *client) mk(path string, data []byte, code int32) {
	c.t.Helper()
	r, _ := c.apply(createW(jute.OpCreate, path, data, open, 0, 0))
	require.Equal(c.t, code, r.Err, "create %q", path)
}

// setQuota does what zkCli's "setquota -n count p" does: the parents under
// /zookeeper/quota (null data), the limits node, then the stats node with
// zero counts.
func (c *client) setQuota(p string, count int) {
	c.t.Helper()
	qp := quotaPath
	for _, part := range strings.Split(p, "/")[1:] {
		qp += "/" + part
		r, _ := c.apply(createW(jute.OpCreate, qp, nil, open, 0, 0))
		require.Contains(c.t, []int32{0, jute.ErrNodeExists}, r.Err, qp)
	}
	c.mk(qp+"/"+limitsName, []byte("count="+strconv.Itoa(count)+",bytes=-1"), 0)
	c.mk(qp+"/"+statsName, []byte("count=0,bytes=0"), 0)
}

// stats returns the data of p's stats node ("" if it does not exist).
func stats(tree *Tree, p string) string {
	d, _, ok := tree.GetData(statsPathOf(p))
	if !ok {
		return ""
	}
	return string(d)
}

func TestQuotaLongestPrefix(t *testing.T) {
	set := map[string]struct{}{"/q": {}, "/q/a/b": {}, "/x/y": {}}
	for _, tc := range []struct {
		path, want string
	}{
		{"/", ""},
		{"/q", "/q"},
		{"/q/a", "/q"},
		{"/q/a/b", "/q/a/b"},
		{"/q/a/b/c/d", "/q/a/b"},
		{"/q/a/bc", "/q"}, // whole components only
		{"/qq", ""},
		{"/qq/a", ""},
		{"/x", ""},
		{"/x/y", "/x/y"},
		{"/x/yz", ""},
		{"/zookeeper/quota/q/zookeeper_stats", ""},
	} {
		require.Equal(t, tc.want, longestQuotaPrefix(set, tc.path), tc.path)
	}
	require.Equal(t, "", longestQuotaPrefix(map[string]struct{}{}, "/q"))
}

func TestQuotaNodeOf(t *testing.T) {
	for _, tc := range []struct {
		path   string
		p      string
		limits bool
		ok     bool
	}{
		{"/zookeeper/quota/q/zookeeper_limits", "/q", true, true},
		{"/zookeeper/quota/q/zookeeper_stats", "/q", false, true},
		{"/zookeeper/quota/a/b/c/zookeeper_limits", "/a/b/c", true, true},
		{"/zookeeper/quota/zookeeper_limits", "", false, false}, // empty namespace
		{"/zookeeper/quota/zookeeper_stats", "", false, false},
		{"/zookeeper/quotax/q/zookeeper_limits", "", false, false},
		{"/zookeeper/q/zookeeper_limits", "", false, false},
		{"/q/zookeeper_limits", "", false, false},
		{"/zookeeper/quota/q/zookeeper_limitsx", "", false, false},
		{"/zookeeper/quota/q/other", "", false, false},
		{"/zookeeper/quota/zookeeper/zookeeper_limits", "", false, false}, // inside /zookeeper
		{"/zookeeper/quota/zookeeper/quota/q/zookeeper_limits", "", false, false},
		{"/zookeeper/quota/zookeeperx/zookeeper_limits", "/zookeeperx", true, true},
		{"/", "", false, false},
		{"", "", false, false},
	} {
		p, limits, ok := quotaNodeOf(tc.path)
		require.Equal(t, tc.ok, ok, tc.path)
		require.Equal(t, tc.p, p, tc.path)
		require.Equal(t, tc.limits, limits, tc.path)
	}
}

func TestQuotaRender(t *testing.T) {
	require.Equal(t, "count=0,bytes=0", string(usage{}.render()))
	require.Equal(t, "count=12,bytes=-3", string(usage{12, -3}.render()))
}

// TestQuotaObservedSequence replays what Apache ZooKeeper 3.8.0 was seen
// doing under zkCli's create, setquota, set, delete and delquota.
func TestQuotaObservedSequence(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", nil, 0)
	c.mk("/q/a", []byte("x"), 0)
	c.setQuota("/q", 5)
	statsZxid := c.zxid
	require.Equal(t, "count=2,bytes=1", stats(tree, "/q"))
	d, _, _ := tree.GetData(quotaPath + "/q/" + limitsName)
	require.Equal(t, "count=5,bytes=-1", string(d))

	r, ev := c.apply(createW(jute.OpCreate, "/q/b", []byte("yy"), open, 0, 0))
	require.Zero(t, r.Err)
	require.Equal(t, []Event{{jute.EventNodeCreated, "/q/b"}, {jute.EventNodeChildrenChanged, "/q"}}, ev,
		"no event for the stats node")
	require.Equal(t, "count=3,bytes=3", stats(tree, "/q"))

	c.setData("/q/a", []byte("xyz"), -1)
	require.Equal(t, "count=3,bytes=5", stats(tree, "/q"))
	require.Zero(t, c.delete("/q/b", -1))
	require.Equal(t, "count=2,bytes=3", stats(tree, "/q"))

	st := c.stat(statsPathOf("/q"))
	require.Equal(t, int32(0), st.Version, "stats updates bump no version")
	require.Equal(t, statsZxid, st.Mzxid)
	require.Equal(t, statsZxid, st.Czxid)
	require.Equal(t, int32(len("count=2,bytes=3")), st.DataLength)

	// Other paths do not count; nor do the quota nodes themselves.
	c.mk("/qq", []byte("abc"), 0)
	c.mk("/other", []byte("abc"), 0)
	c.setData(quotaPath+"/q/"+limitsName, []byte("count=9,bytes=-1"), -1)
	require.Equal(t, "count=2,bytes=3", stats(tree, "/q"))

	// delquota /q: deleteall /zookeeper/quota/q (children first).
	require.Zero(t, c.delete(quotaPath+"/q/"+limitsName, -1))
	c.mk("/q/c", []byte("1234"), 0)
	require.Equal(t, "count=2,bytes=3", stats(tree, "/q"), "no limits, no updates")
	require.Zero(t, c.delete(statsPathOf("/q"), -1))
	require.Zero(t, c.delete(quotaPath+"/q", -1))
	require.Empty(t, tree.quotas)
}

func TestQuotaCreateResultShowsClientData(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", []byte("abcd"), 0)
	c.mk(quotaPath+"/q", nil, 0)
	c.mk(quotaPath+"/q/"+limitsName, []byte("count=5,bytes=-1"), 0)
	r, _ := c.apply(createW(jute.OpCreate2, statsPathOf("/q"), []byte("count=0,bytes=0"), open, 0, 0))
	require.Zero(t, r.Err)
	require.Equal(t, int32(len("count=0,bytes=0")), r.Stat.DataLength, "Stat as created, before the refresh")
	require.Equal(t, "count=1,bytes=4", stats(tree, "/q"))
}

func TestQuotaOrderOfQuotaNodes(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", []byte("ab"), 0)
	c.mk(quotaPath+"/q", nil, 0)

	// Stats before limits: kept only once the limits node exists.
	c.mk(statsPathOf("/q"), []byte("junk"), 0)
	require.Equal(t, "junk", stats(tree, "/q"))
	c.mk(quotaPath+"/q/"+limitsName, []byte("count=5,bytes=-1"), 0)
	require.Equal(t, "count=1,bytes=2", stats(tree, "/q"))

	// Limits without stats: usage is kept; a later stats node starts right.
	require.Zero(t, c.delete(statsPathOf("/q"), -1))
	c.mk("/q/a", []byte("abc"), 0)
	c.mk(statsPathOf("/q"), []byte("count=0,bytes=0"), 0)
	require.Equal(t, "count=2,bytes=5", stats(tree, "/q"))

	// A client's setData on the stats node is replaced by the counts.
	r := c.setData(statsPathOf("/q"), []byte("count=99,bytes=99"), -1)
	require.Zero(t, r.Err)
	require.Equal(t, int32(1), r.Stat.Version)
	require.Equal(t, "count=2,bytes=5", stats(tree, "/q"))

	// A quota on a path that does not exist counts nothing until it does.
	c.setQuota("/later", 3)
	require.Equal(t, "count=0,bytes=0", stats(tree, "/later"))
	c.mk("/later", []byte("z"), 0)
	require.Equal(t, "count=1,bytes=1", stats(tree, "/later"))

	// Ignored limits nodes: empty namespace and inside /zookeeper.
	c.mk(quotaPath+"/"+limitsName, nil, 0)
	c.mk(quotaPath+"/"+statsName, []byte("s"), 0)
	c.setQuota("/zookeeper", 3)
	require.Equal(t, "s", stats(tree, ""))
	require.Equal(t, "count=0,bytes=0", stats(tree, "/zookeeper"))
	require.Len(t, tree.quotas, 2)
}

func TestQuotaEphemeralsContainersTTL(t *testing.T) {
	tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
	c := newClient(t, tree)
	c.mk("/q", nil, 0)
	c.setQuota("/q", 10)
	r, _ := c.apply(createW(jute.OpCreate, "/q/e", []byte("eph"), open, jute.FlagEphemeral, 0))
	require.Zero(t, r.Err)
	r, _ = c.apply(createW(jute.OpCreateContainer, "/q/c", []byte("cc"), open, 0, 0))
	require.Zero(t, r.Err)
	r, _ = c.apply(createW(jute.OpCreateTTL, "/q/t", []byte("t"), open, jute.FlagPersistentWithTTL, 5))
	require.Zero(t, r.Err)
	r, _ = c.apply(createW(jute.OpCreate, "/q/c/s-", []byte("s"), open, jute.FlagPersistentSequential, 0))
	require.Zero(t, r.Err)
	require.Equal(t, "count=5,bytes=7", stats(tree, "/q"))

	tree.DeleteEphemerals(c.next(), c.session)
	require.Equal(t, "count=4,bytes=4", stats(tree, "/q"))
	require.Zero(t, c.delete("/q/c/s-0000000000", -1))
	c.time += 1000
	cont, ttls := tree.ExpiryCandidates(c.time)
	require.Equal(t, []string{"/q/c"}, cont)
	require.Equal(t, []string{"/q/t"}, ttls)
	r, _ = c.apply(&Write{Type: jute.OpDeleteContainer, Path: "/q/c"})
	require.Zero(t, r.Err)
	r, _ = c.apply(&Write{Type: OpDeleteTTL, Path: "/q/t"})
	require.Zero(t, r.Err)
	require.Equal(t, "count=1,bytes=0", stats(tree, "/q"))
}

func TestQuotaNested(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", []byte("1"), 0)
	c.mk("/q/a", []byte("22"), 0)
	c.mk("/q/a/b", []byte("333"), 0)
	c.setQuota("/q", 10)
	require.Equal(t, "count=3,bytes=6", stats(tree, "/q"))

	// An inner quota takes its subtree out of the outer one.
	c.setQuota("/q/a", 10)
	require.Equal(t, "count=2,bytes=5", stats(tree, "/q/a"))
	require.Equal(t, "count=1,bytes=1", stats(tree, "/q"))
	c.mk("/q/a/c", []byte("4444"), 0)
	c.mk("/q/x", []byte("55555"), 0)
	require.Equal(t, "count=3,bytes=9", stats(tree, "/q/a"))
	require.Equal(t, "count=2,bytes=6", stats(tree, "/q"))

	// Deleting the inner limits node gives its usage back to the outer one.
	require.Zero(t, c.delete(quotaPath+"/q/a/"+limitsName, -1))
	require.Equal(t, "count=3,bytes=9", stats(tree, "/q/a"), "stale, as in ZooKeeper")
	require.Equal(t, "count=5,bytes=15", stats(tree, "/q"))
}

func TestQuotaMultiRollback(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", nil, 0)
	c.mk("/q/a", []byte("x"), 0)
	c.mk("/p", []byte("pp"), 0)
	c.setQuota("/q", 5)
	before := tree.Digest()
	statsBefore := c.stat(statsPathOf("/q"))

	for _, tc := range []struct {
		name string
		ops  []jute.MultiOp
	}{
		{"creates, sets and deletes", []jute.MultiOp{
			opCreate(jute.OpCreate, "/q/b", 0),
			opSetData("/q/a", "longer data", -1),
			opDelete("/q/b", -1),
			opCreate(jute.OpCreate, "/q/c", 0),
			opCheck("/q/a", 7),
		}},
		{"new quota, then failure", []jute.MultiOp{
			opCreate(jute.OpCreate, quotaPath+"/p", 0),
			opCreate(jute.OpCreate, quotaPath+"/p/"+limitsName, 0),
			opCreate(jute.OpCreate, statsPathOf("/p"), 0),
			opCreate(jute.OpCreate, "/p/x", 0),
			opDelete("/missing", -1),
		}},
		{"quota removed, then failure", []jute.MultiOp{
			opDelete(quotaPath+"/q/"+limitsName, -1),
			opCreate(jute.OpCreate, "/q/b", 0),
			opCreate(jute.OpCreate, quotaPath+"/q/"+limitsName, 0),
			opSetData(statsPathOf("/q"), "client", -1),
			opSetData("/q/a", "", -1),
			opCheck("/q", 3),
		}},
		{"nested quota, then failure", []jute.MultiOp{
			opCreate(jute.OpCreate, quotaPath+"/q/a", 0),
			opCreate(jute.OpCreate, quotaPath+"/q/a/"+limitsName, 0),
			opCreate(jute.OpCreate, statsPathOf("/q/a"), 0),
			opCreate(jute.OpCreate, "/q/a/b", 0),
			opDelete("/q/a", -1), // not empty
		}},
	} {
		r, ev := c.apply(multiW(tc.ops...))
		require.Zero(t, r.Err, tc.name)
		require.Empty(t, ev, tc.name)
		require.NotZero(t, r.Multi[len(tc.ops)-1].Err, tc.name)
		require.NoError(t, tree.Check(), tc.name)
		require.Equal(t, before, tree.Digest(), tc.name)
		require.Equal(t, "count=2,bytes=1", stats(tree, "/q"), tc.name)
		require.Equal(t, statsBefore, c.stat(statsPathOf("/q")), tc.name)
		require.Len(t, tree.quotas, 1, tc.name)
	}

	// The same ops committed.
	r, _ := c.apply(multiW(
		opCreate(jute.OpCreate, "/q/b", 0),
		opSetData("/q/a", "longer data", -1),
		opCreate(jute.OpCreate, quotaPath+"/p", 0),
		opCreate(jute.OpCreate, quotaPath+"/p/"+limitsName, 0),
		opCreate(jute.OpCreate, statsPathOf("/p"), 0),
		opCreate(jute.OpCreate, "/p/x", 0),
	))
	for _, m := range r.Multi {
		require.Zero(t, m.Err)
	}
	require.Equal(t, "count=3,bytes=12", stats(tree, "/q"))
	require.Equal(t, "count=2,bytes=3", stats(tree, "/p"))
}

func TestQuotaSnapshotRoundTrip(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", nil, 0)
	c.mk("/q/a", []byte("x"), 0)
	c.mk("/q/a/b", []byte("yy"), 0)
	c.mk("/z", []byte("zzz"), 0) // sorts after /zookeeper: loaded after its quota nodes
	c.mk("/z/1", []byte("1"), 0)
	c.setQuota("/q", 5)
	c.setQuota("/q/a", 5)
	c.setQuota("/z", 5)
	c.mk("/z/2", []byte("22"), 0)
	require.Equal(t, "count=3,bytes=6", stats(tree, "/z"))

	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	got, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), Options{})
	require.NoError(t, err)
	mustCheckAtEnd(t, got)
	requireSameTree(t, tree, got)
	require.Equal(t, tree.quotas, got.quotas)

	// Both keep counting the same way.
	for _, tr := range []*Tree{tree, got} {
		cc := &client{t: t, tree: tr, zxid: c.zxid, time: c.time, session: c.session, auth: c.auth}
		cc.mk("/z/3", []byte("333"), 0)
		cc.mk("/q/a/b/c", []byte("4444"), 0)
		require.Zero(t, cc.delete(quotaPath+"/q/a/"+limitsName, -1))
	}
	requireSameTree(t, tree, got)
	require.Equal(t, "count=4,bytes=9", stats(got, "/z"))
	require.Equal(t, "count=4,bytes=7", stats(got, "/q"))
}

func TestQuotaSnapshotStaleStatsRefreshed(t *testing.T) {
	// A snapshot written before zkraft kept quotas holds zkCli's zeros.
	tree := mustNewTree(t)
	c := newClient(t, tree)
	c.mk("/q", []byte("abc"), 0)
	c.setQuota("/q", 5)
	s := tree.nodes.get(statsPathOf("/q"))
	tree.setData(s, []byte("count=0,bytes=0"))
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	tree.setData(s, usage{1, 3}.render()) // repair for the cleanup Check

	got, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), Options{})
	require.NoError(t, err)
	mustCheckAtEnd(t, got)
	require.Equal(t, "count=1,bytes=3", stats(got, "/q"))
	require.Equal(t, tree.Digest(), got.Digest())
}

func TestQuotaCheckDetectsDrift(t *testing.T) {
	tree := New(Options{})
	c := newClient(t, tree)
	c.mk("/q", []byte("abc"), 0)
	c.setQuota("/q", 5)
	require.NoError(t, tree.Check())

	s := tree.nodes.get(statsPathOf("/q"))
	old := s.dataBytes()
	tree.setData(s, []byte("count=7,bytes=3"))
	require.ErrorIs(t, tree.Check(), ErrInvariant)
	tree.setData(s, old)

	tree.quotas["/q"].count++
	require.ErrorContains(t, tree.Check(), "recount")
	tree.quotas["/q"].count--

	tree.quotas["/nope"] = &usage{}
	require.ErrorContains(t, tree.Check(), "without a limits node")
	delete(tree.quotas, "/nope")
	require.NoError(t, tree.Check())
}

// TestQuotaRandomWorkload runs the random workload with quotas on two of
// its paths; every step is checked (stats equal a recount), and the tree
// survives a snapshot round trip.
func TestQuotaRandomWorkload(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		tree := mustNewTree(t, Options{ExtendedTypesEnabled: true})
		c := newClient(t, tree)
		c.zxid = 0
		c.setQuota("/a", 100)
		c.setQuota("/b", 100)
		randomWorkload(t, tree, seed, 400)
		var buf bytes.Buffer
		require.NoError(t, tree.WriteSnapshot(&buf))
		got, err := ReadSnapshot(&buf, Options{ExtendedTypesEnabled: true})
		require.NoError(t, err)
		requireSameTree(t, tree, got)
		require.Equal(t, tree.quotas, got.quotas)
	}
}
