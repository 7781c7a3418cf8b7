package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestDelete checks versioned deletes and their error codes.
func TestDelete(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/n", []byte("x"), zk.FlagPersistent)
		_, err := c.Set(p+"/n", []byte("y"), 0)
		noErr(t, err, "set")
		wantErr(t, c.Delete(p+"/n", 0), zk.ErrBadVersion, "delete with a stale version")
		wantErr(t, c.Delete(p+"/n", 5), zk.ErrBadVersion, "delete with a future version")
		noErr(t, c.Delete(p+"/n", 1), "delete with the current version")
		wantErr(t, c.Delete(p+"/n", -1), zk.ErrNoNode, "delete a deleted node")
		wantErr(t, c.Delete(p+"/missing/x", -1), zk.ErrNoNode, "delete under a missing parent")

		mustCreate(t, c, p+"/full", nil, zk.FlagPersistent)
		mustCreate(t, c, p+"/full/child", nil, zk.FlagPersistent)
		wantErr(t, c.Delete(p+"/full", -1), zk.ErrNotEmpty, "delete a node with children")
		// The version is checked before the children.
		wantErr(t, c.Delete(p+"/full", 3), zk.ErrBadVersion, "delete a non-empty node with a bad version")
		noErr(t, c.Delete(p+"/full/child", -1), "delete child")
		noErr(t, c.Delete(p+"/full", -1), "delete the emptied node with version -1")

		r := dial(t, s)
		for _, path := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
			eq(t, call(t, r, jute.OpDelete, &jute.DeleteRequest{Path: path, Version: -1}, nil), jute.ErrBadArguments, "delete %s", path)
		}
		eq(t, call(t, r, jute.OpDelete, &jute.DeleteRequest{Path: "rel", Version: -1}, nil), jute.ErrBadArguments, "delete a relative path")
		// ZooKeeper 3.8.0 does not validate the path of a delete beyond its
		// parent: a trailing slash names a missing node.
		eq(t, call(t, r, jute.OpDelete, &jute.DeleteRequest{Path: p + "/", Version: -1}, nil), jute.ErrNoNode, "delete a path with a trailing slash")
	})
}

// TestExists checks exists with and without a node, and that a watch set on
// a missing node fires NodeCreated.
func TestExists(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		ok, st, err := c.Exists(p + "/n")
		noErr(t, err, "exists missing")
		isTrue(t, !ok, "missing node reported absent")
		eq(t, *st, zk.Stat{}, "stat of a missing node")

		ok, _, ch, err := c.ExistsW(p + "/n")
		noErr(t, err, "existsW missing")
		isTrue(t, !ok, "missing node reported absent")
		mustCreate(t, c, p+"/n", []byte("abc"), zk.FlagPersistent)
		wantEvent(t, ch, zk.EventNodeCreated, p+"/n")

		ok, st, err = c.Exists(p + "/n")
		noErr(t, err, "exists")
		isTrue(t, ok, "created node exists")
		eq(t, st.DataLength, 3, "dataLength")

		// Raw: a missing node answers -101 with no body and keeps the watch.
		r := dial(t, s)
		eq(t, call(t, r, jute.OpExists, &jute.PathWatchRequest{Path: p + "/m", Watch: true}, nil), jute.ErrNoNode, "raw exists missing")
		var sr jute.StatResponse
		callOK(t, r, jute.OpExists, &jute.PathWatchRequest{Path: p + "/n"}, &sr)
		eq(t, sr.Stat, zkStat(st), "raw exists stat")
		mustCreate(t, c, p+"/m", nil, zk.FlagPersistent)
		e, err := r.WaitEvent(eventTimeout)
		noErr(t, err, "NodeCreated on the raw connection")
		eq(t, e, ev(jute.EventNodeCreated, p+"/m"), "event")
		// exists does not validate paths: a bad path is just missing.
		eq(t, call(t, r, jute.OpExists, &jute.PathWatchRequest{Path: p + "/m/"}, nil), jute.ErrNoNode, "exists with a trailing slash")
	})
}

// TestGetSetData checks versions, zxids, times and data round trips,
// including null versus empty data.
func TestGetSetData(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		n := p + "/n"
		mustCreate(t, c, n, []byte("v0"), zk.FlagPersistent)
		data, st0, err := c.Get(n)
		noErr(t, err, "get")
		eq(t, string(data), "v0", "data")

		st1, err := c.Set(n, []byte("v1-longer"), 0)
		noErr(t, err, "set version 0")
		eq(t, st1.Version, 1, "version after set")
		eq(t, st1.Czxid, st0.Czxid, "czxid after set")
		isTrue(t, st1.Mzxid > st0.Mzxid, "mzxid grows")
		eq(t, st1.Pzxid, st0.Pzxid, "pzxid unchanged by setData")
		eq(t, st1.Ctime, st0.Ctime, "ctime unchanged")
		isTrue(t, st1.Mtime >= st0.Mtime, "mtime does not go back")
		eq(t, st1.DataLength, 9, "dataLength")
		eq(t, st1.Cversion, 0, "cversion")

		_, err = c.Set(n, []byte("x"), 0)
		wantErr(t, err, zk.ErrBadVersion, "set with a stale version")
		st2, err := c.Set(n, []byte("v2"), -1)
		noErr(t, err, "set any version")
		eq(t, st2.Version, 2, "version after set -1")
		data, st, err := c.Get(n)
		noErr(t, err, "get")
		eq(t, string(data), "v2", "data")
		eq(t, *st, *st2, "stat of get vs set")
		_, err = c.Set(p+"/missing", nil, -1)
		wantErr(t, err, zk.ErrNoNode, "set missing")
		_, _, err = c.Get(p + "/missing")
		wantErr(t, err, zk.ErrNoNode, "get missing")

		// Null and empty data stay apart (raw client: go-zk sends both as empty).
		r := dial(t, s)
		rawCreate(t, r, p+"/null", nil, jute.FlagPersistent)
		rawCreate(t, r, p+"/empty", []byte{}, jute.FlagPersistent)
		gd := rawGetData(t, r, p+"/null", false)
		isTrue(t, gd.Data == nil, "created with null data: getData returns null (got %q)", gd.Data)
		eq(t, gd.Stat.DataLength, 0, "dataLength of null data")
		gd = rawGetData(t, r, p+"/empty", false)
		isTrue(t, gd.Data != nil && len(gd.Data) == 0, "created with empty data: getData returns empty, not null (got %v)", gd.Data)
		var sr jute.StatResponse
		callOK(t, r, jute.OpSetData, &jute.SetDataRequest{Path: p + "/empty", Data: nil, Version: -1}, &sr)
		eq(t, sr.Stat.Version, 1, "version after a null setData")
		gd = rawGetData(t, r, p+"/empty", false)
		isTrue(t, gd.Data == nil, "after setData(null): getData returns null (got %v)", gd.Data)
		// getData does not validate paths.
		eq(t, call(t, r, jute.OpGetData, &jute.PathWatchRequest{Path: p + "/n/"}, nil), jute.ErrNoNode, "getData with a trailing slash")
		eq(t, call(t, r, jute.OpSetData, &jute.SetDataRequest{Path: p + "/n/", Version: -1}, nil), jute.ErrBadArguments, "setData with a trailing slash")
	})
}

