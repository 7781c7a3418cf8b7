package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestMulti checks a successful multi through go-zk: results per op, one
// shared zxid, and ops that see the effects of earlier ops.
func TestMulti(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/old", []byte("o"), zk.FlagPersistent)
		res, err := c.Multi(
			&zk.CreateRequest{Path: p + "/new", Data: []byte("n"), Acl: openACL},
			&zk.SetDataRequest{Path: p + "/new", Data: []byte("n2"), Version: 0},
			&zk.CheckVersionRequest{Path: p + "/new", Version: 1},
			&zk.CreateRequest{Path: p + "/s-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.CreateRequest{Path: p + "/s-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.DeleteRequest{Path: p + "/old", Version: 0},
		)
		noErr(t, err, "multi")
		eq(t, len(res), 6, "number of results")
		for i, r := range res {
			noErr(t, r.Error, "result %d", i)
		}
		eq(t, res[0].String, p+"/new", "create result")
		eq(t, res[1].Stat.Version, 1, "setData result version")
		eq(t, res[3].String, p+"/s-0000000002", "first sequential create in multi")
		eq(t, res[4].String, p+"/s-0000000003", "second sequential create in multi")

		data, st, err := c.Get(p + "/new")
		noErr(t, err, "get new")
		eq(t, string(data), "n2", "data")
		eq(t, st.Czxid, st.Mzxid, "create and setData of one multi share a zxid")
		eq(t, *res[1].Stat, *st, "setData result stat")
		parent := mustStat(t, c, p)
		eq(t, parent.Pzxid, st.Czxid, "parent pzxid = the multi's zxid")
		eq(t, parent.NumChildren, 3, "children after multi")
		eq(t, parent.Cversion, 2*4-3, "cversion (4 creates, 3 children)")
		ok, _, err := c.Exists(p + "/old")
		noErr(t, err, "exists old")
		isTrue(t, !ok, "deleted by the multi")

		// An empty multi succeeds.
		res, err = c.Multi()
		noErr(t, err, "empty multi")
		eq(t, len(res), 0, "empty multi results")
	})
}

// TestMultiFailure checks that a failing multi applies nothing, uses up no
// sequence number, and reports per-op errors: 0 before the failing op, its
// code, then -2 RuntimeInconsistency after it.
func TestMultiFailure(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/x", []byte("x"), zk.FlagPersistent)
		before := mustStat(t, c, p)
		res, err := c.Multi(
			&zk.CreateRequest{Path: p + "/a", Data: []byte("a"), Acl: openACL},
			&zk.CreateRequest{Path: p + "/s-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: p + "/x", Data: []byte("y"), Version: -1},
			&zk.CheckVersionRequest{Path: p + "/x", Version: 0}, // x is at version 1 after the setData
			&zk.DeleteRequest{Path: p + "/x", Version: -1},
		)
		wantErr(t, err, zk.ErrBadVersion, "multi with a failing check")
		eq(t, len(res), 5, "number of results")
		for i := 0; i < 3; i++ {
			noErr(t, res[i].Error, "result %d (rolled back: code 0)", i)
		}
		wantErr(t, res[3].Error, zk.ErrBadVersion, "result of the failing check")
		eq(t, res[4].Error.Error(), "unknown error: -2", "result after the failing op (RuntimeInconsistency)")

		ok, _, err := c.Exists(p + "/a")
		noErr(t, err, "exists a")
		isTrue(t, !ok, "create of a failed multi not applied")
		data, _, err := c.Get(p + "/x")
		noErr(t, err, "get x")
		eq(t, string(data), "x", "setData of a failed multi not applied")
		eq(t, *mustStat(t, c, p), *before, "parent stat after a failed multi")
		eq(t, mustCreate(t, c, p+"/s-", nil, zk.FlagSequence), p+"/s-0000000001", "sequence number after a failed multi")

		// Raw: the reply header says 0 and every result is an error result.
		r := dial(t, s)
		var mr jute.MultiResponse
		hdr, err := r.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: p + "/b", ACL: juteOpen}},
			{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: p + "/missing", Version: -1}},
			{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: p + "/x", Version: -1}},
		}}, &mr)
		noErr(t, err, "raw multi")
		eq(t, hdr.Err, 0, "reply header err of a failed multi")
		deepEq(t, mr.Results, []jute.MultiResult{
			{Type: jute.OpError, Err: jute.ErrOk},
			{Type: jute.OpError, Err: jute.ErrNoNode},
			{Type: jute.OpError, Err: jute.ErrRuntimeInconsistency},
		}, "results of a failed multi")
	})
}

