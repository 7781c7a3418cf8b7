package znode

import (
	"slices"

	"github.com/zkraft/zkraft/internal/mutation"
)

// ExpiryCandidates returns, sorted, the containers that are empty and have
// had a child (C > 0), and the TTL nodes that are empty and whose mtime is
// more than their ttl before now (ContainerManager.getCandidates). The leader
// deletes them through the log with OpDeleteContainer / OpDeleteTTL, whose
// Apply checks the condition again.
func (t *Tree) ExpiryCandidates(now int64) (containers []string, ttls []string) {
	for p := range t.containers {
		if n := t.nodes.get(p); n != nil && expired(n, now) {
			containers = append(containers, p)
		}
	}
	for p := range t.ttls {
		if n := t.nodes.get(p); n != nil && expired(n, now) {
			ttls = append(ttls, p)
		}
	}
	slices.Sort(containers)
	slices.Sort(ttls)
	return containers, ttls
}

// expired reports whether the container or TTL node n may be removed at now.
func expired(n *node, now int64) bool {
	if n.children.len() > 0 {
		return false
	}
	switch n.kind {
	case kindContainer:
		return n.creates > 0
	case kindTTL:
		if mutation.Enabled(mutation.EarlyTTL) {
			return now-n.mtime > n.ttl()/2 // known wrong: half the TTL
		}
		return now-n.mtime > n.ttl()
	}
	return false
}