// TestGetSetACL checks getACL/setACL, the aversion and error codes.
func TestGetSetACL(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		n := p + "/n"
		mustCreate(t, c, n, []byte("x"), zk.FlagPersistent)
		acl, st0, err := c.GetACL(n)
		noErr(t, err, "getACL")
		deepEq(t, acl, openACL, "default ACL")
		eq(t, st0.Aversion, 0, "aversion")

		readAll := []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}, {Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}
		st1, err := c.SetACL(n, readAll, 0)
		noErr(t, err, "setACL")
		eq(t, st1.Aversion, 1, "aversion after setACL")
		eq(t, st1.Version, 0, "version unchanged by setACL")
		eq(t, st1.Mzxid, st0.Mzxid, "mzxid unchanged by setACL")
		_, err = c.SetACL(n, openACL, 0)
		wantErr(t, err, zk.ErrBadVersion, "setACL with a stale aversion")
		acl, st2, err := c.GetACL(n)
		noErr(t, err, "getACL")
		deepEq(t, acl, readAll, "ACL after setACL")
		eq(t, *st2, *st1, "stat of getACL vs setACL")

		_, err = c.SetACL(n, []zk.ACL{}, -1)
		wantErr(t, err, zk.ErrInvalidACL, "setACL with an empty list")
		_, err = c.SetACL(n, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "not-an-ip"}}, -1)
		wantErr(t, err, zk.ErrInvalidACL, "setACL with a bad ip")
		_, err = c.SetACL(n, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}}, -1)
		wantErr(t, err, zk.ErrInvalidACL, "setACL with a bad digest id")
		_, err = c.SetACL(p+"/missing", openACL, -1)
		wantErr(t, err, zk.ErrNoNode, "setACL missing")
		_, _, err = c.GetACL(p + "/missing")
		wantErr(t, err, zk.ErrNoNode, "getACL missing")

		// Duplicate entries are removed.
		st3, err := c.SetACL(n, append(openACL, openACL...), -1)
		noErr(t, err, "setACL with duplicates")
		eq(t, st3.Aversion, 2, "aversion")
		acl, _, err = c.GetACL(n)
		noErr(t, err, "getACL")
		deepEq(t, acl, openACL, "duplicates removed")
	})
}

// TestChildren checks getChildren and getChildren2.
func TestChildren(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		children, st, err := c.Children(p)
		noErr(t, err, "children of an empty node")
		eq(t, len(children), 0, "no children")
		eq(t, st.NumChildren, 0, "numChildren")
		for _, name := range []string{"b", "a", "c"} {
			mustCreate(t, c, p+"/"+name, nil, zk.FlagPersistent)
		}
		mustCreate(t, c, p+"/a/deep", nil, zk.FlagPersistent)
		children, st, err = c.Children(p)
		noErr(t, err, "children")
		deepEq(t, sorted(children), []string{"a", "b", "c"}, "children (names only, direct only)")
		eq(t, *st, *mustStat(t, c, p), "getChildren2 stat")
		eq(t, st.NumChildren, 3, "numChildren")
		eq(t, st.Cversion, 3, "cversion")
		_, _, err = c.Children(p + "/missing")
		wantErr(t, err, zk.ErrNoNode, "children of a missing node")

		r := dial(t, s)
		var gc jute.GetChildrenResponse
		callOK(t, r, jute.OpGetChildren, &jute.PathWatchRequest{Path: p}, &gc)
		deepEq(t, sorted(gc.Children), []string{"a", "b", "c"}, "getChildren (8)")
		var gc2 jute.GetChildren2Response
		callOK(t, r, jute.OpGetChildren2, &jute.PathWatchRequest{Path: p + "/b"}, &gc2)
		isTrue(t, gc2.Children != nil && len(gc2.Children) == 0, "a leaf's children are an empty vector, not null (got %#v)", gc2.Children)
	})
}

// TestSync checks that sync echoes the path and checks nothing.
func TestSync(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		got, err := c.Sync(p)
		noErr(t, err, "sync")
		eq(t, got, p, "sync path")
		got, err = c.Sync(p + "/missing")
		noErr(t, err, "sync of a missing node")
		eq(t, got, p+"/missing", "sync path")
	})
}
