package znode

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Quota bookkeeping (ZooKeeper's Quotas, PathTrie and DataTree quota
// updates, without enforcement).
//
// A quota path P is kept when its limits node
// /zookeeper/quota<P>/zookeeper_limits exists, P is not empty and P lies
// outside /zookeeper (so no stats node is ever inside a quota, and a stats
// update never feeds back into a count). The index Tree.quotas maps every
// kept P to its usage: the nodes whose longest kept prefix is P (PathTrie's
// findMaxPrefix, by whole path components) and the sum of their data
// lengths. It is derived from the tree alone: insert and remove maintain it
// (so a multi's rollback and ReadSnapshot rebuild it), setData and the undo
// of a meta change charge data-length changes to it.
//
// When a kept P's usage changes, P is marked dirty; each write op ends with
// flushQuotas, which rewrites /zookeeper/quota<P>/zookeeper_stats (if it
// exists) as "count=N,bytes=B" through save and setData: the undo log
// restores it, no version, mzxid or event changes, as in ZooKeeper.
//
// Where zkraft differs from ZooKeeper 3.8 (only for trees zkCli's setquota
// never builds): nested quotas charge a node to the innermost quota only,
// and creating or deleting an inner limits node moves its subtree's usage
// between the two (ZooKeeper's counts go stale there); a stats node is
// rewritten after a client's setData on it (ZooKeeper adds later deltas to
// the client's text); limits nodes directly under /zookeeper/quota, or for
// paths inside /zookeeper, are ignored.

// Names of the quota nodes (Quotas.limitNode, Quotas.statNode).
const (
	limitsName = "zookeeper_limits"
	statsName  = "zookeeper_stats"
)

// usage is what a quota path is charged with.
type usage struct {
	count int64 // nodes
	bytes int64 // sum of their data lengths
}

// render returns the stats node data for u (StatsTrack.toString).
func (u usage) render() []byte {
	b := make([]byte, 0, 32)
	b = append(b, "count="...)
	b = strconv.AppendInt(b, u.count, 10)
	b = append(b, ",bytes="...)
	return strconv.AppendInt(b, u.bytes, 10)
}

// quotaNodeOf reports whether path is the limits or stats node of a kept
// quota path, and returns that path and whether path is the limits node.
func quotaNodeOf(path string) (p string, limits, ok bool) {
	i := lastSlash(path)
	if i < 0 {
		return "", false, false
	}
	name := path[i+1:]
	if name != limitsName && name != statsName {
		return "", false, false
	}
	parent := path[:i]
	if !strings.HasPrefix(parent, quotaPath+"/") {
		return "", false, false
	}
	p = parent[len(quotaPath):]
	if p == procPath || strings.HasPrefix(p, procPath+"/") {
		return "", false, false
	}
	return p, name == limitsName, true
}

// statsPathOf returns the stats node path of quota path p.
func statsPathOf(p string) string {
	return quotaPath + p + "/" + statsName
}

// longestQuotaPrefix returns the longest key of set that is path or an
// ancestor of path, whole components only ("" if none). The root is never
// a key.
func longestQuotaPrefix[V any](set map[string]V, path string) string {
	if len(set) == 0 {
		return ""
	}
	for p := path; len(p) > 1; p = p[:lastSlash(p)] {
		if _, ok := set[p]; ok {
			return p
		}
	}
	return ""
}

// charge adds to the usage of the quota that path counts in, if any.
func (t *Tree) charge(path string, count, bytes int64) {
	p := longestQuotaPrefix(t.quotas, path)
	if p == "" {
		return
	}
	u := t.quotas[p]
	u.count += count
	u.bytes += bytes
	t.quotaDirty = append(t.quotaDirty, p)
}

// quotaInserted updates the quota index for n, just linked into the tree.
func (t *Tree) quotaInserted(n *node) {
	t.charge(n.path(), 1, int64(n.dlen))
	p, limits, ok := quotaNodeOf(n.path())
	switch {
	case !ok:
	case limits:
		u := t.recount(p)
		if e := longestQuotaPrefix(t.quotas, p); e != "" {
			t.quotas[e].count -= u.count
			t.quotas[e].bytes -= u.bytes
			t.quotaDirty = append(t.quotaDirty, e)
		}
		t.quotas[strings.Clone(p)] = &u // p is a view of n.pd (meta.pd)
		t.quotaDirty = append(t.quotaDirty, p)
	case t.quotas[p] != nil: // a new stats node: fill it in
		t.quotaDirty = append(t.quotaDirty, p)
	}
}

// quotaRemoved updates the quota index for n, just unlinked from the tree.
func (t *Tree) quotaRemoved(n *node) {
	t.charge(n.path(), -1, -int64(n.dlen))
	p, limits, ok := quotaNodeOf(n.path())
	if !ok || !limits {
		return
	}
	u := t.quotas[p]
	delete(t.quotas, p)
	if e := longestQuotaPrefix(t.quotas, p); e != "" && u != nil {
		t.quotas[e].count += u.count
		t.quotas[e].bytes += u.bytes
		t.quotaDirty = append(t.quotaDirty, e)
	}
}

// recount returns the usage of the subtree at p, leaving out the subtrees
// of kept quota paths below p.
func (t *Tree) recount(p string) usage {
	var u usage
	n := t.nodes.get(p)
	if n == nil {
		return u
	}
	stack := []*node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		u.count++
		u.bytes += int64(n.dlen)
		for c := range n.children.all() { // order does not matter: sums only
			if t.quotas[c.path()] == nil {
				stack = append(stack, c)
			}
		}
	}
	return u
}

