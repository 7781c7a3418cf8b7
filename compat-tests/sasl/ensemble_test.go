package sasl_test

import (
	"testing"

	"github.com/zkraft/zkraft/internal/sasl"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestSASLEnsemble: on three zkraft members, a SASL identity gained on one
// member travels with the writes it proposes (the entry's auth ids), so
// every member decides them alike: alice creates a sasl:alice node through
// a follower, reads and writes it through the other follower, and bob,
// authenticated on the leader, gets NoAuth for reads and writes.
func TestSASLEnsemble(t *testing.T) {
	serverFile, _ := writeJAAS(t)
	c := zktest.StartCluster(t, 3, zktest.ClusterOptions{Extra: map[string]string{
		"authProvider.sasl":               "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"java.security.auth.login.config": serverFile,
	}})
	leader := c.WaitSettled(t)
	fs := c.Followers(leader)
	login := func(addr, user, password string) *zktest.RawConn {
		t.Helper()
		conn, resp := zktest.DialRaw(t, addr, 0, nil, 10000, true)
		if resp.SessionID == 0 {
			t.Fatalf("no session on %s", addr)
		}
		tok, _, err := sasl.ClientResponse(challenge(t, conn), user, password, "Y25vbmNl")
		if err != nil {
			t.Fatal(err)
		}
		if hdr, _ := saslStep(t, conn, tok); hdr.Err != 0 {
			t.Fatalf("%s on %s: %+v", user, addr, hdr)
		}
		return conn
	}
	call := func(conn *zktest.RawConn, what string, op int32, req jute.Record, want int32) {
		t.Helper()
		hdr, err := conn.Call(op, req, nil)
		if err != nil || hdr.Err != want {
			t.Fatalf("%s: %+v %v; want err %d", what, hdr, err, want)
		}
	}
	const path = "/ens-alice"
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "sasl", ID: "alice"}}}

	a1 := login(fs[0].Addr, "alice", "alice-secret")
	call(a1, "alice create via follower 1", jute.OpCreate, &jute.CreateRequest{Path: path, Data: []byte("v"), ACL: acl}, 0)

	a2 := login(fs[1].Addr, "alice", "alice-secret")
	call(a2, "sync on follower 2", jute.OpSync, &jute.PathRequest{Path: path}, 0)
	call(a2, "alice getData via follower 2", jute.OpGetData, &jute.PathWatchRequest{Path: path}, 0)
	call(a2, "alice setData via follower 2", jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte("w"), Version: -1}, 0)

	b := login(leader.Addr, "bob", "bob-secret")
	call(b, "sync on the leader", jute.OpSync, &jute.PathRequest{Path: path}, 0)
	call(b, "bob getData via the leader", jute.OpGetData, &jute.PathWatchRequest{Path: path}, jute.ErrNoAuth)
	call(b, "bob setData via the leader", jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte("x"), Version: -1}, jute.ErrNoAuth)
	call(b, "bob create under it", jute.OpCreate, &jute.CreateRequest{Path: path + "/c", ACL: acl}, jute.ErrNoAuth)
	call(a1, "alice setData via follower 1 (version 1)", jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte("y"), Version: 1}, 0)
}
