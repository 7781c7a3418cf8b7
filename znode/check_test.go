package znode

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestCheckDetects breaks one invariant at a time and expects Check to see it.
func TestCheckDetects(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(tr *Tree)
	}{
		{"child count", func(tr *Tree) { tr.nodes.get("/a").children.add(tn("/a/ghost", meta{})) }},
		{"parent does not list", func(tr *Tree) { tr.nodes.get("/a").children.remove(tr.nodes.get("/a/b")) }},
		{"pzxid", func(tr *Tree) { tr.nodes.get("/a").pzxid = 0 }},
		{"creation counter", func(tr *Tree) { tr.nodes.get("/a").creates = 0 }},
		{"ephemeral index", func(tr *Tree) { delete(tr.ephemerals, 5) }},
		{"stale ephemeral index", func(tr *Tree) { tr.ephemerals[6] = map[string]struct{}{"/x": {}} }},
		{"ephemeral with children", func(tr *Tree) {
			k := tn("/a/e/k", meta{})
			tr.nodes.get("/a/e").children = &childSet{}
			tr.nodes.get("/a/e").children.add(k)
			tr.nodes.put(k)
			tr.nodes.get("/a/e").creates = 1
		}},
		{"container index", func(tr *Tree) { delete(tr.containers, "/c") }},
		{"data size", func(tr *Tree) { tr.dataSize++ }},
		{"snapshot size", func(tr *Tree) { tr.aclBytes++ }},
		{"owner on persistent", func(tr *Tree) { tr.nodes.get("/a").ext = 3 }},
		{"ACL count", func(tr *Tree) { tr.open.refs++ }},
		{"ACL not shared", func(tr *Tree) { tr.nodes.get("/a").acl = &aclList{entries: open, refs: 1} }},
		{"ACL left in the table", func(tr *Tree) { tr.acls["x"] = &aclList{entries: open} }},
		{"no root", func(tr *Tree) { tr.nodes.delete("/") }},
		{"node index tag", func(tr *Tree) { g, l := firstSlot(&tr.nodes); g.tags[l] ^= 1 }},
		{"node index shard count", func(tr *Tree) { tr.nodes.shards[0].count++ }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := New(Options{})
			c := newClient(t, tree)
			c.mustCreate("/a")
			c.mustCreate("/a/b")
			c.session = 5
			c.create("/a/e", jute.FlagEphemeral, 0)
			c.apply(createW(jute.OpCreateContainer, "/c", nil, open, 0, 0))
			require.NoError(t, tree.Check())
			tt.mutate(tree)
			err := tree.Check()
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvariant))
		})
	}
}
