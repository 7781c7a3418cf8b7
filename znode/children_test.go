package znode

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// A childSet agrees with a map model through random adds and removes,
// growing and shrinking, and keeps its invariants (verify) after each.
func TestChildSetMatchesModel(t *testing.T) {
	for _, tt := range []struct {
		name   string
		nodes  int
		ops    int
		addPct int
	}{
		{"small", 5, 2000, 50},
		{"grows", 3000, 20000, 70},
		{"shrinks", 3000, 20000, 35},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.nodes)))
			pool := make([]*node, tt.nodes)
			for i := range pool {
				pool[i] = tn(fmt.Sprintf("/p/n%d", i), meta{})
			}
			var c *childSet
			model := map[*node]bool{}
			for op := range tt.ops {
				n := pool[rng.IntN(len(pool))]
				if rng.IntN(100) < tt.addPct {
					if !model[n] {
						if c == nil {
							c = &childSet{}
						}
						c.add(n)
						model[n] = true
					}
				} else {
					c.remove(n) // absent: no change
					delete(model, n)
				}
				require.NoError(t, c.verify(), "op %d", op)
				require.Equal(t, len(model), c.len(), "op %d", op)
				require.Equal(t, model[n], c.has(n), "op %d", op)
			}
			var got, want []string
			for n := range c.all() {
				got = append(got, n.path())
			}
			for n := range model {
				want = append(want, n.path())
			}
			slices.Sort(got)
			slices.Sort(want)
			require.Equal(t, want, got)
		})
	}
}

// A nil childSet is the empty set.
func TestChildSetNil(t *testing.T) {
	var c *childSet
	require.Zero(t, c.len())
	require.False(t, c.has(tn("/a", meta{})))
	for range c.all() {
		t.Fatal("nil set yields a child")
	}
	require.NoError(t, c.verify())
}

// The ephemeral, container, TTL and quota indexes hold copies of paths,
// never views of a node's pd: a view would keep that pd (path and data)
// alive after setData replaced it, one stale value per indexed node.
func TestIndexKeysDoNotShareNodeMemory(t *testing.T) {
	tree := New(Options{ExtendedTypesEnabled: true})
	c := newClient(t, tree)
	c.mk("/zookeeper/quota/q", nil, 0)
	c.mk("/zookeeper/quota/q/zookeeper_limits", []byte("count=10,bytes=-1"), 0)
	r, _ := c.apply(createW(jute.OpCreate, "/e", []byte("v"), open, jute.FlagEphemeral, -1))
	require.Zero(t, r.Err)
	r, _ = c.apply(createW(jute.OpCreateContainer, "/c", []byte("v"), open, jute.FlagContainer, -1))
	require.Zero(t, r.Err)
	r, _ = c.apply(createW(jute.OpCreateTTL, "/t", []byte("v"), open, jute.FlagPersistentWithTTL, 1000))
	require.Zero(t, r.Err)
	inNode := func(key string) bool {
		n := tree.nodes.get(key)
		if n == nil {
			n = tree.nodes.get("/zookeeper/quota" + key + "/zookeeper_limits")
		}
		require.NotNil(t, n, key)
		start := uintptr(unsafe.Pointer(n.pd))
		p := uintptr(unsafe.Pointer(unsafe.StringData(key)))
		return p >= start && p < start+uintptr(n.plen+n.dlen)
	}
	var keys []string
	for _, s := range tree.ephemerals {
		for k := range s {
			keys = append(keys, k)
		}
	}
	for k := range tree.containers {
		keys = append(keys, k)
	}
	for k := range tree.ttls {
		keys = append(keys, k)
	}
	for k := range tree.quotas {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"/e", "/c", "/t", "/q"}, keys)
	for _, k := range keys {
		require.False(t, inNode(k), "index key %q is a view of a node's pd", k)
	}
}
