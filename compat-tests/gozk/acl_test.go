package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestACL checks digest authentication, CREATOR_ALL (auth:) ACLs, NoAuth for
// other sessions on every kind of access, world READ, setACL needing ADMIN,
// and the super digest user bypassing every ACL.
func TestACL(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		bob, _ := s.Connect(t)
		noErr(t, bob.AddAuth("digest", []byte("bob:secret")), "bob auth")
		p := prefix(t, bob)
		bobID := zktest.DigestACLHash("bob:secret")

		// CREATOR_ALL expands to bob's digest id.
		mustCreateACL(t, bob, p+"/private", []byte("x"), zk.AuthACL(zk.PermAll))
		acl, _, err := bob.GetACL(p + "/private")
		noErr(t, err, "getACL")
		deepEq(t, acl, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: bobID}}, "auth ACL stored as the digest id")
		deepEq(t, zk.DigestACL(zk.PermAll, "bob", "secret"), acl, "go-zk's DigestACL computes the same id")
		mustCreate(t, bob, p+"/private/child", nil, zk.FlagPersistent)

		anon, _ := s.Connect(t)
		_, _, err = anon.Get(p + "/private")
		wantErr(t, err, zk.ErrNoAuth, "get without auth")
		_, _, err = anon.Children(p + "/private")
		wantErr(t, err, zk.ErrNoAuth, "children without auth")
		_, err = anon.Set(p+"/private", []byte("y"), -1)
		wantErr(t, err, zk.ErrNoAuth, "set without auth")
		_, err = anon.Create(p+"/private/x", nil, zk.FlagPersistent, openACL)
		wantErr(t, err, zk.ErrNoAuth, "create without auth")
		wantErr(t, anon.Delete(p+"/private/child", -1), zk.ErrNoAuth, "delete without auth")
		// DELETE is checked on the parent before the node's existence.
		wantErr(t, anon.Delete(p+"/private/missing", -1), zk.ErrNoAuth, "delete of a missing child without auth")
		_, _, err = anon.GetACL(p + "/private")
		wantErr(t, err, zk.ErrNoAuth, "getACL without READ or ADMIN")
		_, err = anon.SetACL(p+"/private", openACL, -1)
		wantErr(t, err, zk.ErrNoAuth, "setACL without auth")
		// Deleting the node itself needs DELETE on p, which is open.
		r := dial(t, s)
		eq(t, call(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: p + "/private"}, nil), jute.ErrNoAuth, "getAllChildrenNumber without auth")
		var mr jute.MultiResponse
		callOK(t, r, jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: p + "/private"}}}}, &mr)
		deepEq(t, mr.Results, []jute.MultiResult{{Type: jute.OpError, Err: jute.ErrNoAuth}}, "multiRead without auth")

		// Another session authenticated as bob has access.
		bob2, _ := s.Connect(t)
		noErr(t, bob2.AddAuth("digest", []byte("bob:secret")), "bob2 auth")
		data, _, err := bob2.Get(p + "/private")
		noErr(t, err, "get as bob from another session")
		eq(t, string(data), "x", "data")
		// A wrong password authenticates as another identity: no access.
		eve, _ := s.Connect(t)
		noErr(t, eve.AddAuth("digest", []byte("bob:wrong")), "digest auth always succeeds")
		_, _, err = eve.Get(p + "/private")
		wantErr(t, err, zk.ErrNoAuth, "get with a wrong password")

		// world READ plus bob ALL: anyone reads, only bob writes.
		readable := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "bob", "secret")...)
		mustCreateACL(t, bob, p+"/readable", []byte("r"), readable)
		data, _, err = anon.Get(p + "/readable")
		noErr(t, err, "world READ")
		eq(t, string(data), "r", "data")
		_, err = anon.Set(p+"/readable", nil, -1)
		wantErr(t, err, zk.ErrNoAuth, "set with only READ")
		_, err = bob.Set(p+"/readable", []byte("r2"), -1)
		noErr(t, err, "set as bob")

		// Everything but ADMIN for the world: setACL is refused, the rest works.
		mustCreateACL(t, bob, p+"/noadmin", nil, zk.WorldACL(zk.PermAll&^zk.PermAdmin))
		_, err = anon.Set(p+"/noadmin", []byte("w"), -1)
		noErr(t, err, "set with WRITE")
		_, _, err = anon.GetACL(p + "/noadmin")
		noErr(t, err, "getACL with READ")
		_, err = anon.SetACL(p+"/noadmin", openACL, -1)
		wantErr(t, err, zk.ErrNoAuth, "setACL without ADMIN")
		// CREATE without DELETE on a parent.
		mustCreateACL(t, bob, p+"/nodelete", nil, zk.WorldACL(zk.PermAll&^zk.PermDelete))
		mustCreate(t, anon, p+"/nodelete/k", nil, zk.FlagPersistent)
		wantErr(t, anon.Delete(p+"/nodelete/k", -1), zk.ErrNoAuth, "delete without DELETE on the parent")

		// The super user bypasses every ACL.
		super, _ := s.Connect(t)
		noErr(t, super.AddAuth("digest", []byte(superUser)), "super auth")
		data, _, err = super.Get(p + "/private")
		noErr(t, err, "get as super")
		eq(t, string(data), "x", "data")
		_, err = super.Set(p+"/private", []byte("s"), -1)
		noErr(t, err, "set as super")
		_, err = super.SetACL(p+"/noadmin", openACL, -1)
		noErr(t, err, "setACL as super")
		noErr(t, super.Delete(p+"/private/child", -1), "delete as super")
		mustCreate(t, super, p+"/private/bysuper", nil, zk.FlagPersistent)
		noErr(t, super.Delete(p+"/nodelete/k", -1), "delete as super")
	})
}

// TestAuthFailures checks auth packets that fail: an unknown scheme gets
// -115 AuthFailed and the connection is closed (the session lives on).
func TestAuthFailures(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r, resp := zktest.DialRaw(t, s.Addr, 0, nil, 10000, false)
		hdr, err := r.Call(jute.OpAuth, &jute.AuthPacket{Scheme: "nosuchscheme", Auth: []byte("x")}, nil)
		noErr(t, err, "auth")
		eq(t, hdr.Err, jute.ErrAuthFailed, "auth with an unknown scheme")
		noErr(t, r.ExpectClosed(eventTimeout), "connection after a failed auth")
		again, r2 := zktest.DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, 10000, false)
		eq(t, r2.SessionID, resp.SessionID, "the session survives a failed auth")
		_, err = again.CloseSession()
		noErr(t, err, "closeSession")

		// The ip scheme always succeeds; a successful auth reply has zxid 0.
		r3 := dial(t, s)
		hdr, err = r3.Call(jute.OpAuth, &jute.AuthPacket{Scheme: "ip", Auth: []byte("10.0.0.1")}, nil)
		noErr(t, err, "ip auth")
		eq(t, hdr.Err, 0, "ip auth err")
		eq(t, hdr.Zxid, 0, "auth reply zxid")
		hdr, err = r3.Call(jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("a:b")}, nil)
		noErr(t, err, "digest auth")
		eq(t, hdr.Err, 0, "digest auth err")
	})
}

func mustCreateACL(t testing.TB, c *zk.Conn, path string, data []byte, acl []zk.ACL) {
	t.Helper()
	_, err := c.Create(path, data, zk.FlagPersistent, acl)
	noErr(t, err, "create %s with ACL %v", path, acl)
}
