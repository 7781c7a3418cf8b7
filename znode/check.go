package znode

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvariant is wrapped by every error Check returns.
var ErrInvariant = errors.New("znode: invariant violated")

// Check verifies the tree's invariants and returns the first violation
// found (in path order), wrapping ErrInvariant:
//   - the node index's invariants hold (nodeIndex.verify);
//   - the root exists; every other node's parent exists and lists it;
//     every listed child exists;
//   - a parent's pzxid >= each child's czxid;
//   - a node's creation counter >= its children made by txns (the built-in
//     children of "/" and "/zookeeper" were never created);
//   - ephemerals have no children and a non-zero owner; TTL nodes have a ttl
//     in 1..2^40-1; the ephemeral, container and TTL indexes match the nodes;
//   - ApproximateDataSize matches the nodes, and so does the snapshot
//     length the tree keeps (snapshotSize: the sum of encodedSize);
//   - the quota index holds exactly the quota paths of the limits nodes,
//     each charged with a recount of the nodes it owns (longest quota
//     prefix), and every such quota's stats node holds that recount as
//     "count=N,bytes=B".
//
// It costs O(nodes log nodes) (times the path depth when quotas exist);
// tests run it after every test.
func (t *Tree) Check() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, args...))
	}
	if err := t.nodes.verify(); err != nil {
		return fmt.Errorf("%w: node index: %w", ErrInvariant, err)
	}
	if t.nodes.get(rootPath) == nil {
		return fail("no root")
	}
	paths := make([]string, 0, t.nodes.len())
	for n := range t.nodes.all() {
		paths = append(paths, n.path())
	}
	slices.Sort(paths)
	return t.checkPaths(paths)
}

// checkPaths is Check given the paths of all the tree's nodes, sorted.
func (t *Tree) checkPaths(paths []string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, args...))
	}
	if len(paths) != t.nodes.len() {
		return fail("%d paths given for %d nodes", len(paths), t.nodes.len())
	}
	var size, encoded int64
	ephemerals, containers, ttls := 0, 0, 0
	for _, p := range paths {
		n := t.nodes.get(p)
		if n == nil {
			return fail("no node at %q", p)
		}
		size += int64(n.plen + n.dlen)
		encoded += int64(encodedSize(&n.meta))
		if err := n.children.verify(); err != nil {
			return fail("%q: %v", p, err)
		}
		if p != rootPath {
			parent := t.nodes.get(parentOf(p, lastSlash(p)))
			if parent == nil {
				return fail("%q has no parent", p)
			}
			if !parent.children.has(n) {
				return fail("parent of %q does not list it", p)
			}
			if parent.pzxid < n.czxid {
				return fail("parent of %q has pzxid %d < czxid %d", p, parent.pzxid, n.czxid)
			}
		}
		made := int32(0)
		for c := range n.children.all() {
			cp := c.path()
			if t.nodes.get(cp) != c {
				return fail("%q lists missing child %q", p, cp)
			}
			if parentOf(cp, lastSlash(cp)) != p {
				return fail("%q lists %q", p, cp)
			}
			if !isSpecialPath(cp) {
				made++
			}
		}
		if n.creates >= 0 && n.creates < made {
			return fail("%q has creation counter %d < %d children", p, n.creates, made)
		}
		switch n.kind {
		case kindEphemeral:
			ephemerals++
			if n.ext == 0 {
				return fail("ephemeral %q has owner 0", p)
			}
			if n.children.len() > 0 {
				return fail("ephemeral %q has children", p)
			}
			if _, ok := t.ephemerals[n.ext][p]; !ok {
				return fail("ephemeral %q missing from the index of %#x", p, n.ext)
			}
		case kindContainer:
			containers++
			if _, ok := t.containers[p]; !ok {
				return fail("container %q missing from the index", p)
			}
		case kindTTL:
			ttls++
			if n.ext <= 0 || n.ext > maxTTL {
				return fail("TTL node %q has ttl %d", p, n.ext)
			}
			if _, ok := t.ttls[p]; !ok {
				return fail("TTL node %q missing from the index", p)
			}
		case kindPersistent:
		default:
			return fail("%q has kind %d", p, n.kind)
		}
		if (n.kind == kindPersistent || n.kind == kindContainer) && n.ext != 0 {
			return fail("%q of kind %d has owner or ttl %#x", p, n.kind, n.ext)
		}
	}
	indexed := 0
	for owner, s := range t.ephemerals {
		if len(s) == 0 {
			return fail("empty ephemeral index for %#x", owner)
		}
		indexed += len(s)
	}
	for owner := range t.largeEphemeralSets {
		if _, ok := t.ephemerals[owner]; !ok {
			return fail("large ephemeral set of %#x that owns none", owner)
		}
	}
	for _, s := range t.spareEphemerals {
		if len(s) != 0 {
			return fail("a spare ephemeral set holds %d paths", len(s))
		}
	}
	if indexed != ephemerals || len(t.containers) != containers || len(t.ttls) != ttls {
		return fail("indexes hold %d ephemerals, %d containers, %d TTL nodes; tree has %d, %d, %d",
			indexed, len(t.containers), len(t.ttls), ephemerals, containers, ttls)
	}
	if size != t.dataSize {
		return fail("data size %d, nodes hold %d", t.dataSize, size)
	}
	if encoded += snapOverhead; t.snapshotSize() != encoded {
		return fail("snapshot size %d (ACL bytes %d), nodes encode to %d", t.snapshotSize(), t.aclBytes, encoded)
	}
	if msg := t.checkACLs(paths); msg != "" {
		return fail("%s", msg)
	}
	if msg := t.checkQuotas(paths); msg != "" {
		return fail("%s", msg)
	}
	if t.recording || len(t.undo) != 0 {
		return fail("undo log left open")
	}
	return nil
}
