package differential_test

import (
	"github.com/zkraft/zkraft/jute"
)

// ttlFlagsPath is where the multi script sends a createTTL op with flags 0
// (exception excCreateTTLFlags: ZooKeeper 3.8.0 creates it, zkraft refuses).
const ttlFlagsPath = "/m/badttl"

// multiScript runs multis that succeed, that fail at each position, that
// mix reads and writes, and that carry every op type.
func multiScript() *script {
	b := newScript("multi")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.mk(0, "/m")
	b.mk(0, "/m/a")
	b.children(1, "/m", true)
	b.get(1, "/m/a", true)
	// success: create then setData and check on the new node, delete
	b.multi(0, mCreate("/m/n", []byte("1"), 0), mSet("/m/n", []byte("2"), 0), mCheck("/m/n", 1), mSet("/m/a", []byte("a2"), 0), mDelete("/m/n", 1))
	b.barrier(1)
	b.get(0, "/m/a", false)
	b.children2(0, "/m", false)
	// failure at each position of a 4-op multi
	ops := func() []jute.MultiOp {
		return []jute.MultiOp{mCreate("/m/f1", nil, 0), mSet("/m/a", []byte("x"), -1), mCreate("/m/f2", nil, 0), mCheck("/m/a", -1)}
	}
	for pos := 0; pos < 4; pos++ {
		o := ops()
		switch pos {
		case 0:
			o[0] = mCreate("/m/a", nil, 0) // NodeExists
		case 1:
			o[1] = mSet("/m/a", nil, 77) // BadVersion
		case 2:
			o[2] = mCreate("/m/none/f2", nil, 0) // NoNode
		case 3:
			o[3] = mCheck("/m/a", 99) // BadVersion
		}
		b.multi(0, o...)
	}
	b.children2(0, "/m", false)
	b.get(0, "/m/a", false)
	// several failures: only the first gets its code
	b.multi(0, mCheck("/m/a", 5), mDelete("/m/missing", -1), mCreate("/m", nil, 0))
	// failures of every kind
	b.multi(0, mDelete("/m", -1))                                                                          // NotEmpty
	b.multi(0, mDelete("/m/missing", -1))                                                                  // NoNode
	b.multi(0, mCheck("/m/missing", -1))                                                                   // NoNode
	b.multi(0, mCreate("bad", nil, 0))                                                                     // BadArguments
	b.multi(0, mCreate("/m/badflags", nil, 77))                                                            // BadArguments
	b.multi(0, jute.MultiOp{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/m/noacl", Flags: 0}}) // InvalidACL
	b.multi(0, mCreate("/m/e", nil, jute.FlagEphemeral), mCreate("/m/e/kid", nil, 0))                      // ephemeral parent
	b.multi(0, mCreate("/m/dup", nil, 0), mCreate("/m/dup", nil, 0))                                       // NodeExists on own create
	b.multi(0, mCreate("/m/gone", nil, 0), mDelete("/m/gone", -1), mSet("/m/gone", nil, -1))
	b.multi(0, mSet("/zookeeper/config", nil, -1))
	b.multi(0, mDelete("/m/a", -1), mCheck("/m/a", -1))
	// every create flavour inside multi
	b.multi(0,
		mCreate("/m/c1", []byte("1"), 0),
		mCreate2("/m/c15", []byte("15"), 0),
		jute.MultiOp{Type: jute.OpCreateContainer, Create: &jute.CreateRequest{Path: "/m/c19", ACL: open, Flags: jute.FlagContainer}},
		jute.MultiOp{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: "/m/c21", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 600000}},
		mCreate("/m/c1/seq-", nil, jute.FlagPersistentSequential),
		mCreate("/m/c1/seq-", nil, jute.FlagPersistentSequential),
		mCreate("/m/eph", nil, jute.FlagEphemeral),
	).ex(excCreate2InMulti)
	b.barrier(1)
	b.children2(0, "/m", false)
	b.children2(0, "/m/c1", false)
	b.get(0, "/m/c21", false)
	b.get(0, "/m/c19", false)
	b.get(0, "/m/eph", false)
	b.multi(0, jute.MultiOp{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: "/m/badttl", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 0}})
	b.multi(0, jute.MultiOp{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: ttlFlagsPath, ACL: open, Flags: jute.FlagPersistent, TTL: 10}}).ex(excCreateTTLFlags)
	// empty multi, mixed read/write, reads in multi, writes in multiRead
	b.multi(0)
	b.multi(0, mCreate("/m/mix", nil, 0), mGet("/m/a")).ex(excEarlyReject)
	b.multi(0, mGet("/m/a")).ex(excEarlyReject)
	b.multiRead(0, mGet("/m/a"), mCreate("/m/mix", nil, 0))
	b.multiRead(0, mCheck("/m/a", -1)).ex(excMultiReadErrorBody)
	b.exists(0, "/m/mix", false)
	// delete a subtree in one multi, with watchers on the other session
	b.get(1, "/m/c1", true)
	b.children(1, "/m/c1", true)
	b.children(1, "/m", true).ex(excCreateTTLFlags) // lists ttlFlagsPath on ZooKeeper only
	b.multi(0, mDelete("/m/c1/seq-0000000000", -1), mDelete("/m/c1/seq-0000000001", 0), mDelete("/m/c1", 0), mSet("/m/a", []byte("after"), -1))
	b.barrier(1)
	b.children2(0, "/m", false).ex(excCreateTTLFlags) // lists ttlFlagsPath on ZooKeeper only
	// multi with a check right after a failed one: same op list passes now
	b.multi(0, mCheck("/m/a", 2), mSet("/m/a", []byte("v3"), 2))
	b.multi(0, mCheck("/m/a", 3), mSet("/m/a", []byte("v4"), 3))
	b.get(0, "/m/a", false)
	b.closeSession(0)
	b.barrier(1)
	b.closeSession(1)
	return b.s
}