// TestMultiRaw checks result types and request-level errors that go-zk
// cannot show: create2 inside multi, reads mixed with writes, and multiRead.
func TestMultiRaw(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		r := dial(t, s)

		var mr jute.MultiResponse
		hdr, err := r.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: p + "/a", Data: []byte("a"), ACL: juteOpen}},
			{Type: jute.OpCreate2, Create: &jute.CreateRequest{Path: p + "/b", ACL: juteOpen}},
			{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: p + "/a", Data: []byte("aa"), Version: 0}},
			{Type: jute.OpCheck, Check: &jute.CheckVersionRequest{Path: p + "/a", Version: 1}},
			{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: p + "/b", Version: 0}},
		}}, &mr)
		noErr(t, err, "raw multi")
		eq(t, hdr.Err, 0, "multi err")
		eq(t, len(mr.Results), 5, "results")
		eq(t, mr.Results[0].Type, jute.OpCreate, "create result type")
		eq(t, mr.Results[0].Path, p+"/a", "create result path")
		// 3.8.0/3.8.1 answer type 1 to a create2 op, 3.8.2+ type 15.
		isTrue(t, mr.Results[1].Type == jute.OpCreate || mr.Results[1].Type == jute.OpCreate2, "create2 result type 1 or 15 (got %d)", mr.Results[1].Type)
		eq(t, mr.Results[1].Path, p+"/b", "create2 result path")
		eq(t, mr.Results[2].Type, jute.OpSetData, "setData result type")
		eq(t, mr.Results[2].Stat.Mzxid, hdr.Zxid, "setData result mzxid = the multi's zxid")
		eq(t, mr.Results[2].Stat.Czxid, hdr.Zxid, "created in the same multi")
		eq(t, mr.Results[3].Type, jute.OpCheck, "check result type")
		eq(t, mr.Results[4].Type, jute.OpDelete, "delete result type")

		// Reads mixed with writes: the whole request fails, header only.
		hdr, err = r.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: p + "/mixed", ACL: juteOpen}},
			{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: p + "/a"}},
		}}, nil)
		noErr(t, err, "mixed multi")
		eq(t, hdr.Err, jute.ErrMarshallingError, "multi with a read op")
		hdr, err = r.Call(jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: p + "/a"}},
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: p + "/mixed", ACL: juteOpen}},
		}}, nil)
		noErr(t, err, "mixed multiRead")
		eq(t, hdr.Err, jute.ErrMarshallingError, "multiRead with a write op")
		ok, _, err := c.Exists(p + "/mixed")
		noErr(t, err, "exists")
		isTrue(t, !ok, "nothing created by rejected multis")
		// The connection is still usable after -5.
		gd := rawGetData(t, r, p+"/a", false)
		eq(t, string(gd.Data), "aa", "data after rejected multis")
	})
}

// TestMultiRead checks multiRead (22): independent results, errors per op,
// header err 0, and no watches set even when asked.
func TestMultiRead(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/a", []byte("A"), zk.FlagPersistent)
		mustCreate(t, c, p+"/a/k1", nil, zk.FlagPersistent)
		mustCreate(t, c, p+"/a/k2", nil, zk.FlagPersistent)
		stA := mustStat(t, c, p+"/a")
		r := dial(t, s)
		var mr jute.MultiResponse
		hdr, err := r.Call(jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: p + "/a", Watch: true}},
			{Type: jute.OpGetChildren, Read: &jute.PathWatchRequest{Path: p + "/a", Watch: true}},
			{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: p + "/missing"}},
			{Type: jute.OpGetChildren, Read: &jute.PathWatchRequest{Path: p + "/a/k1"}},
		}}, &mr)
		noErr(t, err, "multiRead")
		eq(t, hdr.Err, 0, "multiRead err")
		eq(t, len(mr.Results), 4, "results")
		eq(t, mr.Results[0].Type, jute.OpGetData, "getData result type")
		eq(t, string(mr.Results[0].Data), "A", "getData result data")
		eq(t, mr.Results[0].Stat, zkStat(stA), "getData result stat")
		eq(t, mr.Results[1].Type, jute.OpGetChildren, "getChildren result type")
		deepEq(t, sorted(mr.Results[1].Children), []string{"k1", "k2"}, "getChildren result")
		eq(t, mr.Results[2].Type, jute.OpError, "missing node result type")
		eq(t, mr.Results[2].Err, jute.ErrNoNode, "missing node result err")
		eq(t, mr.Results[3].Type, jute.OpGetChildren, "result after an error still runs")
		eq(t, len(mr.Results[3].Children), 0, "leaf children")

		// multiRead sets no watch.
		_, err = c.Set(p+"/a", []byte("B"), -1)
		noErr(t, err, "set")
		mustCreate(t, c, p+"/a/k3", nil, zk.FlagPersistent)
		noNewEvents(t, r, 0)
	})
}
