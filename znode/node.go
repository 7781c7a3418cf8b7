package znode

import (
	"unsafe"

	"github.com/zkraft/zkraft/jute"
)

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
// restores it whole, and a freeze copies it (frozen.go): it stays a plain
// value. Its fields are ordered so that a node takes 112 bytes (the
// 112-byte size class): 16 bytes a node more would cost 16 MB at a
// million znodes.
type meta struct {
	// data is the node's data, immutable as a string is; a string header
	// is 8 bytes smaller than a slice's. hasData keeps nil apart from
	// empty (ZooKeeper does): false means nil, and data is "" then. Read
	// it through dataBytes, set it through Tree.setData.
	data string
	// acl is the node's ACL, shared with every node of the tree holding an
	// equal one (Tree.acls); nil for an empty ACL (only a snapshot or
	// Build can make one).
	acl   *aclList
	czxid int64
	mzxid int64
	ctime int64
	mtime int64
	pzxid int64 // Invariant: >= czxid of every child
	// ext is the owning session of a kindEphemeral node and the ttl in ms
	// (1..maxTTL) of a kindTTL node, else 0: the two are exclusive by kind.
	// Read it through owner and ttl.
	ext int64
	// version is the data version; it wraps as a Java int does.
	version  int32
	aversion int32
	// creates is ZooKeeper's stored cversion C: the number of child creates
	// ever made under this node (never decremented by deletes).
	// Invariant: creates >= number of children made by txns.
	creates int32
	kind    kind
	hasData bool
}

// dataBytes returns the node's data: nil for none, else a slice of the
// data string's memory, which callers must not modify (the read methods'
// rule for the tree's slices). Its capacity is its length, so an append
// to it copies.
func (m *meta) dataBytes() []byte {
	switch {
	case !m.hasData:
		return nil
	case m.data == "":
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(m.data), len(m.data))
}

// owner returns the owning session of an ephemeral node, else 0.
func (m *meta) owner() int64 {
	if m.kind == kindEphemeral {
		return m.ext
	}
	return 0
}

// ttl returns the ttl in ms of a TTL node, else 0.
func (m *meta) ttl() int64 {
	if m.kind == kindTTL {
		return m.ext
	}
	return 0
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
	return jute.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*n.creates - nc,
		Aversion:       n.aversion,
		EphemeralOwner: n.owner(),
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
	}
}

// name returns the last component of the node's path ("" for the root).
func (n *node) name() string {
	return n.path[lastSlash(n.path)+1:]
}
