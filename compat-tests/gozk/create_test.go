package gozk

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestCreateModes creates a node in every mode and checks the returned path,
// the node's stat and the parent's cversion/numChildren/pzxid, including
// the 2C-N cversion rule after deletes and the create-only sequence counter.
func TestCreateModes(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)

		type step struct {
			name     string
			create   func() (string, error)
			wantPath string
			owner    int64 // expected ephemeralOwner
		}
		sid := c.SessionID()
		steps := []step{
			{"persistent", func() (string, error) { return c.Create(p+"/persistent", []byte("d"), zk.FlagPersistent, openACL) }, p + "/persistent", 0},
			{"ephemeral", func() (string, error) { return c.Create(p+"/ephemeral", []byte("d"), zk.FlagEphemeral, openACL) }, p + "/ephemeral", sid},
			{"sequential", func() (string, error) { return c.Create(p+"/seq-", []byte("d"), zk.FlagSequence, openACL) }, p + "/seq-0000000002", 0},
			{"ephemeral sequential", func() (string, error) {
				return c.Create(p+"/eseq-", []byte("d"), zk.FlagEphemeralSequential, openACL)
			}, p + "/eseq-0000000003", sid},
			{"container", func() (string, error) {
				return c.CreateContainer(p+"/container", []byte("d"), zk.FlagContainer, openACL)
			}, p + "/container", 0},
			{"ttl", func() (string, error) {
				return c.CreateTTL(p+"/ttl", []byte("d"), zk.FlagTTL, openACL, time.Hour)
			}, p + "/ttl", 0},
			{"sequential ttl", func() (string, error) {
				return c.CreateTTL(p+"/sttl-", []byte("d"), zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
			}, p + "/sttl-0000000006", 0},
		}
		for i, st := range steps {
			got, err := st.create()
			noErr(t, err, "create %s", st.name)
			eq(t, got, st.wantPath, "path of %s", st.name)
			stat := mustStat(t, c, got)
			eq(t, stat.Mzxid, stat.Czxid, "%s mzxid==czxid", st.name)
			eq(t, stat.Pzxid, stat.Czxid, "%s pzxid==czxid", st.name)
			eq(t, stat.Mtime, stat.Ctime, "%s mtime==ctime", st.name)
			isTrue(t, stat.Ctime > 0, "%s ctime set", st.name)
			eq(t, stat.Version, 0, "%s version", st.name)
			eq(t, stat.Cversion, 0, "%s cversion", st.name)
			eq(t, stat.Aversion, 0, "%s aversion", st.name)
			eq(t, stat.EphemeralOwner, st.owner, "%s ephemeralOwner", st.name)
			eq(t, stat.DataLength, 1, "%s dataLength", st.name)
			eq(t, stat.NumChildren, 0, "%s numChildren", st.name)

			parent := mustStat(t, c, p)
			eq(t, parent.NumChildren, int32(i+1), "parent numChildren after %s", st.name)
			eq(t, parent.Cversion, int32(i+1), "parent cversion after %s", st.name)
			eq(t, parent.Pzxid, stat.Czxid, "parent pzxid after %s", st.name)
			isTrue(t, parent.Mzxid < stat.Czxid, "parent mzxid unchanged by a child create")
		}

		// Deletes: C (creations) stays 7, N drops to 5, cversion = 2C-N = 9.
		before := mustStat(t, c, p)
		noErr(t, c.Delete(p+"/persistent", -1), "delete persistent")
		noErr(t, c.Delete(p+"/seq-0000000002", -1), "delete seq")
		parent := mustStat(t, c, p)
		eq(t, parent.NumChildren, 5, "numChildren after 2 deletes")
		eq(t, parent.Cversion, 9, "cversion after 7 creates and 2 deletes")
		isTrue(t, parent.Pzxid > before.Pzxid, "pzxid moves on delete (%d > %d)", parent.Pzxid, before.Pzxid)
		eq(t, parent.Mzxid, before.Mzxid, "mzxid unchanged by deletes")

		// The sequence counter counts creations, not the cversion: suffix 7.
		got := mustCreate(t, c, p+"/seq-", nil, zk.FlagSequence)
		eq(t, got, p+"/seq-0000000007", "sequential name after deletes")
		parent = mustStat(t, c, p)
		eq(t, parent.Cversion, 10, "cversion after the 8th create")

		// Sequential names under a fresh parent start at 0 and count
		// non-sequential creates too.
		q := mustCreate(t, c, p+"/q", nil, zk.FlagPersistent)
		eq(t, mustCreate(t, c, q+"/", nil, zk.FlagSequence), q+"/0000000000", "bare sequential name")
		mustCreate(t, c, q+"/plain", nil, zk.FlagPersistent)
		eq(t, mustCreate(t, c, q+"/x", nil, zk.FlagSequence), q+"/x0000000002", "sequential after a plain create")
	})
}

