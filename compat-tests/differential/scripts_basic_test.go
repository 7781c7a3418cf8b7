package differential_test

import (
	"github.com/zkraft/zkraft/jute"
)

// allScripts returns every script in the order they run; the first one
// sees a fresh server.
func allScripts(seed int64) []*script {
	return []*script{
		specialNodes(),
		basicOps(),
		nullAndEmpty(),
		errorPaths(),
		multiScript(),
		sequentialNames(),
		watchScript(),
		persistentWatches(),
		setWatchesScript(),
		aclScript(),
		sessionScript(),
		timerScript(),
		closingScript(),
		randomScript(seed),
	}
}

// specialNodes reads and pokes /, /zookeeper, /zookeeper/quota and
// /zookeeper/config, and the opcodes that take no path.
func specialNodes() *script {
	b := newScript("special-nodes")
	b.connect(0, 30000)
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		b.get(0, p, false)
		b.exists(0, p, false)
		b.getACL(0, p)
		b.children2(0, p, false)
		b.call(0, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: p})
		b.del(0, p, -1)
	}
	b.del(0, "/zookeeper/config", 5)
	b.children(0, "/zookeeper", false)
	b.set(0, "/zookeeper/config", []byte("server.1=x"), -1)
	b.create(0, "/zookeeper/config/x", nil, open, 0)
	b.setACL(0, "/zookeeper/config", open, -1)
	b.setACL(0, "/zookeeper/config", open, 0)
	b.create(0, "/", nil, open, 0)
	b.create(0, "/zookeeper", nil, open, 0)
	b.create(0, "/zookeeper/quota", nil, open, 0)
	b.create2(0, "/zookeeper/mine", []byte("m"), open, 0)
	b.children2(0, "/zookeeper", false)
	b.get(0, "/zookeeper/mine", false)
	b.del(0, "/zookeeper/mine", 0)
	b.children2(0, "/zookeeper", false)
	b.set(0, "/", []byte("rootdata"), -1)
	b.get(0, "/", false)
	b.set(0, "/", nil, 1)
	b.get(0, "/", false)
	b.set(0, "/", []byte{}, -1)
	b.get(0, "/", false)
	b.call(0, jute.OpReconfig, &jute.ReconfigRequest{JoiningServers: "server.2=127.0.0.1:2888:3888;2182", CurConfigID: -1}).ex(excEarlyReject)
	b.call(0, jute.OpReconfig, &jute.ReconfigRequest{CurConfigID: 0}).ex(excEarlyReject)
	b.call(0, jute.OpSync, &jute.PathRequest{Path: "/"})
	b.call(0, jute.OpSync, &jute.PathRequest{Path: "/does/not/exist"})
	b.call(0, jute.OpSync, &jute.PathRequest{Path: "/zookeeper/config"})
	b.call(0, jute.OpWhoAmI, nil)
	b.callXid(0, 55, jute.OpPing, nil)
	b.call(0, jute.OpPing, nil)
	b.call(0, jute.OpSASL, &jute.BufferRecord{Token: []byte{}})
	b.call(0, jute.OpGetEphemerals, &jute.PathRequest{Path: "/"})
	b.call(0, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/nope"})
	b.call(0, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/", Type: jute.WatcherTypeAny})
	b.call(0, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/", Type: jute.WatcherTypeAny})
	b.multiRead(0, mGet("/"), mGet("/zookeeper/config"), mChildren("/zookeeper"), mGet("/nope"), mChildren("/nope"))
	b.closeSession(0)
	return b.s
}

// basicOps exercises every data opcode on its success and version paths.
func basicOps() *script {
	b := newScript("basic-ops")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.create(0, "/b", []byte("b"), open, 0)
	b.create2(0, "/b/c1", []byte("one"), open, 0)
	b.create2(0, "/b/c2", []byte("two"), open, 0)
	b.children(0, "/b", false)
	b.children2(0, "/b", false)
	b.exists(0, "/b/c1", false)
	b.exists(0, "/b/none", false)
	b.get(0, "/b/c1", false)
	b.set(0, "/b/c1", []byte("uno"), 0)
	b.set(0, "/b/c1", []byte("uno"), 0)
	b.set(0, "/b/c1", []byte("eins"), -1)
	b.set(0, "/b/c1", []byte("eins"), 2)
	b.get(0, "/b/c1", false)
	b.set(0, "/b/none", []byte("x"), -1)
	b.del(0, "/b/c2", 5)
	b.del(0, "/b/c2", 0)
	b.del(0, "/b/c2", 0)
	b.exists(0, "/b/c2", false)
	b.children2(0, "/b", false)
	b.del(0, "/b", -1)
	b.getACL(0, "/b/c1")
	b.setACL(0, "/b/c1", []jute.ACL{acl(jute.PermRead|jute.PermWrite, "world", "anyone")}, 0)
	b.setACL(0, "/b/c1", open, 0)
	b.getACL(0, "/b/c1")
	b.setACL(0, "/b/c1", []jute.ACL{acl(jute.PermAll, "world", "anyone"), acl(jute.PermAll, "world", "anyone")}, 1)
	b.getACL(0, "/b/c1")
	b.getACL(0, "/b/none")
	b.setACL(0, "/b/none", open, -1)
	// containers and TTL nodes
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/b/cont", Data: []byte("c"), ACL: open, Flags: jute.FlagContainer})
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/b/cont0", ACL: open, Flags: 0})
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/b/ttl", Data: []byte("t"), ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 600000})
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/b/ttls-", ACL: open, Flags: jute.FlagPersistentSequentialWithTTL, TTL: 1<<40 - 1})
	b.get(0, "/b/cont", false)
	b.get(0, "/b/ttl", false)
	b.children2(0, "/b", false)
	// ephemerals
	b.create2(0, "/b/e1", []byte("e"), open, jute.FlagEphemeral)
	b.create(0, "/b/e-", nil, open, jute.FlagEphemeralSequential)
	b.create(0, "/bx", nil, open, jute.FlagEphemeral)
	b.create2(1, "/b/other", nil, open, jute.FlagEphemeral)
	b.get(0, "/b/e1", false)
	b.exists(1, "/b/e1", false)
	b.create(0, "/b/e1/child", nil, open, 0)
	b.create(0, "/b/e1/child", nil, open, jute.FlagEphemeral)
	for _, p := range []string{"/", "/b", "/b/", "/b/e", "/bx", "/nomatch", "b", ""} {
		b.call(0, jute.OpGetEphemerals, &jute.PathRequest{Path: p})
	}
	b.call(1, jute.OpGetEphemerals, &jute.PathRequest{Path: "/"})
	b.call(0, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/b"})
	b.call(0, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/b/c1"})
	b.call(0, jute.OpSync, &jute.PathRequest{Path: "/b"})
	// multiRead mixes successes and failures
	b.multiRead(0, mGet("/b/c1"), mChildren("/b"), mGet("/b/gone"), mGet("/b/e1"), mChildren("/b/c1"))
	b.multiRead(0)
	b.closeSession(1)
	b.children2(0, "/b", false)
	b.call(0, jute.OpGetEphemerals, &jute.PathRequest{Path: "/"})
	b.closeSession(0)
	b.connect(2, 30000)
	b.children2(2, "/b", false)
	b.exists(2, "/bx", false)
	b.closeSession(2)
	return b.s
}

// nullAndEmpty keeps null data apart from empty data everywhere it shows.
func nullAndEmpty() *script {
	b := newScript("null-vs-empty")
	b.connect(0, 30000)
	b.create2(0, "/ne", nil, open, 0)
	b.create2(0, "/ne/null", nil, open, 0)
	b.create2(0, "/ne/empty", []byte{}, open, 0)
	b.create2(0, "/ne/zero", []byte{0}, open, 0)
	b.get(0, "/ne/null", false)
	b.get(0, "/ne/empty", false)
	b.get(0, "/ne/zero", false)
	b.set(0, "/ne/empty", nil, -1)
	b.get(0, "/ne/empty", false)
	b.set(0, "/ne/null", []byte{}, -1)
	b.get(0, "/ne/null", false)
	b.multi(0, mCreate("/ne/m-null", nil, 0), mCreate("/ne/m-empty", []byte{}, 0), mSet("/ne/zero", nil, 0))
	b.multiRead(0, mGet("/ne/m-null"), mGet("/ne/m-empty"), mGet("/ne/zero"), mChildren("/ne/m-null"))
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ne/ttl", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 600000})
	b.get(0, "/ne/ttl", false)
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/ne/cont", Data: []byte{}, ACL: open})
	b.get(0, "/ne/cont", false)
	b.closeSession(0)
	return b.s
}