// sequentialNames checks sequence suffixes across deletes, non-sequential
// siblings, failed and rolled-back creates and multis.
func sequentialNames() *script {
	b := newScript("sequential")
	b.connect(0, 30000)
	b.mk(0, "/s")
	b.create(0, "/s/q-", nil, open, jute.FlagPersistentSequential)
	b.create(0, "/s/q-", nil, open, jute.FlagPersistentSequential)
	b.create(0, "/s/plain", nil, open, 0)
	b.create(0, "/s/q-", nil, open, jute.FlagEphemeralSequential)
	b.del(0, "/s/q-0000000000", -1)
	b.create(0, "/s/q-", nil, open, jute.FlagPersistentSequential)
	b.children2(0, "/s", false)
	b.create(0, "/s/plain", nil, open, 0)                               // fails: NodeExists
	b.create(0, "/s/nope/q-", nil, open, jute.FlagPersistentSequential) // fails: NoNode
	b.create(0, "/s/q-", nil, nil, jute.FlagPersistentSequential)       // fails: InvalidACL
	b.create(0, "/s/q-", nil, open, jute.FlagPersistentSequential)
	b.multi(0, mCreate("/s/q-", nil, jute.FlagPersistentSequential), mCreate("/s/plain", nil, 0)) // rolled back
	b.create(0, "/s/q-", nil, open, jute.FlagPersistentSequential)
	b.multi(0, mCreate("/s/q-", nil, jute.FlagPersistentSequential), mCreate("/s/", nil, jute.FlagPersistentSequential), mCreate("/s/r", nil, 0))
	b.children2(0, "/s", false)
	b.create(0, "/s/", nil, open, jute.FlagPersistentSequential)
	b.create(0, "/s/x-", nil, open, jute.FlagPersistentSequential)
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/s/t-", ACL: open, Flags: jute.FlagPersistentSequentialWithTTL, TTL: 600000})
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/s/c-", ACL: open, Flags: jute.FlagPersistentSequential})
	b.children2(0, "/s", false)
	// a fresh parent numbers from 0 again; delete everything and recreate
	b.mk(0, "/s/p")
	b.create(0, "/s/p/a-", nil, open, jute.FlagPersistentSequential)
	b.del(0, "/s/p/a-0000000000", -1)
	b.del(0, "/s/p", -1)
	b.mk(0, "/s/p")
	b.create(0, "/s/p/a-", nil, open, jute.FlagPersistentSequential)
	b.children2(0, "/s/p", false)
	b.closeSession(0)
	b.connect(1, 30000)
	b.children2(1, "/s", false)
	b.closeSession(1)
	return b.s
}
