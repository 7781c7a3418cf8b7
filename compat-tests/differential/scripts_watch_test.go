package differential_test

import (
	"github.com/zkraft/zkraft/jute"
)

// watchScript checks one-shot watches across two sessions: which events,
// in which order relative to replies, and that they fire once.
func watchScript() *script {
	b := newScript("watches")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.mk(0, "/w")
	// exists on a missing node keeps a watch
	b.exists(1, "/w/a", true)
	b.exists(1, "/w/a", true) // same watch twice: one event
	b.get(1, "/w/a", true)    // NoNode: no watch
	b.children(1, "/w", true)
	b.create2(0, "/w/a", []byte("1"), open, 0)
	b.barrier(1)
	b.barrier(1) // nothing more
	// own-session watch: event before the reply of the write
	b.get(0, "/w/a", true)
	b.set(0, "/w/a", []byte("2"), -1)
	// data watch, child watch, exists watch on the same node from session 1
	b.get(1, "/w/a", true)
	b.exists(1, "/w/a", true)
	b.children(1, "/w/a", true)
	b.children(1, "/w", true)
	b.set(0, "/w/a", []byte("3"), -1)
	b.barrier(1)
	b.set(0, "/w/a", []byte("4"), -1) // data watch was one-shot
	b.barrier(1)
	b.create(0, "/w/a/k", nil, open, 0)
	b.barrier(1)
	b.get(1, "/w/a", true)
	b.children(1, "/w/a", true)
	b.del(0, "/w/a/k", -1) // no child watch left on /w/a? it was re-armed above
	b.barrier(1)
	b.get(1, "/w/a", true)
	b.children(1, "/w/a", true)
	b.exists(1, "/w/a", true)
	b.del(0, "/w/a", -1) // NodeDeleted once (data+child+exists), then /w children
	b.barrier(1)
	// setACL fires nothing; failed writes fire nothing
	b.create(0, "/w/b", nil, open, 0)
	b.barrier(1)
	b.get(1, "/w/b", true)
	b.setACL(0, "/w/b", open, -1)
	b.set(0, "/w/b", nil, 9)
	b.del(0, "/w/b", 9)
	b.create(0, "/w/b", nil, open, 0)
	b.barrier(1)
	// both sessions watch; the writer's event precedes its reply
	b.get(0, "/w/b", true)
	b.children(0, "/w", true)
	b.children(1, "/w", true)
	b.pipe(0, req(jute.OpSetData, &jute.SetDataRequest{Path: "/w/b", Data: []byte("p"), Version: -1}),
		req(jute.OpGetData, &jute.PathWatchRequest{Path: "/w/b", Watch: true}),
		req(jute.OpCreate, &jute.CreateRequest{Path: "/w/c", ACL: open}),
		req(jute.OpSetData, &jute.SetDataRequest{Path: "/w/b", Data: []byte("q"), Version: -1}),
		req(jute.OpGetChildren2, &jute.PathWatchRequest{Path: "/w"}))
	b.barrier(1)
	// checkWatches / removeWatches
	b.get(1, "/w/b", true)
	b.children(1, "/w/b", true)
	for _, typ := range []int32{jute.WatcherTypeChildren, jute.WatcherTypeData, jute.WatcherTypeAny, 0, 4} {
		b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/b", Type: typ})
	}
	b.call(0, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeAny}).ex(excCheckWatches) // only [1] watches
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeData})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeData})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeData})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeAny})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeAny})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/w/b", Type: jute.WatcherTypeAny})
	b.exists(1, "/w/missing", true)
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/missing", Type: jute.WatcherTypeData})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/w/missing", Type: jute.WatcherTypeChildren})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/w/missing", Type: jute.WatcherTypeData})
	b.create(0, "/w/missing", nil, open, 0)
	b.set(0, "/w/b", []byte("r"), -1) // removed watches fire nothing
	b.barrier(1)
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "bad", Type: jute.WatcherTypeAny})
	// ephemerals of a closing session fire NodeDeleted on watchers
	b.create(0, "/w/e1", nil, open, jute.FlagEphemeral)
	b.create(0, "/w/e2", nil, open, jute.FlagEphemeral)
	b.exists(1, "/w/e1", true)
	b.get(1, "/w/e2", true)
	b.children(1, "/w", true)
	b.closeSession(0)
	b.barrier(1).unorder = true
	b.children2(1, "/w", false)
	b.closeSession(1)
	return b.s
}

// mixPath holds a persistent and a one-shot watch of one connection
// (exception excPersistentOneShot).
const mixPath = "/pw/mix"

