package zkimport

import (
	"fmt"
	"strings"

	"github.com/zkraft/zkraft/internal/zkimport/zkdisk"
	"github.com/zkraft/zkraft/jute"
)

// zkNode is a node of dataTree, ZooKeeper's DataNode.
type zkNode struct {
	data     []byte
	acl      []jute.ACL
	stat     zkdisk.StatPersisted
	children map[string]struct{}
}

// dataTree replays ZooKeeper's DataTree.processTxn on a snapshot, with the
// same idempotence rules, so that the result equals what ZooKeeper itself
// rebuilds from the same files. Paths are ZooKeeper's: "" is the root.
type dataTree struct {
	nodes      map[string]*zkNode
	ephemerals map[int64]map[string]struct{}
	lastZxid   int64
	// sessions are the old server's live sessions.
	sessions map[int64]struct{}
}

var openACL = []jute.ACL{{Perms: 31, ID: jute.Id{Scheme: "world", ID: "anyone"}}}

func newDataTree(s *zkdisk.Snapshot, snapZxid int64) (*dataTree, error) {
	t := &dataTree{sessions: map[int64]struct{}{}, nodes: map[string]*zkNode{}, ephemerals: map[int64]map[string]struct{}{}, lastZxid: snapZxid}
	for _, n := range s.Nodes {
		acl, ok := s.ACLs[n.ACLRef]
		if n.ACLRef == zkdisk.OpenACLRef {
			acl, ok = openACL, true
		}
		if !ok {
			return nil, fmt.Errorf("node %q refers to ACL list %d, which the snapshot does not hold", n.Path, n.ACLRef)
		}
		if _, dup := t.nodes[n.Path]; dup {
			return nil, fmt.Errorf("node %q twice in the snapshot", n.Path)
		}
		zn := &zkNode{data: n.Data, acl: acl, stat: n.Stat}
		i := strings.LastIndexByte(n.Path, '/')
		if i < 0 {
			if n.Path != "" {
				return nil, fmt.Errorf("node path %q does not start with /", n.Path)
			}
			t.nodes[""] = zn
			continue
		}
		parent := t.nodes[n.Path[:i]]
		if parent == nil {
			return nil, fmt.Errorf("node %q comes before its parent", n.Path)
		}
		t.nodes[n.Path] = zn
		t.link(parent, n.Path, zn)
	}
	if t.nodes[""] == nil {
		return nil, fmt.Errorf("the snapshot has no root node")
	}
	return t, nil
}

func (t *dataTree) link(parent *zkNode, path string, n *zkNode) {
	if parent.children == nil {
		parent.children = map[string]struct{}{}
	}
	parent.children[path[strings.LastIndexByte(path, '/')+1:]] = struct{}{}
	if o := n.stat.EphemeralOwner; kindOf(o) == kindEphemeral {
		if t.ephemerals[o] == nil {
			t.ephemerals[o] = map[string]struct{}{}
		}
		t.ephemerals[o][path] = struct{}{}
	}
}

type nodeKind int

const (
	kindPersistent nodeKind = iota
	kindEphemeral
	kindContainer
	kindTTL
	kindUnknown
)

// EphemeralType's encodings of ephemeralOwner.
const (
	containerOwner = int64(-1 << 63)
	extendedMask   = int64(-1) << 56 // 0xff00000000000000
	reservedMask   = int64(0xffff) << 40
	ttlValueMask   = int64(1)<<40 - 1
)

func kindOf(owner int64) nodeKind {
	switch {
	case owner == 0:
		return kindPersistent
	case owner == containerOwner:
		return kindContainer
	case owner&extendedMask == extendedMask:
		if owner&reservedMask != 0 {
			return kindUnknown
		}
		return kindTTL
	}
	return kindEphemeral
}

