package differential_test

import (
	"github.com/zkraft/zkraft/jute"
)

// aclScript checks ACL enforcement: digest users, world READ, CREATOR_ALL,
// ip ACLs, getACL masking, super, and the auth packet itself.
func aclScript() *script {
	b := newScript("acl")
	b.connect(0, 30000) // alice
	b.connect(1, 30000) // anonymous
	b.connect(2, 30000) // bob, then super
	b.call(0, jute.OpWhoAmI, nil)
	b.auth(0, "digest", "alice:pw")
	b.call(0, jute.OpWhoAmI, nil)
	b.auth(0, "digest", "alice:pw") // twice: no duplicate
	b.call(0, jute.OpWhoAmI, nil)
	b.call(2, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")}) // ordinary xid
	b.call(2, jute.OpWhoAmI, nil)
	b.mk(0, "/acl")
	// digest-only node
	b.create2(0, "/acl/alice", []byte("secret"), []jute.ACL{digestACL(jute.PermAll, "alice:pw")}, 0)
	b.get(0, "/acl/alice", false)
	b.get(1, "/acl/alice", false)
	b.get(1, "/acl/alice", true) // NoAuth: no watch either
	b.exists(1, "/acl/alice", false).ex(excExistsNoRead)
	b.exists(1, "/acl/alice/none", false)
	b.children(1, "/acl/alice", false)
	b.children2(2, "/acl/alice", false)
	b.set(1, "/acl/alice", nil, -1)
	b.set(1, "/acl/alice", nil, 99)
	b.getACL(1, "/acl/alice")
	b.setACL(1, "/acl/alice", open, -1)
	b.create(1, "/acl/alice/kid", nil, open, 0)
	b.create(1, "/acl/alice/nope/kid", nil, open, 0)
	b.del(1, "/acl/alice/kid", -1)
	b.call(1, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/acl/alice"})
	b.call(1, jute.OpSync, &jute.PathRequest{Path: "/acl/alice"})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/acl/alice", Type: jute.WatcherTypeAny})
	b.multiRead(1, mGet("/acl/alice"), mChildren("/acl/alice"), mGet("/acl"))
	b.multi(1, mCheck("/acl/alice", -1))
	b.multi(1, mSet("/acl/alice", nil, -1))
	b.multi(1, mCreate("/acl/alice/k", nil, 0))
	b.multi(1, mCreate("/acl/ok", nil, 0), mDelete("/acl/alice", -1))
	b.create(0, "/acl/alice/kid", nil, open, 0)
	b.del(1, "/acl/alice/kid", -1)
	b.del(1, "/acl/alice/ghost", -1) // DELETE on parent is checked before existence
	b.del(0, "/acl/alice/kid", -1)
	// world READ only
	b.create2(0, "/acl/ro", []byte("r"), worldRead, 0)
	b.get(1, "/acl/ro", false)
	b.exists(1, "/acl/ro", false)
	b.set(1, "/acl/ro", nil, -1)
	b.create(1, "/acl/ro/k", nil, open, 0)
	b.setACL(0, "/acl/ro", open, -1)
	b.getACL(1, "/acl/ro")
	// getACL without ADMIN masks digest ids
	b.create2(0, "/acl/mixed", nil, []jute.ACL{acl(jute.PermRead, "world", "anyone"), digestACL(jute.PermAll, "alice:pw"), digestACL(jute.PermRead, "bob:pw")}, 0)
	b.getACL(1, "/acl/mixed")
	b.getACL(2, "/acl/mixed")
	b.getACL(0, "/acl/mixed")
	// admin without read
	b.create2(0, "/acl/adm", nil, []jute.ACL{acl(jute.PermAdmin, "world", "anyone")}, 0)
	b.getACL(1, "/acl/adm")
	b.get(1, "/acl/adm", false)
	b.exists(1, "/acl/adm", false).ex(excExistsNoRead)
	b.setACL(1, "/acl/adm", []jute.ACL{acl(jute.PermAdmin|jute.PermRead, "world", "anyone")}, 0)
	b.get(1, "/acl/adm", false)
	// CREATOR_ALL
	b.create2(0, "/acl/creator", nil, creator, 0)
	b.getACL(0, "/acl/creator")
	b.create2(1, "/acl/anon-creator", nil, creator, 0)
	b.create2(2, "/acl/bob-creator", nil, []jute.ACL{acl(jute.PermAll, "auth", "ignored"), acl(jute.PermRead, "world", "anyone")}, 0)
	b.getACL(2, "/acl/bob-creator")
	b.get(1, "/acl/bob-creator", false)
	b.set(0, "/acl/bob-creator", nil, -1)
	b.setACL(0, "/acl/ro", creator, -1)
	b.getACL(0, "/acl/ro")
	b.setACL(1, "/acl/ok", creator, -1)
	// ip ACLs
	b.create2(0, "/acl/ip-local", []byte("l"), []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.1")}, 0)
	b.create2(0, "/acl/ip-net", []byte("n"), []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.0/8")}, 0)
	b.create2(0, "/acl/ip-other", []byte("o"), []jute.ACL{acl(jute.PermAll, "ip", "10.1.2.3"), acl(jute.PermRead, "ip", "192.168.0.0/16")}, 0)
	b.get(1, "/acl/ip-local", false)
	b.get(1, "/acl/ip-net", false)
	b.get(1, "/acl/ip-other", false)
	b.exists(1, "/acl/ip-other", false).ex(excExistsNoRead)
	b.set(1, "/acl/ip-local", []byte("L"), -1)
	b.set(1, "/acl/ip-other", []byte("O"), -1)
	b.getACL(1, "/acl/ip-local")
	b.auth(1, "ip", "10.1.2.3") // adds the real address, whatever the data says
	b.call(1, jute.OpWhoAmI, nil)
	b.get(1, "/acl/ip-other", false)
	b.create2(1, "/acl/ip-creator", nil, creator, 0) // ip does not count for auth
	// the watch set by a denied read must not fire; the allowed one does
	b.get(1, "/acl/ro", true)
	b.set(0, "/acl/alice", []byte("s2"), -1)
	b.set(0, "/acl/ro", []byte("r2"), -1)
	b.barrier(1)
	// super bypasses everything
	b.auth(2, "digest", superUser)
	b.call(2, jute.OpWhoAmI, nil)
	b.get(2, "/acl/alice", false)
	b.set(2, "/acl/ip-other", []byte("S"), -1)
	b.setACL(2, "/acl/alice", worldRead, -1)
	b.get(1, "/acl/alice", false)
	b.create2(2, "/acl/super-creator", nil, creator, 0)
	b.getACL(2, "/acl/super-creator")
	b.set(2, "/zookeeper/config", []byte{}, -1)
	b.get(0, "/zookeeper/config", false)
	// odd auth packets, each on its own connection
	for i, cred := range []string{"nocolon", "", "carol:pw:extra"} {
		b.connect(3+i, 30000)
		b.auth(3+i, "digest", cred).thenProbe()
		b.call(3+i, jute.OpWhoAmI, nil)
		b.create2(3+i, "/acl/odd-"+string(rune('a'+i)), nil, creator, 0)
		b.getACL(3+i, "/acl/odd-"+string(rune('a'+i)))
		b.closeSession(3 + i)
	}
	b.call(1, jute.OpAuth, &jute.AuthPacket{Type: 7, Scheme: "digest", Auth: []byte("dave:pw")})
	b.auth(1, "digest", "erin:pw")
	b.call(1, jute.OpWhoAmI, nil)
	b.create2(1, "/acl/multi-auth", nil, creator, 0)
	b.getACL(1, "/acl/multi-auth").unorderedACL()
	for _, s := range []int{0, 1, 2} {
		b.closeSession(s)
	}
	return b.s
}