// persistentWatches covers addWatch in both modes, across sessions, and
// its interplay with one-shot watches.
func persistentWatches() *script {
	b := newScript("persistent-watches")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.mk(0, "/pw")
	b.addWatch(1, "/pw", jute.AddWatchModePersistent)
	b.addWatch(1, "/pw/r", jute.AddWatchModePersistentRecursive)
	b.addWatch(1, "/pw/missing/deep", jute.AddWatchModePersistent)
	b.addWatch(1, "/pw", 2)
	b.addWatch(1, "bad", jute.AddWatchModePersistent)
	b.create(0, "/pw/r", nil, open, 0)
	b.barrier(1)
	b.create(0, "/pw/r/x", nil, open, 0)
	b.create(0, "/pw/r/x/y", nil, open, 0)
	b.set(0, "/pw/r/x/y", []byte("1"), -1)
	b.set(0, "/pw", []byte("1"), -1)
	b.barrier(1)
	b.set(0, "/pw", []byte("2"), -1) // persistent: fires again
	b.barrier(1)
	// a one-shot watch on the same node from the same connection: one event
	b.get(1, "/pw/r/x", true)
	b.set(0, "/pw/r/x", []byte("1"), -1)
	b.barrier(1)
	b.multi(0, mDelete("/pw/r/x/y", -1), mDelete("/pw/r/x", -1), mCreate("/pw/r/z", nil, 0), mSet("/pw/r", nil, -1))
	b.barrier(1)
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/pw", Type: jute.WatcherTypeData})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/pw", Type: jute.WatcherTypeChildren})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/pw/r", Type: jute.WatcherTypeAny})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/pw", Type: jute.WatcherTypeData})
	b.set(0, "/pw", []byte("3"), -1)
	b.create(0, "/pw/k", nil, open, 0)
	b.barrier(1)
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/pw", Type: jute.WatcherTypeAny})
	b.call(1, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/pw/r", Type: jute.WatcherTypeAny})
	b.call(1, jute.OpCheckWatches, &jute.WatchesRequest{Path: "/pw/r", Type: jute.WatcherTypeAny})
	b.set(0, "/pw", []byte("4"), -1)
	b.create(0, "/pw/r/after", nil, open, 0)
	b.barrier(1)
	// a recursive watch on / sees everything, including /zookeeper children
	b.addWatch(0, "/", jute.AddWatchModePersistentRecursive)
	b.create(1, "/pw/from1", []byte("x"), open, 0)
	b.create(1, "/zookeeper/pwtmp", nil, open, 0)
	b.del(1, "/zookeeper/pwtmp", -1)
	b.del(1, "/pw/from1", -1)
	b.barrier(0)
	b.call(0, jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/", Type: jute.WatcherTypeAny})
	// a persistent and a one-shot watch on the same path and connection:
	// does the persistent one survive the one-shot firing?
	b.addWatch(0, mixPath, jute.AddWatchModePersistent)
	b.exists(0, mixPath, true)
	b.create(1, mixPath, nil, open, 0)
	b.barrier(0)
	b.set(1, mixPath, []byte("1"), -1)
	b.barrier(0).ex(excPersistentOneShot)
	b.call(0, jute.OpCheckWatches, &jute.WatchesRequest{Path: mixPath, Type: jute.WatcherTypeAny})
	b.closeSession(0)
	b.closeSession(1)
	return b.s
}

// setWatchesScript re-registers watches on a fresh connection with
// setWatches (101) and setWatches2 (105) relative to a remembered zxid.
func setWatchesScript() *script {
	b := newScript("set-watches")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.mk(0, "/sw")
	b.mk(0, "/sw/same")
	b.mk(0, "/sw/changed")
	b.mk(0, "/sw/deleted")
	b.mk(0, "/sw/kids")
	b.exists(0, "/sw", false).lab("before")
	b.set(0, "/sw/changed", []byte("new"), -1)
	b.del(0, "/sw/deleted", -1)
	b.create(0, "/sw/kids/k", nil, open, 0)
	b.mk(0, "/sw/born")
	before := func(sd *side) int64 { return sd.zxid("before") }
	b.callFn(1, jute.OpSetWatches, func(sd *side) jute.Record {
		return &jute.SetWatches{RelativeZxid: before(sd),
			DataWatches:  []string{"/sw/same", "/sw/changed", "/sw/deleted", "/sw/never"},
			ExistWatches: []string{"/sw/born", "/sw/absent", "/sw/same"},
			ChildWatches: []string{"/sw/kids", "/sw/same", "/sw/deleted"}}
	})
	b.barrier(1)
	// what stayed registered fires on the next change
	b.set(0, "/sw/same", []byte("x"), -1)
	b.create(0, "/sw/absent", nil, open, 0)
	b.create(0, "/sw/same/k", nil, open, 0)
	b.create(0, "/sw/never", nil, open, 0)
	b.barrier(1)
	b.callFn(1, jute.OpSetWatches2, func(sd *side) jute.Record {
		return &jute.SetWatches2{RelativeZxid: sd.zxid("before"),
			DataWatches:                []string{"/sw/changed"},
			ExistWatches:               []string{"/sw/gone"},
			ChildWatches:               []string{"/sw/kids"},
			PersistentWatches:          []string{"/sw/same"},
			PersistentRecursiveWatches: []string{"/sw/kids"}}
	})
	b.barrier(1)
	b.set(0, "/sw/same", []byte("y"), -1)
	b.set(0, "/sw/same", []byte("z"), -1)
	b.create(0, "/sw/kids/k2", nil, open, 0)
	b.create(0, "/sw/gone", nil, open, 0)
	b.barrier(1)
	// relativeZxid 0 and a zxid from the future
	b.call(1, jute.OpSetWatches, &jute.SetWatches{RelativeZxid: 0, DataWatches: []string{"/sw/same"}, ExistWatches: []string{}, ChildWatches: []string{"/sw"}})
	b.barrier(1)
	b.callFn(1, jute.OpSetWatches, func(sd *side) jute.Record {
		return &jute.SetWatches{RelativeZxid: sd.maxZx + 1000, DataWatches: []string{"/sw/same", "/sw/nothere"}, ExistWatches: []string{"/sw/same"}, ChildWatches: []string{}}
	})
	b.barrier(1)
	b.callXid(1, jute.XidSetWatches, jute.OpSetWatches, &jute.SetWatches{RelativeZxid: 0, DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{}})
	// a null vector (length -1) where a list is expected
	b.call(1, jute.OpSetWatches, &jute.SetWatches{RelativeZxid: 0, DataWatches: []string{"/sw/same"}, ExistWatches: nil, ChildWatches: []string{"/sw"}}).ex(excSetWatchesNull)
	b.closeSession(0)
	b.closeSession(1)
	return b.s
}
