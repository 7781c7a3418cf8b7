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
