package znode

import (
	"strings"
	"sync"

	"github.com/zkraft/zkraft/jute"
)

// Options configures the checks a write must pass. A Tree holds defaults;
// a txn whose TxnContext carries Options is decided by those instead. A
// replicated tree must pass them in every txn (from the proposer), since
// members' configurations can differ, for instance during a rolling TLS
// upgrade.
type Options struct {
	// ExtendedTypesEnabled allows TTL nodes
	// (zookeeper.extendedTypesEnabled). When false, TTL modes give
	// Unimplemented (-6).
	ExtendedTypesEnabled bool
	// X509Enabled makes "x509:<subject DN>" a valid ACL id and an
	// authenticated identity for the "auth" scheme, as ZooKeeper's
	// authProvider.x509 does.
	X509Enabled bool
	// SASLEnabled makes "sasl:<name>" a valid ACL id and an authenticated
	// identity for the "auth" scheme, as ZooKeeper's authProvider.sasl does.
	SASLEnabled bool
}

// Tree is the ZooKeeper data tree. See the package documentation for its
// concurrency rules and invariants.
type Tree struct {
	opts Options
	// nodes indexes every node by its full path ("/" for the root)
	// (nodeindex.go).
	nodes nodeIndex
	// ephemerals indexes kindEphemeral nodes by owning session.
	ephemerals map[int64]map[string]struct{}
	// spareEphemerals are sessions' emptied ephemeral sets, at most
	// maxSpareEphemerals, taken (last first) by the next sessions that need
	// one: with a lock per client (Curator's recipe) a session's only
	// ephemeral comes and goes with every acquire and release, and its set
	// (a map and its group: two allocations) came and went with it. Only a
	// set that never held more than smallEphemeralSet paths (one map group;
	// a Go map never shrinks) is kept, so the spares hold no memory of a
	// large set.
	spareEphemerals []map[string]struct{}
	// largeEphemeralSets are the sessions whose set held more than
	// smallEphemeralSet paths. Invariant: each is a key of ephemerals.
	largeEphemeralSets map[int64]struct{}

	containers map[string]struct{} // paths of kindContainer nodes
	ttls       map[string]struct{} // paths of kindTTL nodes
	// dataSize is the sum over nodes of len(path)+len(data)
	// (DataTree.approximateDataSize).
	dataSize int64
	// open is the shared [31 world:anyone] ACL.
	open *aclList
	// acls maps the key (appendACLKey) of every ACL a node of the tree
	// holds to its one aclList (acllist.go); aclKey is scratch for keys.
	acls   map[string]*aclList
	aclKey []byte
	// aclBytes is the sum over nodes of the bytes their ACL entries take
	// in a snapshot (aclList.encodedLen), kept by acquire and release.
	// With dataSize and the node count it gives the snapshot's exact
	// length (snapshotSize) without a pass over the nodes.
	aclBytes int64
	// quotas maps every kept quota path to its usage (quota.go); derived
	// from the tree by insert, remove and setData, never stored.
	quotas map[string]*usage
	// quotaDirty lists quota paths whose stats node may need rewriting;
	// empty between writes.
	quotaDirty []string

	// undo is the multi's undo log; recording is on only inside a multi.
	undo      []undoRec
	recording bool

	// Copy-on-write freezes (frozen.go). freezeMu serializes Freeze calls,
	// which run under a read lock; writes, which hold the write lock,
	// read and prune freezes without it.
	freezeMu sync.Mutex
	freezes  []*freezeState // active freezes (and released ones not pruned yet)
}

// New returns a tree holding ZooKeeper 3.8's built-in nodes: "/",
// "/zookeeper", "/zookeeper/quota" and "/zookeeper/config", all with zero
// stats. /zookeeper/config has ACL world:anyone READ, empty (non-nil) data
// and aversion -1; /zookeeper shows cversion -2 (C = 0, two children).
func New(opts Options) *Tree {
	t := newEmpty(opts)
	root := newNode(rootPath, []byte{}, meta{acl: t.acquire(t.open)})
	t.nodes.put(root)
	t.dataSize += int64(len(rootPath))
	for _, n := range []*node{
		newNode(procPath, []byte{}, meta{acl: t.open}),
		newNode(quotaPath, []byte{}, meta{acl: t.open}),
		newNode(configPath, []byte{}, meta{aversion: -1,
			acl: t.findACL([]jute.ACL{{Perms: jute.PermRead, ID: jute.Id{Scheme: schemeWorld, ID: idAnyone}}})}),
	} {
		p := n.path()
		t.insert(n, t.nodes.get(parentOf(p, lastSlash(p))))
	}
	return t
}

