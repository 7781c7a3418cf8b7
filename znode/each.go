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
			n := t.nodes.get(p)
			if n == nil {
				continue // the index lists exactly the ephemerals (Check); never here
			}
			if !f(p, n.stat()) {
				return
			}
		}
	}
}

// EachChild calls f with the name of every child of the node at path, in
// no particular order, without the sorting and copying of GetChildren; it
// reports whether the node exists. A replicated decision may use it only
// if its outcome does not depend on the order (the lock-delay's "does any
// sibling precede this node"). f must not modify the tree.
func (t *Tree) EachChild(path string, f func(name string)) bool {
	n := t.lookup(path)
	if n == nil {
		return false
	}
	for c := range n.children.all() {
		f(c.name())
	}
	return true
}

// EachNode calls f with the path and ACL of every node until f returns
// false, in no particular order (the backup command's "may the caller read
// every node" check). f must not modify the tree or the ACL.
func (t *Tree) EachNode(f func(path string, acl []jute.ACL) bool) {
	for n := range t.nodes.all() {
		if !f(n.path(), n.acl.list()) {
			return
		}
	}
}
