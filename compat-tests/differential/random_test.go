package differential_test

import (
	"fmt"
	"math/rand"

	"github.com/zkraft/zkraft/jute"
)

// randomSteps is the number of generated operations.
const randomSteps = 300

// randomScript generates a reproducible sequence of operations from seed:
// two sessions (one of which is closed and reopened now and then) work on a
// small tree so that creates collide, versions match or not, and watches
// fire; a third connection only holds persistent watches. Every ACL keeps
// READ, so no exception can be needed.
func randomScript(seed int64) *script {
	rng := rand.New(rand.NewSource(seed))
	b := newScript(fmt.Sprintf("random(seed=%d)", seed))
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.connect(2, 30000)
	b.mk(0, "/r")
	paths := []string{"/r/a", "/r/b", "/r/a/x", "/r/a/y", "/r/b/z", "/r/a/x/q", "/r/c"}
	pick := func(v []string) string { return v[rng.Intn(len(v))] }
	path := func() string {
		if rng.Intn(10) == 0 {
			return pick([]string{"/r", "/r/none/x", "/r/a/", "/"})
		}
		return pick(paths)
	}
	datas := [][]byte{nil, {}, []byte("d1"), []byte("data-22")}
	dat := func() []byte { return datas[rng.Intn(len(datas))] }
	version := func() int32 { return []int32{-1, -1, 0, 1, 2, 5}[rng.Intn(6)] }
	flags := func() int32 { return []int32{0, 0, 0, 1, 2, 3}[rng.Intn(6)] }
	seqPath := func(p string, f int32) string {
		if f == jute.FlagPersistentSequential || f == jute.FlagEphemeralSequential {
			return p + "-"
		}
		return p
	}
	acls := func() []jute.ACL {
		return []jute.ACL{acl(jute.PermRead|int32(rng.Intn(32)), "world", "anyone")}
	}
	writeOp := func() jute.MultiOp {
		switch rng.Intn(5) {
		case 0, 1:
			f := flags()
			return mCreate(seqPath(path(), f), dat(), f)
		case 2:
			return mDelete(path(), version())
		case 3:
			return mSet(path(), dat(), version())
		default:
			return mCheck(path(), version())
		}
	}
	afterClose := false
	for range randomSteps {
		s := rng.Intn(2)
		if afterClose { // collect the close's events, in no fixed order
			b.barrier(0).unorder = true
			b.barrier(2).unorder = true
			afterClose = false
		}
		switch n := rng.Intn(100); {
		case n < 18:
			f := flags()
			if rng.Intn(2) == 0 {
				b.create(s, seqPath(path(), f), dat(), open, f)
			} else {
				b.create2(s, seqPath(path(), f), dat(), open, f)
			}
		case n < 26:
			b.del(s, path(), version())
		case n < 36:
			b.set(s, path(), dat(), version())
		case n < 44:
			b.get(s, path(), rng.Intn(3) == 0)
		case n < 50:
			b.exists(s, path(), rng.Intn(3) == 0)
		case n < 55:
			b.children(s, path(), rng.Intn(3) == 0)
		case n < 60:
			b.children2(s, path(), rng.Intn(3) == 0)
		case n < 68:
			ops := make([]jute.MultiOp, 1+rng.Intn(4))
			for i := range ops {
				ops[i] = writeOp()
			}
			b.multi(s, ops...)
		case n < 71:
			ops := make([]jute.MultiOp, 1+rng.Intn(3))
			for i := range ops {
				if rng.Intn(2) == 0 {
					ops[i] = mGet(path())
				} else {
					ops[i] = mChildren(path())
				}
			}
			b.multiRead(s, ops...)
		case n < 74:
			b.setACL(s, path(), acls(), version())
		case n < 76:
			b.getACL(s, path())
		case n < 78:
			// not "/": its count depends on what earlier scripts left
			b.call(s, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: pick(append([]string{"/r"}, paths...))})
		case n < 80:
			b.call(s, jute.OpGetEphemerals, &jute.PathRequest{Path: pick([]string{"/", "/r/a", "/r"})})
		case n < 82:
			b.call(s, jute.OpSync, &jute.PathRequest{Path: path()})
		case n < 85:
			// persistent watches live on their own connection (slot 2),
			// which never sets one-shot watches: see persistentWatches
			b.addWatch(2, path(), int32(rng.Intn(2)))
		case n < 86:
			b.call(2, jute.OpRemoveWatches, &jute.WatchesRequest{Path: path(), Type: jute.WatcherTypeAny})
		case n < 87:
			b.barrier(2)
		case n < 88:
			b.call(s, jute.OpRemoveWatches, &jute.WatchesRequest{Path: path(), Type: 1 + int32(rng.Intn(3))})
		case n < 89:
			// the watch may be held by the other session only
			b.call(s, jute.OpCheckWatches, &jute.WatchesRequest{Path: path(), Type: 1 + int32(rng.Intn(3))}).ex(excCheckWatches)
		case n < 92:
			// pipeline a write and a read
			b.pipe(s, req(jute.OpSetData, &jute.SetDataRequest{Path: path(), Data: dat(), Version: -1}),
				req(jute.OpGetChildren2, &jute.PathWatchRequest{Path: path(), Watch: rng.Intn(2) == 0}),
				req(jute.OpExists, &jute.PathWatchRequest{Path: path(), Watch: rng.Intn(2) == 0}))
		case n < 94:
			b.closeSession(1)
			b.connect(1, 30000)
			afterClose = true
		default:
			b.barrier(s)
		}
	}
	b.barrier(0)
	b.barrier(1)
	b.barrier(2)
	b.children2(0, "/r", false)
	b.call(0, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/r"})
	b.closeSession(0)
	b.barrier(2).unorder = true
	b.closeSession(1)
	b.barrier(2).unorder = true
	b.closeSession(2)
	return b.s
}
