package znode

import (
	"sync/atomic"
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
// restores it whole (restore), and a freeze copies it (frozen.go): it stays
// a plain value. Its fields are ordered so that it takes 88 bytes and a
// node 96 (the 96-byte size class): 16 bytes a node more would cost 16 MB
// at a million znodes.
type meta struct {
	// pd points to one allocation holding the node's path (plen bytes)
	// then its data (dlen bytes), never mutated in place (as a string's
	// bytes are): one object a znode instead of two, and no string
	// header for each. setData replaces it with a new allocation holding
	// the same path; so the path part of every pd a node ever had is its
	// path, which is why the frozen encoder's sort may read pd without
	// the freeze's mutex (sortPath). pd is written only by setPD (an
	// atomic store) once the node is in a tree. Read the fields through
	// path, data and dataBytes.
	pd *byte
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
	// plen is the path's length: set when the node is made, never changed
	// (sortPath reads it without synchronization). dlen is the data's.
	plen uint32
	dlen uint32
	kind kind
	// hasData keeps nil apart from empty (ZooKeeper does): false means
	// nil, and dlen is 0 then.
	hasData bool
}

// makePD returns a new allocation holding path then data, for meta.pd.
// It always allocates, so that a pd never shares memory with the caller's
// strings (a request's, or an older pd's).
func makePD(path string, data []byte) *byte {
	if len(path)+len(data) == 0 {
		return nil
	}
	b := make([]byte, len(path)+len(data))
	copy(b, path)
	copy(b[len(path):], data)
	return unsafe.SliceData(b)
}

// initPathData sets the path and data of a meta not yet in a tree.
func (m *meta) initPathData(path string, data []byte) {
	m.pd, m.plen, m.dlen, m.hasData = makePD(path, data), uint32(len(path)), uint32(len(data)), data != nil
}

// setPD replaces pd (and dlen) of a node that may be in a tree, by an
// atomic store: a frozen encoder's sort may be reading pd (sortPath).
func (m *meta) setPD(pd *byte, dlen uint32) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&m.pd)), unsafe.Pointer(pd))
	m.dlen = dlen
}

// restore sets m to s, the meta the same node had earlier (a multi's
// rollback): field by field, so that pd is written only by setPD, and plen,
// which never changes and which the frozen sort reads without a lock
// (sortPath), not at all (TestRollbackRacesFrozenSort under -race).
// TestRestoreCopiesEveryField catches a field added to meta and not here.
func (m *meta) restore(s *meta) {
	m.setPD(s.pd, s.dlen)
	m.acl = s.acl
	m.czxid, m.mzxid, m.ctime, m.mtime, m.pzxid, m.ext = s.czxid, s.mzxid, s.ctime, s.mtime, s.pzxid, s.ext
	m.version, m.aversion, m.creates = s.version, s.aversion, s.creates
	m.kind, m.hasData = s.kind, s.hasData
}

// path returns the node's path: a view of pd's memory.
func (m *meta) path() string { return unsafe.String(m.pd, m.plen) }

// data returns the node's data ("" for none): a view of pd's memory.
func (m *meta) data() string {
	if m.dlen == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(m.pd), m.plen)), m.dlen)
}

// dataBytes returns the node's data: nil for none, else a slice of pd's
// memory, which callers must not modify (the read methods' rule for the
// tree's slices). Its capacity is its length, so an append to it copies.
func (m *meta) dataBytes() []byte {
	switch {
	case !m.hasData:
		return nil
	case m.dlen == 0:
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(m.pd), m.plen)), m.dlen)
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
	meta
	// children holds the child nodes; nil when there are none.
	// Invariant: children.len() == the Stat's numChildren.
	children *childSet
}

// newNode returns a node at path with data (nil stays nil) and the rest
// of m (whose pd, plen, dlen and hasData it sets).
func newNode(path string, data []byte, m meta) *node {
	n := &node{meta: m}
	n.initPathData(path, data)
	return n
}

// sortPath returns the node's path for a sort that may run while the
// tree is written (a frozen encoder's): pd is loaded atomically (setPD
// stores it so), and every pd of a node starts with its path, plen bytes
// that never change.
func (n *node) sortPath() string {
	return unsafe.String((*byte)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&n.pd)))), n.plen)
}

// stat returns the node's client-visible Stat.
func (n *node) stat() jute.Stat {
	nc := int32(n.children.len())
	return jute.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*n.creates - nc,
		Aversion:       n.aversion,
		EphemeralOwner: n.owner(),
		DataLength:     int32(n.dlen),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
	}
}

// name returns the last component of the node's path ("" for the root).
func (n *node) name() string {
	p := n.path()
	return p[lastSlash(p)+1:]
}