// TestCreateErrors checks the error codes of create, through go-zk where it
// can send the request and through the raw client for paths and flags that
// go-zk rejects before sending.
func TestCreateErrors(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/a", nil, zk.FlagPersistent)
		mustCreate(t, c, p+"/eph", nil, zk.FlagEphemeral)

		_, err := c.Create(p+"/a", nil, zk.FlagPersistent, openACL)
		wantErr(t, err, zk.ErrNodeExists, "create existing")
		_, err = c.Create(p+"/missing/child", nil, zk.FlagPersistent, openACL)
		wantErr(t, err, zk.ErrNoNode, "create under missing parent")
		_, err = c.Create(p+"/eph/child", nil, zk.FlagPersistent, openACL)
		wantErr(t, err, zk.ErrNoChildrenForEphemerals, "create under ephemeral")
		_, err = c.Create(p+"/eph/seq", nil, zk.FlagEphemeralSequential, openACL)
		wantErr(t, err, zk.ErrNoChildrenForEphemerals, "ephemeral sequential under ephemeral")
		_, err = c.Create(p+"/noacl", nil, zk.FlagPersistent, []zk.ACL{})
		wantErr(t, err, zk.ErrInvalidACL, "create with an empty ACL")
		_, err = c.Create(p+"/badacl", nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "nobody"}})
		wantErr(t, err, zk.ErrInvalidACL, "create with world:nobody")
		_, err = c.Create(p+"/badscheme", nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "nosuch", ID: "x"}})
		wantErr(t, err, zk.ErrInvalidACL, "create with an unknown scheme")
		_, err = c.Create(p+"/authacl", nil, zk.FlagPersistent, zk.AuthACL(zk.PermAll))
		wantErr(t, err, zk.ErrInvalidACL, "auth ACL without authentication")

		r := dial(t, s)
		tests := []struct {
			name string
			op   int32
			req  jute.Record
			want int32
		}{
			{"relative path", jute.OpCreate, &jute.CreateRequest{Path: "t", ACL: juteOpen}, jute.ErrBadArguments},
			{"empty path", jute.OpCreate, &jute.CreateRequest{Path: "", ACL: juteOpen}, jute.ErrBadArguments},
			{"trailing slash", jute.OpCreate, &jute.CreateRequest{Path: p + "/a/", ACL: juteOpen}, jute.ErrBadArguments},
			{"trailing slash, missing parent", jute.OpCreate, &jute.CreateRequest{Path: p + "/t/", ACL: juteOpen}, jute.ErrNoNode},
			{"empty component", jute.OpCreate, &jute.CreateRequest{Path: p + "//b", ACL: juteOpen}, jute.ErrNoNode},
			{"dot component in parent", jute.OpCreate, &jute.CreateRequest{Path: p + "/./b", ACL: juteOpen}, jute.ErrNoNode},
			{"dot name", jute.OpCreate, &jute.CreateRequest{Path: p + "/.", ACL: juteOpen}, jute.ErrBadArguments},
			{"dot-dot name", jute.OpCreate, &jute.CreateRequest{Path: p + "/..", ACL: juteOpen}, jute.ErrBadArguments},
			{"NUL in name", jute.OpCreate, &jute.CreateRequest{Path: p + "/a\x00b", ACL: juteOpen}, jute.ErrBadArguments},
			{"control char in name", jute.OpCreate, &jute.CreateRequest{Path: p + "/a\x01b", ACL: juteOpen}, jute.ErrBadArguments},
			{"root", jute.OpCreate, &jute.CreateRequest{Path: "/", ACL: juteOpen}, jute.ErrNodeExists},
			{"unknown flags", jute.OpCreate, &jute.CreateRequest{Path: p + "/f", ACL: juteOpen, Flags: 7}, jute.ErrBadArguments},
			{"negative flags", jute.OpCreate2, &jute.CreateRequest{Path: p + "/f", ACL: juteOpen, Flags: -1}, jute.ErrBadArguments},
			{"TTL mode on create", jute.OpCreate, &jute.CreateRequest{Path: p + "/f", ACL: juteOpen, Flags: jute.FlagPersistentWithTTL}, jute.ErrBadArguments},
			{"TTL mode on create2", jute.OpCreate2, &jute.CreateRequest{Path: p + "/f", ACL: juteOpen, Flags: jute.FlagPersistentWithTTL}, jute.ErrBadArguments},
			{"createTTL non-TTL mode", jute.OpCreateTTL, &jute.CreateTTLRequest{Path: p + "/f", ACL: juteOpen, Flags: jute.FlagPersistent, TTL: 1000}, jute.ErrBadArguments},
			{"createTTL ttl 0", jute.OpCreateTTL, &jute.CreateTTLRequest{Path: p + "/f", ACL: juteOpen, Flags: jute.FlagPersistentWithTTL, TTL: 0}, jute.ErrBadArguments},
			{"createTTL ttl too big", jute.OpCreateTTL, &jute.CreateTTLRequest{Path: p + "/f", ACL: juteOpen, Flags: jute.FlagPersistentWithTTL, TTL: 1 << 40}, jute.ErrBadArguments},
			{"null ACL", jute.OpCreate, &jute.CreateRequest{Path: p + "/f"}, jute.ErrInvalidACL},
		}
		for _, tt := range tests {
			eq(t, call(t, r, tt.op, tt.req, nil), tt.want, "err of create %s", tt.name)
		}
		// None of the failed creates left a node behind.
		children, _, err := c.Children(p)
		noErr(t, err, "children")
		deepEq(t, sorted(children), []string{"a", "eph"}, "children after failed creates")

		// The largest valid TTL is accepted.
		var cr jute.Create2Response
		callOK(t, r, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: p + "/maxttl", ACL: juteOpen, Flags: jute.FlagPersistentWithTTL, TTL: 1<<40 - 1}, &cr)
		eq(t, cr.Path, p+"/maxttl", "createTTL path")
		eq(t, cr.Stat.EphemeralOwner, 0, "TTL node ephemeralOwner")
	})
}

