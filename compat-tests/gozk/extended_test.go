package gozk

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestReconfigDisabled checks that reconfig answers -123 when dynamic
// reconfiguration is off (the default), through go-zk and raw.
func TestReconfigDisabled(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		_, err := c.IncrementalReconfig([]string{"server.2=127.0.0.1:2888:3888;2181"}, nil, -1)
		wantErr(t, err, zk.ErrReconfigDisabled, "incremental reconfig")
		_, err = c.Reconfig([]string{"server.1=127.0.0.1:2888:3888;2181"}, -1)
		wantErr(t, err, zk.ErrReconfigDisabled, "reconfig")
		r := dial(t, s)
		// The three strings may be null on the wire (encoded from "").
		eq(t, call(t, r, jute.OpReconfig, &jute.ReconfigRequest{CurConfigID: -1}, nil), jute.ErrReconfigDisabled, "raw reconfig")
		rawGetData(t, r, "/zookeeper/config", false) // the connection lives on
	})
}

// TestGetEphemerals checks getEphemerals (103): this session's ephemerals
// whose path starts with the prefix as a plain string.
func TestGetEphemerals(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/dir", nil, zk.FlagPersistent)
		r := dial(t, s)
		other := dial(t, s)
		rawCreate(t, r, p+"/e1", nil, jute.FlagEphemeral)
		rawCreate(t, r, p+"/e2", nil, jute.FlagEphemeral)
		seq := rawCreate(t, r, p+"/dir/s-", nil, jute.FlagEphemeralSequential).Path
		rawCreate(t, r, p+"/dir/persistent", nil, jute.FlagPersistent)
		rawCreate(t, other, p+"/e3", nil, jute.FlagEphemeral)

		tests := []struct {
			prefix string
			want   []string
		}{
			{p, []string{p + "/dir/s-0000000000", p + "/e1", p + "/e2"}},
			{p + "/e", []string{p + "/e1", p + "/e2"}},
			{p + "/dir", []string{seq}},
			{p + "/di", []string{seq}},
			{p + "/nothing", []string{}},
		}
		for _, tt := range tests {
			var resp jute.StringsResponse
			callOK(t, r, jute.OpGetEphemerals, &jute.PathRequest{Path: tt.prefix}, &resp)
			deepEq(t, sorted(resp.Strings), tt.want, "getEphemerals(%q)", tt.prefix)
		}
		var all jute.StringsResponse
		callOK(t, r, jute.OpGetEphemerals, &jute.PathRequest{Path: "/"}, &all)
		deepEq(t, sorted(all.Strings), tests[0].want, "getEphemerals(/)")
		var none jute.StringsResponse
		callOK(t, dial(t, s), jute.OpGetEphemerals, &jute.PathRequest{Path: "/"}, &none)
		eq(t, len(none.Strings), 0, "a session without ephemerals")
	})
}

// TestGetAllChildrenNumber checks getAllChildrenNumber (104): it counts all
// descendants, not just the children.
func TestGetAllChildrenNumber(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		for _, n := range []string{"/a", "/a/b", "/a/b/c", "/a/d", "/e"} {
			mustCreate(t, c, p+n, nil, zk.FlagPersistent)
		}
		r := dial(t, s)
		for path, want := range map[string]int32{p: 5, p + "/a": 3, p + "/a/b": 1, p + "/e": 0, "/zookeeper": 2} {
			var resp jute.IntResponse
			callOK(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: path}, &resp)
			eq(t, resp.Value, want, "getAllChildrenNumber(%s)", path)
		}
		eq(t, call(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: p + "/missing"}, nil), jute.ErrNoNode, "getAllChildrenNumber of a missing node")
	})
}

// TestWhoAmI checks whoAmI (107): the connection's ip id, plus digest ids
// after authentication.
func TestWhoAmI(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r := dial(t, s)
		var resp jute.WhoAmIResponse
		callOK(t, r, jute.OpWhoAmI, nil, &resp)
		deepEq(t, resp.ClientInfo, []jute.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}, "whoAmI before auth")
		callOK(t, r, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("bob:secret")}, nil)
		callOK(t, r, jute.OpWhoAmI, nil, &resp)
		got := slices.Clone(resp.ClientInfo)
		slices.SortFunc(got, func(a, b jute.ClientInfo) int {
			if a.AuthScheme < b.AuthScheme {
				return -1
			}
			if a.AuthScheme > b.AuthScheme {
				return 1
			}
			return 0
		})
		deepEq(t, got, []jute.ClientInfo{{AuthScheme: "digest", User: "bob"}, {AuthScheme: "ip", User: "127.0.0.1"}}, "whoAmI after digest auth")
	})
}

// TestUnknownOpcode checks that an unknown opcode gets -6 Unimplemented and
// then the connection is closed.
func TestUnknownOpcode(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		for _, op := range []int32{999, jute.OpNotification} {
			r := dial(t, s)
			hdr, err := r.Call(op, nil, nil)
			noErr(t, err, "op %d", op)
			eq(t, hdr.Err, jute.ErrUnimplemented, "err of op %d", op)
			noErr(t, r.ExpectClosed(eventTimeout), "connection after op %d", op)
		}
	})
}