func newEmpty(opts Options) *Tree {
	return &Tree{
		opts:       opts,
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		open:       &aclList{entries: []jute.ACL{openEntry}},
		acls:       make(map[string]*aclList),
		quotas:     make(map[string]*usage),
	}
}

// lookup returns the node at path. As in ZooKeeper, whose node map also holds
// the root under "", the empty path names the root.
func (t *Tree) lookup(path string) *node {
	if path == "" {
		path = rootPath
	}
	return t.nodes.get(path)
}

// insert links n under parent and into the indexes (quotas included). It
// does not touch the parent's meta (the caller does, after saving it), nor
// stats nodes (the write's flushQuotas does).
func (t *Tree) insert(n, parent *node) {
	t.nodes.put(n)
	// A node gets another aclList only if the table is off (see acquire):
	// never in fact, so a frozen node reinserted by a rollback is not
	// written here.
	if a := t.acquire(n.acl); a != n.acl {
		n.acl = a
	}
	if parent.children == nil {
		parent.children = &childSet{}
	}
	parent.children.add(n)
	// The indexes keep a copy of the path: n.path() is a view of n.pd,
	// which a later setData replaces, and a key holding it would keep the
	// old data alive.
	switch n.kind {
	case kindEphemeral:
		s := t.ephemerals[n.ext]
		if s == nil {
			if k := len(t.spareEphemerals) - 1; k >= 0 {
				s = t.spareEphemerals[k]
				t.spareEphemerals[k] = nil
				t.spareEphemerals = t.spareEphemerals[:k]
			} else {
				s = make(map[string]struct{})
			}
			t.ephemerals[n.ext] = s
		}
		s[strings.Clone(n.path())] = struct{}{}
		if len(s) == smallEphemeralSet+1 {
			if t.largeEphemeralSets == nil {
				t.largeEphemeralSets = make(map[int64]struct{})
			}
			t.largeEphemeralSets[n.ext] = struct{}{}
		}
	case kindContainer:
		t.containers[strings.Clone(n.path())] = struct{}{}
	case kindTTL:
		t.ttls[strings.Clone(n.path())] = struct{}{}
	}
	t.dataSize += int64(n.plen + n.dlen)
	t.quotaInserted(n)
	if t.recording {
		t.undo = append(t.undo, undoRec{op: undoInsert, n: n, parent: parent})
	}
}

// remove unlinks the childless node n from parent and the indexes.
func (t *Tree) remove(n, parent *node) {
	path := n.path()
	t.nodes.delete(path)
	t.release(n.acl)
	parent.children.remove(n)
	if parent.children.len() == 0 {
		parent.children = nil
	}
	switch n.kind {
	case kindEphemeral:
		if s := t.ephemerals[n.ext]; s != nil {
			delete(s, path)
			if len(s) == 0 {
				delete(t.ephemerals, n.ext)
				if _, large := t.largeEphemeralSets[n.ext]; large {
					delete(t.largeEphemeralSets, n.ext)
				} else if len(t.spareEphemerals) < maxSpareEphemerals {
					t.spareEphemerals = append(t.spareEphemerals, s) // empty; one group at most
				}
			}
		}
	case kindContainer:
		delete(t.containers, path)
	case kindTTL:
		delete(t.ttls, path)
	}
	t.dataSize -= int64(n.plen + n.dlen)
	t.quotaRemoved(n)
	if t.recording {
		t.undo = append(t.undo, undoRec{op: undoRemove, n: n, parent: parent})
	}
}

// smallEphemeralSet is the most paths a session's ephemeral set may have
// held for it to be kept as the spare once empty: what one group of a Go
// map holds.
const smallEphemeralSet = 8

// maxSpareEphemerals bounds the emptied ephemeral sets a tree keeps for
// reuse: as many as sessions that create and delete their ephemerals
// concurrently, within a few KiB.
const maxSpareEphemerals = 64

// save records n's meta in the undo log and for the active freezes
// (frozen.go) before a change to it. Every write to a node's meta must come
// after save(n), except to a node created by the same write before it is
// inserted.
func (t *Tree) save(n *node) {
	if len(t.freezes) > 0 {
		t.saveFrozen(n)
	}
	if t.recording {
		t.undo = append(t.undo, undoRec{op: undoMeta, n: n, saved: n.meta})
	}
}

// setData replaces n's data with a copy of data (nil stays nil), keeping
// dataSize and quota usage current. The caller saved n.
func (t *Tree) setData(n *node, data []byte) {
	delta := int64(len(data)) - int64(n.dlen)
	t.dataSize += delta
	path := n.path()
	t.charge(path, 0, delta)
	n.setPD(makePD(path, data), uint32(len(data)))
	n.hasData = data != nil
}
