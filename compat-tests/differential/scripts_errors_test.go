package differential_test

import (
	"fmt"
	"strings"

	"github.com/zkraft/zkraft/jute"
)

// errorPaths sends requests that must fail, one failure cause at a time and
// a few where several causes compete (the order of checks decides).
func errorPaths() *script {
	b := newScript("error-paths")
	b.connect(0, 30000)
	b.mk(0, "/err")
	b.mk(0, "/err/full")
	b.mk(0, "/err/full/kid")
	b.create(0, "/err/eph", nil, open, jute.FlagEphemeral)
	// bad paths on every op that takes one
	for _, p := range []string{"", "t", "/t/", "/err//b", "/err/./b", "/err/../b", "/err/.", "/err/..",
		"/err/a\x00b", "/err/a\x01b", "/err/a\u007fb", "/err/a\u0085b", "/err/a\ufff0b", "/err/a\ue000b", "//", "/err/"} {
		b.create(0, p, nil, open, 0)
		b.create2(0, p, nil, open, jute.FlagPersistentSequential)
		b.set(0, p, nil, -1)
		b.del(0, p, -1)
		b.get(0, p, false)
		b.exists(0, p, false)
		b.children(0, p, false)
		b.getACL(0, p)
		b.setACL(0, p, open, -1)
		b.call(0, jute.OpSync, &jute.PathRequest{Path: p})
	}
	// path that only becomes valid or invalid with the sequence suffix
	b.create(0, "/err/", nil, open, jute.FlagPersistentSequential)
	b.create(0, "/err/full/", nil, open, jute.FlagPersistentSequential)
	b.children(0, "/err", false)
	b.children(0, "/err/full", false)
	// missing parents, existing nodes, non-empty deletes, ephemeral parents
	b.create(0, "/err/nope/x", nil, open, 0)
	b.create(0, "/nope/x/y", nil, open, 0)
	b.create(0, "/err/full", nil, open, 0)
	b.create2(0, "/err/full/kid", nil, open, jute.FlagEphemeral)
	b.del(0, "/err/full", -1)
	b.del(0, "/err/full", 7)
	b.del(0, "/err/missing", 3)
	b.create(0, "/err/eph/kid", nil, open, 0)
	b.create(0, "/err/eph/kid-", nil, open, jute.FlagEphemeralSequential)
	b.create(0, "/err/eph/nope/kid", nil, open, 0)
	b.create(0, "/err/eph", nil, open, 0)
	// bad versions
	b.set(0, "/err/full", nil, 1)
	b.set(0, "/err/full", nil, -2)
	b.setACL(0, "/err/full", open, 3)
	b.setACL(0, "/err/full", open, -1)
	b.setACL(0, "/err/full", open, -1)
	b.getACL(0, "/err/full")
	b.del(0, "/err/full/kid", 1)
	b.del(0, "/err/full/kid", -2)
	// bad flags
	for _, f := range []int32{-1, 7, 8, 99, 1 << 30} {
		b.create(0, "/err/flag", nil, open, f)
		b.create2(0, "/err/flag", nil, open, f)
	}
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/err/flagc", ACL: open, Flags: 9})
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/err/flagc-", ACL: open, Flags: jute.FlagEphemeralSequential})
	b.children(0, "/err", false)
	// TTLs
	ttl := func(path string, flags int32, ttl int64) {
		b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: path, ACL: open, Flags: flags, TTL: ttl})
	}
	ttl("/err/ttl0", jute.FlagPersistentWithTTL, 0)
	ttl("/err/ttlneg", jute.FlagPersistentWithTTL, -1)
	ttl("/err/ttlbig", jute.FlagPersistentWithTTL, 1<<40)
	ttl("/err/ttlhuge", jute.FlagPersistentWithTTL, 1<<62)
	ttl("/err/ttlflag0", jute.FlagPersistent, 1000)
	ttl("/err/ttlflag1", jute.FlagEphemeral, 1000)
	ttl("/err/ttlflag4", jute.FlagContainer, 1000)
	ttl("/err/ttlflag9", 9, 1000)
	ttl("/err/nope/ttl", jute.FlagPersistentWithTTL, 1000)
	ttl("/err/eph/ttl", jute.FlagPersistentWithTTL, 1000)
	ttl("/err/full", jute.FlagPersistentWithTTL, 1000)
	ttl("bad", jute.FlagPersistentWithTTL, 1000)
	b.create(0, "/err/ttlop1", nil, open, jute.FlagPersistentWithTTL)
	b.create2(0, "/err/ttlop15", nil, open, jute.FlagPersistentSequentialWithTTL)
	b.children(0, "/err", false)
	// bad ACLs
	b.mk(0, "/err/acls")
	for i, a := range [][]jute.ACL{
		nil, {}, {acl(jute.PermAll, "world", "someone")}, {acl(jute.PermAll, "foo", "bar")},
		{acl(jute.PermAll, "digest", "nocolon")}, {acl(jute.PermAll, "digest", "a:b:c")},
		{acl(jute.PermAll, "ip", "300.1.1.1")}, {acl(jute.PermAll, "ip", "127.0.0.1/33")},
		{acl(jute.PermAll, "ip", "not-an-ip")}, {acl(jute.PermAll, "auth", "")},
		{acl(jute.PermAll, "world", "anyone"), acl(jute.PermAll, "foo", "bar")},
		{acl(0, "world", "anyone")}, {acl(64, "world", "anyone")}, {acl(-1, "world", "anyone")},
		{acl(jute.PermAll, "ip", "127.0.0.1/8")}, {acl(jute.PermAll, "ip", "::1")},
		{acl(jute.PermAll, "super", "")}, {acl(jute.PermAll, "x509", "CN=a")}, {acl(jute.PermAll, "sasl", "bob")},
	} {
		// each ACL on fresh nodes, so that one accepted ACL cannot lock
		// out the next case
		n := fmt.Sprintf("/err/acls/c%d", i)
		b.create2(0, n, nil, a, 0)
		b.getACL(0, n)
		b.del(0, n, -1)
		b.create(0, n+"t", nil, open, 0)
		b.setACL(0, n+"t", a, -1)
		b.getACL(0, n+"t")
	}
	b.create(0, "/err/nope/acl", nil, nil, 0)
	b.create(0, "bad", nil, nil, 0)
	b.getACL(0, "/err/full")
	// competing causes
	b.create(0, "/err/full", nil, open, 42)
	b.create(0, "/err/full", nil, nil, 0)
	b.create(0, "/err/nope/x", nil, nil, 99)
	b.set(0, "/err/missing", nil, 5)
	b.setACL(0, "/err/missing", nil, 5)
	// deleting the special nodes, with versions
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		b.del(0, p, 0)
	}
	b.multi(0, mDelete("/zookeeper", -1))
	b.multi(0, mDelete("/", -1))
	// very long names are fine (no length limit besides the frame)
	b.create2(0, "/err/"+strings.Repeat("n", 5000), []byte("long"), open, 0)
	b.children2(0, "/err", false)
	b.del(0, "/err/"+strings.Repeat("n", 5000), 0)
	// unicode paths
	b.create2(0, "/err/ünï©ødé-☃", []byte("u"), open, 0)
	b.children(0, "/err", false)
	b.closeSession(0)
	return b.s
}