// TestCreateResponses checks the bodies of create (path only), create2,
// createContainer and createTTL (path and stat), and that a sequential
// suffix is numbered in decimal with 10 digits.
func TestCreateResponses(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		r := dial(t, s)
		var cr jute.CreateResponse
		callOK(t, r, jute.OpCreate, &jute.CreateRequest{Path: p + "/c1", Data: []byte("x"), ACL: juteOpen}, &cr)
		eq(t, cr.Path, p+"/c1", "create path")

		for i, op := range []int32{jute.OpCreate2, jute.OpCreateContainer} {
			var c2 jute.Create2Response
			path := fmt.Sprintf("%s/c2-%d", p, i)
			hdr, err := r.Call(op, &jute.CreateRequest{Path: path, Data: []byte("xy"), ACL: juteOpen}, &c2)
			noErr(t, err, "op %d", op)
			eq(t, hdr.Err, 0, "op %d err", op)
			eq(t, c2.Path, path, "op %d path", op)
			want := jute.Stat{Czxid: hdr.Zxid, Mzxid: hdr.Zxid, Ctime: c2.Stat.Ctime, Mtime: c2.Stat.Ctime, DataLength: 2, Pzxid: hdr.Zxid}
			eq(t, c2.Stat, want, "op %d stat (zxid of the reply %#x)", op, hdr.Zxid)
			eq(t, zkStat(mustStat(t, c, path)), want, "op %d stat read back", op)
		}
		// createContainer makes a container whatever the flags say (0 here;
		// go-zk sends 4).
		var c3 jute.Create2Response
		callOK(t, r, jute.OpCreateContainer, &jute.CreateRequest{Path: p + "/cont-eph", ACL: juteOpen, Flags: jute.FlagPersistent}, &c3)
		eq(t, c3.Stat.EphemeralOwner, 0, "createContainer with flag 0: ephemeralOwner")
		// Ephemerals may live under a container.
		var c4 jute.Create2Response
		callOK(t, r, jute.OpCreate2, &jute.CreateRequest{Path: p + "/cont-eph/e", ACL: juteOpen, Flags: jute.FlagEphemeral}, &c4)
		isTrue(t, c4.Stat.EphemeralOwner != 0, "ephemeral under a container has an owner")
	})
}
