package znode

import (
	"slices"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

// TestEachEphemeral: every ephemeral once, with its Stat, and nothing else;
// false stops the walk.
func TestEachEphemeral(t *testing.T) {
	tr := mustNewTree(t)
	c := newClient(t, tr)
	c.mustCreate("/p")
	var want []string
	for _, s := range []int64{7, 8} {
		c.session = s
		for _, name := range []string{"/p/a", "/p/b"} {
			p := name + string(rune('0'+s))
			c.create(p, 1, 0) // ephemeral
			want = append(want, p)
		}
	}
	var got []string
	tr.EachEphemeral(func(p string, st jute.Stat) bool {
		got = append(got, p)
		if st.EphemeralOwner != int64(p[len(p)-1]-'0') || st.Czxid == 0 {
			t.Errorf("%s: stat %+v", p, st)
		}
		return true
	})
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	n := 0
	tr.EachEphemeral(func(string, jute.Stat) bool { n++; return false })
	if n != 1 {
		t.Fatalf("f returned false but was called %d times", n)
	}
}

// TestEachNode: every node once, "/" and /zookeeper's included, with its
// ACL; false stops the walk.
func TestEachNode(t *testing.T) {
	tr := mustNewTree(t)
	c := newClient(t, tr)
	c.mustCreate("/p")
	var got []string
	tr.EachNode(func(p string, acl []jute.ACL) bool {
		got = append(got, p)
		if _, _, ok := tr.GetACL(p); !ok {
			t.Errorf("%s: no such node", p)
		}
		return true
	})
	if len(got) != tr.NodeCount() || !slices.Contains(got, "/") || !slices.Contains(got, "/p") {
		t.Fatalf("got %v, %d nodes", got, tr.NodeCount())
	}
	n := 0
	tr.EachNode(func(string, []jute.ACL) bool { n++; return false })
	if n != 1 {
		t.Fatalf("walk went on after false: %d calls", n)
	}
}