// TestSpecialPaths checks /zookeeper, /zookeeper/quota and
// /zookeeper/config: present, empty (not null) data, their ACLs, and that
// they cannot be deleted or written.
func TestSpecialPaths(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		r := dial(t, s)
		for _, path := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
			gd := rawGetData(t, r, path, false)
			isTrue(t, gd.Data != nil && len(gd.Data) == 0, "%s data is empty, not null (got %v)", path, gd.Data)
			eq(t, gd.Stat.EphemeralOwner, 0, "%s ephemeralOwner", path)
			wantErr(t, c.Delete(path, -1), zk.ErrBadArguments, "delete %s", path)
		}
		acl, st, err := c.GetACL("/zookeeper/config")
		noErr(t, err, "getACL config")
		deepEq(t, acl, zk.WorldACL(zk.PermRead), "/zookeeper/config ACL")
		eq(t, st.Aversion, -1, "/zookeeper/config aversion")
		acl, _, err = c.GetACL("/zookeeper")
		noErr(t, err, "getACL /zookeeper")
		deepEq(t, acl, openACL, "/zookeeper ACL")
		acl, _, err = c.GetACL("/zookeeper/quota")
		noErr(t, err, "getACL quota")
		deepEq(t, acl, openACL, "/zookeeper/quota ACL")

		_, err = c.Set("/zookeeper/config", []byte("x"), -1)
		wantErr(t, err, zk.ErrNoAuth, "setData /zookeeper/config")
		_, err = c.Create("/zookeeper/config/x", nil, zk.FlagPersistent, openACL)
		wantErr(t, err, zk.ErrNoAuth, "create under /zookeeper/config")
		wantErr(t, c.Delete("/", -1), zk.ErrBadArguments, "delete /")

		children, _, err := c.Children("/zookeeper")
		noErr(t, err, "children of /zookeeper")
		isTrue(t, slices.Contains(children, "config") && slices.Contains(children, "quota"), "/zookeeper has config and quota (got %v)", children)
		root := mustStat(t, c, "/")
		eq(t, root.Czxid, 0, "/ czxid")
		eq(t, root.Ctime, 0, "/ ctime")
		// Users may create children under /zookeeper.
		name := "/zookeeper/" + prefixName(t)
		deleteTree(t, c, name)
		mustCreate(t, c, name, nil, zk.FlagPersistent)
		noErr(t, c.Delete(name, -1), "delete own node under /zookeeper")
	})
}

// TestFreshServer checks what a newly started server holds: only the
// built-in nodes, counted by getAllChildrenNumber, with their initial stats.
func TestFreshServer(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		s := zktest.Start(t, target, zktest.Options{})
		r := dial(t, s)
		var n jute.IntResponse
		callOK(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/"}, &n)
		eq(t, n.Value, 3, "getAllChildrenNumber(/) on a fresh server (/zookeeper, quota, config)")
		var gc jute.GetChildren2Response
		callOK(t, r, jute.OpGetChildren2, &jute.PathWatchRequest{Path: "/"}, &gc)
		deepEq(t, gc.Children, []string{"zookeeper"}, "children of /")
		eq(t, gc.Stat, jute.Stat{Cversion: gc.Stat.Cversion, NumChildren: 1, Pzxid: gc.Stat.Pzxid}, "stat of / (zxids and times 0)")
		callOK(t, r, jute.OpGetChildren2, &jute.PathWatchRequest{Path: "/zookeeper"}, &gc)
		deepEq(t, sorted(gc.Children), []string{"config", "quota"}, "children of /zookeeper")
		eq(t, gc.Stat, jute.Stat{Cversion: -2, NumChildren: 2}, "stat of /zookeeper (cversion 2*0-2)")
		gd := rawGetData(t, r, "/zookeeper/config", false)
		eq(t, gd.Stat.Aversion, -1, "/zookeeper/config aversion")
		eq(t, gd.Stat.Version, 0, "/zookeeper/config version")

		out, err := s.FourLetter("srvr")
		noErr(t, err, "srvr")
		isTrue(t, slices.Contains(strings.Split(out, "\n"), "Mode: standalone"), "srvr says standalone:\n%s", out)
		out, err = s.FourLetter("ruok")
		noErr(t, err, "ruok")
		eq(t, out, "imok", "ruok")

		// The first session's first create gets a positive zxid, and zxids
		// only grow.
		cr := rawCreate(t, r, "/first", nil, jute.FlagPersistent)
		isTrue(t, cr.Stat.Czxid > 0, "first czxid > 0 (got %#x)", cr.Stat.Czxid)
		callOK(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/"}, &n)
		eq(t, n.Value, 4, "getAllChildrenNumber(/) after one create")
	})
}
