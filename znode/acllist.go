package znode

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zkraft/zkraft/jute"
)

// Stored ACLs are shared: a node holds a pointer to an aclList (8 bytes
// instead of a 24-byte slice header), and all the tree's nodes with equal
// ACLs hold the same aclList, found through the table Tree.acls.
//
// The table is reference-counted, so it holds only the ACLs some node of
// the tree has: an aclList enters it when its first node is inserted or
// set to it (acquire), and leaves it when its last node is removed or set
// to another one (release); both keep Tree.aclBytes, the ACLs' share of the
// snapshot's length. insert, remove, setACL and a multi's rollback
// of a node's meta are the only places a node in the tree gets or loses an
// ACL, and each keeps the counts. A freeze's or the undo log's copy of a
// meta holds its aclList without counting: an aclList that left the table
// stays valid (its entries never change), it is just no longer shared with
// later equal ACLs. The table affects only which equal lists share memory,
// never anything a client, a snapshot or the digest sees, so apply stays
// deterministic whatever it holds.
//
// Invariants (checked by Check): every node's aclList is the one the table
// holds for its entries; refs is the number of the tree's nodes holding
// the aclList; the table holds no aclList with refs 0; the open ACL
// (world:anyone, all perms) is always Tree.open; Tree.aclBytes is the sum
// of encodedLen over the tree's nodes' ACLs.

// aclList is a stored ACL.
type aclList struct {
	entries []jute.ACL // never empty, never mutated
	// refs counts the tree's nodes holding the list. Only the apply
	// goroutine reads or writes it (a Frozen's encoder reads entries only).
	refs int
}

// list returns the entries of a, nil for a nil a (an empty ACL).
func (a *aclList) list() []jute.ACL {
	if a == nil {
		return nil
	}
	return a.entries
}

// encodedLen returns the bytes a's entries take in a snapshot (and in its
// table key): len(appendACLKey(nil, a.list())).
func (a *aclList) encodedLen() int {
	size := 0
	for _, e := range a.list() {
		size += 4 + 4 + len(e.ID.Scheme) + 4 + len(e.ID.ID)
	}
	return size
}

// appendACLKey appends the table key of entries: their snapshot encoding.
func appendACLKey(b []byte, entries []jute.ACL) []byte {
	for _, a := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = appendString(b, a.ID.Scheme)
		b = appendString(b, a.ID.ID)
	}
	return b
}

// findACL returns the aclList for entries: the open one, the table's equal
// one, or a new one holding a copy of entries (not in the table until
// acquired). It returns nil for no entries. entries may be reused by the
// caller afterwards.
func (t *Tree) findACL(entries []jute.ACL) *aclList {
	switch {
	case len(entries) == 0:
		return nil
	case len(entries) == 1 && entries[0] == openEntry:
		return t.open
	}
	t.aclKey = appendACLKey(t.aclKey[:0], entries)
	if a := t.acls[string(t.aclKey)]; a != nil {
		return a
	}
	return &aclList{entries: slices.Clone(entries)}
}

// acquire counts a node of the tree holding a and returns the aclList the
// node must hold: a, or, if a is not in the table and another equal list
// is, that one (which no sequence of writes and rollbacks makes, but which
// keeps the table right if one did).
func (t *Tree) acquire(a *aclList) *aclList {
	if a == nil {
		return nil
	}
	if a.refs == 0 {
		t.aclKey = appendACLKey(t.aclKey[:0], a.entries)
		if b := t.acls[string(t.aclKey)]; b != nil && b != a {
			a = b
		} else {
			t.acls[string(t.aclKey)] = a
		}
	}
	a.refs++
	t.aclBytes += int64(a.encodedLen())
	return a
}

// release uncounts a node of the tree holding a, dropping a from the table
// when no node holds it any more.
func (t *Tree) release(a *aclList) {
	if a == nil {
		return
	}
	a.refs--
	t.aclBytes -= int64(a.encodedLen())
	if a.refs == 0 {
		t.aclKey = appendACLKey(t.aclKey[:0], a.entries)
		if t.acls[string(t.aclKey)] == a {
			delete(t.acls, string(t.aclKey))
		}
	}
}

// checkACLs verifies the table against the tree's nodes (see above), given
// the paths of all the nodes.
func (t *Tree) checkACLs(paths []string) string {
	held := make(map[*aclList]int)
	var key []byte
	var last *aclList // the ACL of the nodes just before, run of them
	run := 0
	for _, p := range paths {
		n := t.nodes.get(p)
		if n.acl == nil {
			continue
		}
		if len(n.acl.entries) == 0 {
			return fmt.Sprintf("%q has an empty aclList", p)
		}
		if n.acl.entries[0] == openEntry && len(n.acl.entries) == 1 && n.acl != t.open {
			return fmt.Sprintf("%q has an open ACL that is not the tree's", p)
		}
		if n.acl != last { // siblings usually share one: look it up once
			key = appendACLKey(key[:0], n.acl.entries)
			if t.acls[string(key)] != n.acl {
				return fmt.Sprintf("the ACL of %q is not the table's", p)
			}
			if last != nil {
				held[last] += run
			}
			last, run = n.acl, 0
		}
		run++
	}
	if last != nil {
		held[last] += run
	}
	if len(held) != len(t.acls) {
		return fmt.Sprintf("ACL table holds %d lists, nodes hold %d", len(t.acls), len(held))
	}
	if t.open.refs > 0 && t.acls[string(appendACLKey(nil, t.open.entries))] != t.open {
		return "the open ACL is not the table's"
	}
	for _, a := range t.acls {
		if a.refs != held[a] {
			return fmt.Sprintf("ACL %v counts %d nodes, %d hold it", a.entries, a.refs, held[a])
		}
	}
	return ""
}