// markStats marks path's quota dirty if path is the stats node of a kept
// quota, so that the next flush rewrites it.
func (t *Tree) markStats(path string) {
	if p, limits, ok := quotaNodeOf(path); ok && !limits && t.quotas[p] != nil {
		t.quotaDirty = append(t.quotaDirty, p)
	}
}

// flushQuotas rewrites the stats nodes of the dirty quota paths, in path
// order, through the undo log.
func (t *Tree) flushQuotas() {
	if len(t.quotaDirty) == 0 {
		return
	}
	slices.Sort(t.quotaDirty)
	for _, p := range slices.Compact(t.quotaDirty) {
		u := t.quotas[p]
		s := t.nodes.get(statsPathOf(p))
		if u == nil || s == nil {
			continue
		}
		if data := u.render(); s.data() != string(data) {
			t.save(s)
			t.setData(s, data)
		}
	}
	clear(t.quotaDirty)
	t.quotaDirty = t.quotaDirty[:0]
}

// refreshQuotas rewrites every kept stats node (after ReadSnapshot, as
// ZooKeeper's setupQuota does on load).
func (t *Tree) refreshQuotas() {
	for p := range t.quotas {
		t.quotaDirty = append(t.quotaDirty, p)
	}
	t.flushQuotas()
}

// checkQuotas recounts the quota usage of the nodes at paths (all of them,
// sorted) and returns a description of the first mismatch with the index
// or with a stats node, or "".
func (t *Tree) checkQuotas(paths []string) string {
	want := make(map[string]*usage)
	for _, p := range paths {
		if q, limits, ok := quotaNodeOf(p); ok && limits {
			want[q] = &usage{}
		}
	}
	for _, p := range paths {
		if q := longestQuotaPrefix(want, p); q != "" {
			want[q].count++
			want[q].bytes += int64(t.nodes.get(p).dlen)
		}
	}
	if len(t.quotaDirty) != 0 {
		return "quota stats left unflushed"
	}
	for _, q := range slices.Sorted(maps.Keys(t.quotas)) {
		if want[q] == nil {
			return "quota index holds " + strconv.Quote(q) + " without a limits node"
		}
	}
	for _, q := range slices.Sorted(maps.Keys(want)) {
		got := t.quotas[q]
		if got == nil {
			return "quota " + strconv.Quote(q) + " missing from the index"
		}
		if *got != *want[q] {
			return "quota " + strconv.Quote(q) + " charged " + string(got.render()) +
				", recount " + string(want[q].render())
		}
		if s := t.nodes.get(statsPathOf(q)); s != nil && s.data() != string(got.render()) {
			return "stats of quota " + strconv.Quote(q) + " hold " + strconv.Quote(s.data()) +
				", recount " + string(got.render())
		}
	}
	return ""
}
