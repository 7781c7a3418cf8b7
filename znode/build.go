package znode

import (
	"bytes"
	"fmt"

	"github.com/zkraft/zkraft/jute"
)

// BuiltNode is one node given to Build: a node as another server stored it
// (zkraft import reads them from ZooKeeper's files).
type BuiltNode struct {
	Path                              string // "/" for the root
	Data                              []byte
	ACL                               []jute.ACL
	Czxid, Mzxid, Ctime, Mtime, Pzxid int64
	Version, Aversion                 int32
	// Creates is ZooKeeper's stored cversion: the child creates ever made
	// under the node (clients see 2*Creates - numChildren; sequential
	// names use it).
	Creates   int32
	Container bool
	TTL       int64 // > 0: a TTL node of that many ms
}

// Build returns the tree holding exactly nodes (parents before children,
// the root first), checked as a snapshot is (ReadSnapshot): the result is
// the tree a zkraft snapshot of these nodes would restore.
func Build(opts Options, nodes []BuiltNode) (*Tree, error) {
	ns := make([]*node, 0, len(nodes))
	for _, b := range nodes {
		var acl *aclList // counted in no table: the snapshot read makes the tree's
		if len(b.ACL) > 0 {
			acl = &aclList{entries: b.ACL}
		}
		n := newNode(b.Path, b.Data, meta{
			acl: acl, czxid: b.Czxid, mzxid: b.Mzxid, ctime: b.Ctime, mtime: b.Mtime,
			pzxid: b.Pzxid, version: b.Version, aversion: b.Aversion, creates: b.Creates,
		})
		switch {
		case b.Container && b.TTL != 0:
			return nil, fmt.Errorf("znode: build: %q is both a container and a TTL node", b.Path)
		case b.Container:
			n.kind = kindContainer
		case b.TTL != 0:
			n.kind, n.ext = kindTTL, b.TTL
		}
		ns = append(ns, n)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, ns, nil); err != nil {
		return nil, err
	}
	t, err := ReadSnapshot(&buf, opts)
	if err != nil {
		return nil, fmt.Errorf("znode: build: %w", err)
	}
	return t, nil
}
