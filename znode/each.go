package znode

import "github.com/zkraft/zkraft/jute"

// EachEphemeral calls f with the path and Stat of every ephemeral node until
// f returns false, in no particular order: it is for monitoring views (the
// server's lock scan), which sort what they show, never for a replicated
// decision. It reads the ephemeral index only, O(ephemerals), without the
// sorting and copying of Ephemerals. f must not modify the tree.
func (t *Tree) EachEphemeral(f func(path string, st jute.Stat) bool) {
	for _, paths := range t.ephemerals {
		for p := range paths {
			n := t.nodes[p]
			if n == nil {
				continue // the index lists exactly the ephemerals (Check); never here
			}
			if !f(p, n.stat()) {
				return
			}
		}
	}
}
