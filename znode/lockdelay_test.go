package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestUnder(t *testing.T) {
	for _, tt := range []struct {
		path, prefix string
		want         bool
	}{
		{"/locks", "/locks", true},
		{"/locks/a", "/locks", true},
		{"/locks/a/b", "/locks", true},
		{"/locksmith", "/locks", false},
		{"/other/locks", "/locks", false},
		{"/a", "/", true},
		{"/", "/", true},
		{"/a", "", false},
		{"/app/locks/x", "/app/locks", true},
		{"/app/lock", "/app/locks", false},
	} {
		require.Equal(t, tt.want, Under(tt.path, tt.prefix), "Under(%q, %q)", tt.path, tt.prefix)
	}
}

// TestDeleteEphemeralsKeeping: an expiry with lock-delay removes the
// session's ephemerals outside the kept prefixes, with their events, and
// leaves the others, owner included, for DeleteEphemerals.
func TestDeleteEphemeralsKeeping(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	for _, p := range []string{"/locks", "/locksmith", "/app", "/app/locks"} {
		c.mustCreate(p)
	}
	const sess = 0x55
	eph := func(path string) {
		ctx := TxnContext{Zxid: c.zxid + 1, Time: c.time, SessionID: sess}
		c.zxid++
		r, _ := tree.Apply(ctx, createW(jute.OpCreate, path, nil, open, jute.FlagEphemeral, 0))
		require.Zero(t, r.Err, path)
	}
	for _, p := range []string{"/locks/l1", "/locksmith/x", "/app/locks/l2", "/app/member"} {
		eph(p)
	}
	// keep sees the tree before anything goes: /app/member is still there
	// when it is asked about /locksmith/x, which sorts after it.
	var asked []string
	keep := func(p string) bool {
		asked = append(asked, p)
		_, member := tree.Exists("/app/member")
		require.True(t, member, "keep(%s) called after a removal", p)
		return Under(p, "/locks") || Under(p, "/app/locks")
	}
	ev, kept := tree.DeleteEphemeralsKeeping(TxnContext{Zxid: 200, Time: c.time}, sess, keep)
	require.Equal(t, []string{"/app/locks/l2", "/app/member", "/locks/l1", "/locksmith/x"}, asked)
	require.Equal(t, 2, kept)
	require.Equal(t, []Event{
		{Type: jute.EventNodeDeleted, Path: "/app/member"}, {Type: jute.EventNodeChildrenChanged, Path: "/app"},
		{Type: jute.EventNodeDeleted, Path: "/locksmith/x"}, {Type: jute.EventNodeChildrenChanged, Path: "/locksmith"},
	}, ev)
	require.Equal(t, []string{"/app/locks/l2", "/locks/l1"}, tree.Ephemerals(sess, ""))
	st, ok := tree.Exists("/locks/l1")
	require.True(t, ok)
	require.Equal(t, int64(sess), st.EphemeralOwner)

	ev = tree.DeleteEphemerals(TxnContext{Zxid: 201, Time: c.time}, sess)
	require.Len(t, ev, 4)
	require.Empty(t, tree.EphemeralOwners())
}

// TestEachChild: every child name once, whatever the order; a missing node
// reports false.
func TestEachChild(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	for _, p := range []string{"/d", "/d/a", "/d/b", "/d/b/x", "/e"} {
		c.mustCreate(p)
	}
	for _, tt := range []struct {
		path string
		ok   bool
		want []string
	}{
		{"/d", true, []string{"a", "b"}},
		{"/e", true, nil},
		{"/nosuch", false, nil},
	} {
		var got []string
		ok := tree.EachChild(tt.path, func(name string) { got = append(got, name) })
		require.Equal(t, tt.ok, ok, tt.path)
		require.ElementsMatch(t, tt.want, got, tt.path)
	}
}