func splitPath(p string) (parent, child string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// apply is DataTree.processTxn for a top-level txn. Errors a replay meets
// on a fuzzy snapshot (NoNode, NodeExists) are ignored, as ZooKeeper
// ignores them.
func (t *dataTree) apply(tx zkdisk.Txn) {
	h := tx.Header
	t.applyOp(h, tx.Op)
	if tx.Op.Type == zkdisk.OpMulti {
		failed := false
		for _, op := range tx.Op.Ops {
			if op.Type == zkdisk.OpError {
				failed = true
			}
		}
		if !failed {
			for _, op := range tx.Op.Ops {
				t.applyOp(h, op)
			}
		}
	}
	if h.Zxid > t.lastZxid {
		t.lastZxid = h.Zxid
	}
}

// applyOp applies one op.
func (t *dataTree) applyOp(h zkdisk.TxnHeader, op zkdisk.Op) {
	switch op.Type {
	case zkdisk.OpCreate, zkdisk.OpCreate2, zkdisk.OpCreateContainer, zkdisk.OpCreateTTL:
		var owner int64
		switch {
		case op.Type == zkdisk.OpCreateContainer:
			owner = containerOwner
		case op.Type == zkdisk.OpCreateTTL:
			owner = extendedMask | (op.TTL & ttlValueMask)
		case op.Ephemeral:
			owner = h.ClientID
		}
		if t.createNode(op.Path, op.Data, op.ACL, owner, op.ParentCVersion, h.Zxid, h.Time) == errNodeExists &&
			op.Type == zkdisk.OpCreate {
			// processTxn's fix for a node recreated in the fuzzy range
			// (a multi's create ops get it too: their sub-header has
			// the op's type).
			parent, _ := splitPath(op.Path)
			if p := t.nodes[strings.TrimSuffix(parent, "/")]; p != nil {
				cv := op.ParentCVersion
				if cv == -1 {
					cv = p.stat.Cversion + 1
				}
				if cv > p.stat.Cversion {
					p.stat.Cversion, p.stat.Pzxid = cv, h.Zxid
				}
			}
		}
	case zkdisk.OpDelete, zkdisk.OpDeleteContainer:
		t.deleteNode(op.Path, h.Zxid)
	case zkdisk.OpSetData, zkdisk.OpReconfig:
		if n := t.nodes[op.Path]; n != nil {
			n.data, n.stat.Mtime, n.stat.Mzxid, n.stat.Version = op.Data, h.Time, h.Zxid, op.Version
		}
	case zkdisk.OpSetACL:
		if n := t.nodes[op.Path]; n != nil {
			n.acl, n.stat.Aversion = op.ACL, op.Version
		}
	case zkdisk.OpCreateSession:
		t.sessions[h.ClientID] = struct{}{}
	case zkdisk.OpCloseSession:
		delete(t.sessions, h.ClientID)
		local := t.ephemerals[h.ClientID]
		delete(t.ephemerals, h.ClientID)
		for _, p := range op.Paths {
			t.deleteNode(p, h.Zxid)
			delete(local, p)
		}
		for p := range local {
			t.deleteNode(p, h.Zxid)
		}
	}
}

type txnErr int

const (
	errNone txnErr = iota
	errNoNode
	errNodeExists
)

// createNode is DataTree.createNode.
func (t *dataTree) createNode(path string, data []byte, acl []jute.ACL, owner int64, parentCVersion int32, zxid, time int64) txnErr {
	pp, name := splitPath(path)
	parent := t.nodes[pp]
	if parent == nil {
		return errNoNode
	}
	if _, ok := parent.children[name]; ok {
		return errNodeExists
	}
	if parentCVersion == -1 {
		parentCVersion = parent.stat.Cversion + 1
	}
	if parentCVersion > parent.stat.Cversion {
		parent.stat.Cversion, parent.stat.Pzxid = parentCVersion, zxid
	}
	n := &zkNode{data: data, acl: acl, stat: zkdisk.StatPersisted{
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time, EphemeralOwner: owner}}
	t.nodes[path] = n
	t.link(parent, path, n)
	return errNone
}

// deleteNode is DataTree.deleteNode: the parent's pzxid moves even when
// the child is already gone.
func (t *dataTree) deleteNode(path string, zxid int64) txnErr {
	pp, name := splitPath(path)
	parent := t.nodes[pp]
	if parent == nil {
		return errNoNode
	}
	delete(parent.children, name)
	if zxid > parent.stat.Pzxid {
		parent.stat.Pzxid = zxid
	}
	n := t.nodes[path]
	if n == nil {
		return errNoNode
	}
	delete(t.nodes, path)
	if o := n.stat.EphemeralOwner; kindOf(o) == kindEphemeral {
		if s := t.ephemerals[o]; s != nil {
			delete(s, path)
		}
	}
	return errNone
}
