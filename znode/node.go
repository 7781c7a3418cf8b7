package znode

import "github.com/zkraft/zkraft/jute"

// kind is a node's type. ZooKeeper encodes it into ephemeralOwner; zkraft
// keeps it apart so the wire value stays 0 for containers and TTL nodes.
type kind uint8

const (
	kindPersistent kind = iota
	kindEphemeral
	kindContainer
	kindTTL
	kindCount // number of kinds; not a kind
)

// maxTTL is the largest TTL in ms ZooKeeper accepts (EphemeralType.TTL: 2^40-1).
const maxTTL = int64(1)<<40 - 1

// meta is the part of a node that writes change. The undo log saves and
// restores it whole.
type meta struct {
	data  []byte     // nil and empty are distinct; never mutated in place
	acl   []jute.ACL // never mutated in place (may be shared between nodes)
	czxid int64
	mzxid int64
	ctime int64
	mtime int64
	pzxid int64 // Invariant: >= czxid of every child
	// version is the data version; it wraps as a Java int does.
	version  int32
	aversion int32
	// creates is ZooKeeper's stored cversion C: the number of child creates
	// ever made under this node (never decremented by deletes).
	// Invariant: creates >= number of children made by txns.
	creates int32
	kind    kind
	owner   int64 // owning session for kindEphemeral, else 0
	ttl     int64 // ms, for kindTTL only (1..maxTTL), else 0
}

// node is one znode.
type node struct {
	path string // full path, "/" for the root
	meta
	// children holds the names (not paths) of the children; nil when empty.
	// Invariant: len(children) == the Stat's numChildren.
	children map[string]struct{}
}

// stat returns the node's client-visible Stat.
func (n *node) stat() jute.Stat {
	nc := int32(len(n.children))
	var owner int64
	if n.kind == kindEphemeral {
		owner = n.owner
	}
	return jute.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*n.creates - nc,
		Aversion:       n.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
	}
}

// name returns the last component of the node's path ("" for the root).
func (n *node) name() string {
	return n.path[lastSlash(n.path)+1:]
}
