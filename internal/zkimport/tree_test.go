package zkimport

import (
	"testing"

	"github.com/zkraft/zkraft/internal/zkimport/zkdisk"
)

// snapTree is a snapshot holding the root, /a (C=3, pzxid 10) and /a/x
// (czxid 10), as a fuzzy snapshot at zxid 8 could hold txn 10 already.
func snapTree(t *testing.T) *dataTree {
	t.Helper()
	s := &zkdisk.Snapshot{ACLs: nil, Nodes: []zkdisk.Node{
		{Path: "", ACLRef: -1},
		{Path: "/a", ACLRef: -1, Stat: zkdisk.StatPersisted{Czxid: 2, Mzxid: 2, Pzxid: 10, Cversion: 3}},
		{Path: "/a/x", ACLRef: -1, Stat: zkdisk.StatPersisted{Czxid: 10, Mzxid: 10, Pzxid: 10}},
		{Path: "/e", ACLRef: -1, Stat: zkdisk.StatPersisted{Czxid: 3, Mzxid: 3, Pzxid: 4, Cversion: 1}},
		{Path: "/e/1", ACLRef: -1, Stat: zkdisk.StatPersisted{Czxid: 4, Mzxid: 4, Pzxid: 4, EphemeralOwner: 0x77}},
	}}
	tr, err := newDataTree(s, 8)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func hdr(zxid int64, typ int32) zkdisk.TxnHeader {
	return zkdisk.TxnHeader{ClientID: 0x77, Zxid: zxid, Time: zxid * 1000, Type: typ}
}

// TestReplayRules checks the replay against DataTree.processTxn's rules for
// txns a fuzzy snapshot already holds (FileTxnSnapLog.processTransaction
// ignores their NoNode/NodeExists errors).
func TestReplayRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		txns  []zkdisk.Txn
		check func(t *testing.T, tr *dataTree)
	}{
		{"create already in the snapshot moves the parent's C and pzxid up only", []zkdisk.Txn{
			{Header: hdr(10, zkdisk.OpCreate), Op: zkdisk.Op{Type: zkdisk.OpCreate, Path: "/a/x", ParentCVersion: 2}},
			{Header: hdr(12, zkdisk.OpCreate), Op: zkdisk.Op{Type: zkdisk.OpCreate, Path: "/a/x", ParentCVersion: 5}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Cversion != 5 || st.Pzxid != 12 {
				t.Errorf("/a C %d pzxid %d, want 5 and 12", st.Cversion, st.Pzxid)
			}
		}},
		{"create2 already in the snapshot changes nothing", []zkdisk.Txn{
			{Header: hdr(12, zkdisk.OpCreate2), Op: zkdisk.Op{Type: zkdisk.OpCreate2, Path: "/a/x", ParentCVersion: 5}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Cversion != 3 || st.Pzxid != 10 {
				t.Errorf("/a C %d pzxid %d, want 3 and 10", st.Cversion, st.Pzxid)
			}
		}},
		{"a create that the snapshot already counted does not lower C", []zkdisk.Txn{
			{Header: hdr(9, zkdisk.OpCreate), Op: zkdisk.Op{Type: zkdisk.OpCreate, Path: "/a/y", ParentCVersion: 2}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Cversion != 3 || st.Pzxid != 10 {
				t.Errorf("/a C %d pzxid %d, want 3 and 10", st.Cversion, st.Pzxid)
			}
			if tr.nodes["/a/y"] == nil {
				t.Error("/a/y not created")
			}
		}},
		{"V0 create counts from the parent", []zkdisk.Txn{
			{Header: hdr(11, zkdisk.OpCreate), Op: zkdisk.Op{Type: zkdisk.OpCreate, Path: "/a/z", ParentCVersion: -1}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Cversion != 4 || st.Pzxid != 11 {
				t.Errorf("/a C %d pzxid %d, want 4 and 11", st.Cversion, st.Pzxid)
			}
		}},
		{"delete of a node already gone still moves the parent's pzxid", []zkdisk.Txn{
			{Header: hdr(13, zkdisk.OpDelete), Op: zkdisk.Op{Type: zkdisk.OpDelete, Path: "/a/gone"}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Pzxid != 13 {
				t.Errorf("/a pzxid %d, want 13", st.Pzxid)
			}
		}},
		{"a multi with an error op applies nothing", []zkdisk.Txn{
			{Header: hdr(14, zkdisk.OpMulti), Op: zkdisk.Op{Type: zkdisk.OpMulti, Ops: []zkdisk.Op{
				{Type: zkdisk.OpSetData, Path: "/a", Data: []byte("d"), Version: 1},
				{Type: zkdisk.OpError, Err: -101},
			}}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Version != 0 || st.Mzxid != 2 {
				t.Errorf("/a version %d mzxid %d, want 0 and 2", st.Version, st.Mzxid)
			}
		}},
		{"a multi applies every op at its zxid", []zkdisk.Txn{
			{Header: hdr(14, zkdisk.OpMulti), Op: zkdisk.Op{Type: zkdisk.OpMulti, Ops: []zkdisk.Op{
				{Type: zkdisk.OpSetData, Path: "/a", Data: []byte("d"), Version: 1},
				{Type: zkdisk.OpDelete, Path: "/a/x"},
			}}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Version != 1 || st.Mzxid != 14 || st.Pzxid != 14 || tr.nodes["/a/x"] != nil {
				t.Errorf("/a %+v, /a/x %v", st, tr.nodes["/a/x"])
			}
		}},
		{"closeSession deletes the listed and the known ephemerals", []zkdisk.Txn{
			{Header: hdr(15, zkdisk.OpCloseSession), Op: zkdisk.Op{Type: zkdisk.OpCloseSession, HasPaths: true, Paths: []string{"/e/none"}}},
		}, func(t *testing.T, tr *dataTree) {
			if tr.nodes["/e/1"] != nil || tr.nodes["/e"].stat.Pzxid != 15 || len(tr.nodes["/e"].children) != 0 {
				t.Errorf("/e %+v, /e/1 %v", tr.nodes["/e"].stat, tr.nodes["/e/1"])
			}
		}},
		{"setACL and setData take the txn's versions", []zkdisk.Txn{
			{Header: hdr(16, zkdisk.OpSetACL), Op: zkdisk.Op{Type: zkdisk.OpSetACL, Path: "/a", Version: 7}},
			{Header: hdr(17, zkdisk.OpSetData), Op: zkdisk.Op{Type: zkdisk.OpSetData, Path: "/a", Version: 9}},
		}, func(t *testing.T, tr *dataTree) {
			if st := tr.nodes["/a"].stat; st.Aversion != 7 || st.Version != 9 || st.Mzxid != 17 || st.Mtime != 17000 || tr.lastZxid != 17 {
				t.Errorf("/a %+v, last zxid %d", st, tr.lastZxid)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := snapTree(t)
			for _, tx := range tc.txns {
				tr.apply(tx)
			}
			tc.check(t, tr)
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		owner int64
		want  nodeKind
	}{
		{0, kindPersistent},
		{0x100000000000001, kindEphemeral},
		{containerOwner, kindContainer},
		{extendedMask | 3600000, kindTTL},
		{extendedMask | 1<<40 | 5, kindUnknown},
	} {
		if got := kindOf(tc.owner); got != tc.want {
			t.Errorf("kindOf(%#x) = %d, want %d", tc.owner, got, tc.want)
		}
	}
}
