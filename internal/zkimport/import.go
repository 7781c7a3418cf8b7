package zkimport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/znode"
)

// Options of an import.
type Options struct {
	From    string   // ZooKeeper's dataDir
	FromLog string   // ZooKeeper's dataLogDir; "" if it is dataDir
	DataDir string   // the new zkraft data directory
	MyID    uint64   // this member's id; 0: the DataDir's myid file, else 1
	Voters  []uint64 // the raft group's members; empty: MyID alone
}

// Result describes a finished import.
type Result struct {
	Source
	Nodes     int    // nodes in the imported tree
	Dropped   int    // ephemeral nodes of old sessions dropped
	RaftIndex uint64 // raft index (and zxid) of the seeded snapshot
	MyID      uint64
	Voters    []uint64
}

// raftTerm is the term of the seeded snapshot; the first election moves past it.
const raftTerm = 1

// Import reads opts.From (and FromLog) and writes a zkraft data directory
// into opts.DataDir, which must be empty or hold only a myid file. Nothing
// is written unless everything was read and checked; a failure while
// writing removes what it wrote.
func Import(opts Options) (*Result, error) {
	myid, err := checkTarget(opts.DataDir, opts.MyID)
	if err != nil {
		return nil, err
	}
	voters := opts.Voters
	if len(voters) == 0 {
		voters = []uint64{myid}
	}
	if !slices.Contains(voters, myid) {
		return nil, fmt.Errorf("import: myid %d is not one of the members %v", myid, voters)
	}
	t, src, err := Load(opts.From, opts.FromLog)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	res := &Result{Source: *src, MyID: myid, Voters: voters}
	index := src.LastZxid
	dropZxid := index + 1
	nodes, dropped, err := t.export(dropZxid)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if dropped > 0 {
		// The old sessions' ephemerals are deleted as a closeSession at the
		// next zxid would delete them; the snapshot is taken there.
		index = dropZxid
	}
	if index <= 0 {
		index = 1
	}
	res.Nodes, res.Dropped, res.RaftIndex = len(nodes), dropped, uint64(index)
	tree, err := znode.Build(znode.Options{ExtendedTypesEnabled: true}, nodes)
	if err != nil {
		return nil, fmt.Errorf("import: ZooKeeper's tree does not make a valid zkraft tree: %w", err)
	}
	payload, err := server.ImportedSnapshot(tree, index)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("import: create %s: %w", opts.DataDir, err)
	}
	if err := consensus.Seed(opts.DataDir, raftTerm, uint64(index), voters, payload); err != nil {
		cleanup(opts.DataDir)
		return nil, fmt.Errorf("import: %w", err)
	}
	if opts.MyID != 0 {
		if err := os.WriteFile(filepath.Join(opts.DataDir, "myid"), []byte(fmt.Sprintf("%d\n", myid)), 0o644); err != nil {
			cleanup(opts.DataDir)
			return nil, fmt.Errorf("import: write myid: %w", err)
		}
	}
	return res, nil
}

// checkTarget refuses a data directory holding anything but a myid file
// and returns the member id to use.
func checkTarget(dir string, myid uint64) (uint64, error) {
	if dir == "" {
		return 0, errors.New("import: no target data directory")
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("import: %w", err)
	}
	var fileID uint64
	for _, e := range ents {
		if e.Name() != "myid" {
			return 0, fmt.Errorf("import: %s is not empty (it holds %s): import only into an empty directory or one holding only myid", dir, e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, "myid"))
		if err != nil {
			return 0, fmt.Errorf("import: %w", err)
		}
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &fileID); err != nil || fileID == 0 {
			return 0, fmt.Errorf("import: %s/myid holds %q, not a member id", dir, strings.TrimSpace(string(b)))
		}
	}
	switch {
	case myid != 0 && fileID != 0 && myid != fileID:
		return 0, fmt.Errorf("import: --myid %d but %s/myid says %d", myid, dir, fileID)
	case myid != 0:
		return myid, nil
	case fileID != 0:
		return fileID, nil
	}
	return 1, nil
}

// cleanup removes what Seed may have written.
func cleanup(dir string) {
	_ = os.Remove(filepath.Join(dir, "raft.db"))
	_ = os.RemoveAll(filepath.Join(dir, "wal"))
	_ = os.RemoveAll(filepath.Join(dir, "snap"))
	_ = os.Remove(filepath.Join(dir, "SEEDING"))
}

// export lists the tree's nodes for znode.Build, parents first, without the
// old sessions' ephemerals: each dropped one moves its parent's pzxid to
// dropZxid, as deleting it there would. /zookeeper/config is zkraft's own
// (it describes the ensemble running now), not ZooKeeper's.
func (t *dataTree) export(dropZxid int64) ([]znode.BuiltNode, int, error) {
	var out []znode.BuiltNode
	dropped := 0
	var walk func(path string, n *zkNode) error
	walk = func(path string, n *zkNode) error {
		zpath := path
		if zpath == "" {
			zpath = "/"
		}
		b := znode.BuiltNode{
			Path: zpath, Data: n.data, ACL: n.acl,
			Czxid: n.stat.Czxid, Mzxid: n.stat.Mzxid, Ctime: n.stat.Ctime, Mtime: n.stat.Mtime, Pzxid: n.stat.Pzxid,
			Version: n.stat.Version, Aversion: n.stat.Aversion, Creates: n.stat.Cversion,
		}
		if zpath == "/zookeeper/config" {
			b = znode.BuiltNode{Path: zpath, Data: []byte{}, Aversion: -1,
				ACL: []jute.ACL{{Perms: jute.PermRead, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}
		}
		switch kindOf(n.stat.EphemeralOwner) {
		case kindContainer:
			b.Container = true
		case kindTTL:
			b.TTL = n.stat.EphemeralOwner & ttlValueMask
		case kindUnknown:
			return fmt.Errorf("node %q has ephemeralOwner %#x, an extended type this import does not know", zpath, n.stat.EphemeralOwner)
		}
		idx := len(out)
		out = append(out, b)
		names := make([]string, 0, len(n.children))
		for c := range n.children {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, c := range names {
			cp := path + "/" + c
			cn := t.nodes[cp]
			if cn == nil {
				return fmt.Errorf("node %q lists child %q, which does not exist", zpath, c)
			}
			if kindOf(cn.stat.EphemeralOwner) == kindEphemeral {
				dropped++
				if dropZxid > out[idx].Pzxid {
					out[idx].Pzxid = dropZxid
				}
				continue
			}
			if err := walk(cp, cn); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", t.nodes[""]); err != nil {
		return nil, 0, err
	}
	return out, dropped, nil
}
