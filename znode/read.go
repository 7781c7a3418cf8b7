package znode

import (
	"slices"
	"strings"

	"github.com/zkraft/zkraft/jute"
)

// The read methods never change the tree; they may run concurrently with
// each other but not with a mutation. Paths are not validated (as in
// ZooKeeper): an invalid path such as "/x/" is simply not found. Slices they
// return that belong to the tree (data, ACLs) must not be modified.

// Exists returns the Stat of the node at path.
func (t *Tree) Exists(path string) (jute.Stat, bool) {
	n := t.lookup(path)
	if n == nil {
		return jute.Stat{}, false
	}
	return n.stat(), true
}

// GetData returns the node's data (nil stays nil) and Stat. The data is a
// view of the node's immutable string, read-only memory for some values:
// callers must never write into it (its capacity is its length, so an
// append copies).
func (t *Tree) GetData(path string) (data []byte, stat jute.Stat, ok bool) {
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, false
	}
	return n.dataBytes(), n.stat(), true
}

// GetChildren returns the names of the node's children, sorted, and its Stat.
func (t *Tree) GetChildren(path string) (children []string, stat jute.Stat, ok bool) {
	children, stat, ok = t.AppendChildren(nil, path)
	if ok && children == nil {
		children = []string{} // a node without children: empty, not nil
	}
	return children, stat, ok
}

// AppendChildren is GetChildren appending the names to dst (a caller's
// reused scratch; nil makes a slice with room for the children). The
// result is nil when the node does not exist.
func (t *Tree) AppendChildren(dst []string, path string) (children []string, stat jute.Stat, ok bool) {
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, false
	}
	children = slices.Grow(dst, n.children.len())
	for c := range n.children.all() {
		children = append(children, c.name())
	}
	slices.Sort(children[len(dst):])
	return children, n.stat(), true
}

// GetACL returns the node's ACL (callers must not modify it) and Stat.
func (t *Tree) GetACL(path string) ([]jute.ACL, jute.Stat, bool) {
	n := t.lookup(path)
	if n == nil {
		return nil, jute.Stat{}, false
	}
	return n.acl.list(), n.stat(), true
}

// CountDescendants returns the number of nodes below path, all levels
// (getAllChildrenNumber). For "/" it counts the built-in nodes too.
func (t *Tree) CountDescendants(path string) (int32, bool) {
	n := t.lookup(path)
	if n == nil {
		return 0, false
	}
	if n.path() == rootPath {
		return int32(t.nodes.len() - 1), true
	}
	var count int32
	stack := []*node{n}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for child := range cur.children.all() {
			count++
			if child.children.len() > 0 {
				stack = append(stack, child)
			}
		}
	}
	return count, true
}

// Ephemerals returns, sorted, the paths of session's ephemerals that start
// with prefix as a plain string ("/ab" matches "/abc"). An empty or "/"
// prefix (after trimming spaces, as ZooKeeper does) matches all.
func (t *Tree) Ephemerals(session int64, prefix string) []string {
	s := t.ephemerals[session]
	if trimmed := strings.TrimSpace(prefix); trimmed == "" || trimmed == rootPath {
		prefix = ""
	}
	out := make([]string, 0, len(s))
	for p := range s {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// EphemeralOwners returns the sessions that own ephemerals, sorted.
func (t *Tree) EphemeralOwners() []int64 {
	out := make([]int64, 0, len(t.ephemerals))
	for s := range t.ephemerals {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// NodeCount returns the number of nodes, built-ins included (4 on a fresh
// tree; ZooKeeper's srvr shows one more because it holds the root twice).
func (t *Tree) NodeCount() int { return t.nodes.len() }

// ApproximateDataSize returns the sum over nodes of len(path) + len(data),
// as DataTree.approximateDataSize.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// CheckPermission reports whether the node at path exists and, if it does,
// whether ids may do perm on it (CheckACL against its ACL).
func (t *Tree) CheckPermission(path string, perm int32, ids []jute.Id) (exists bool, allowed bool) {
	n := t.lookup(path)
	if n == nil {
		return false, false
	}
	return true, CheckACL(n.acl.list(), perm, ids)
}
