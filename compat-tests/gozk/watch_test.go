package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestWatchesGoZK checks one-shot data, exist and child watches through
// go-zk: the right event type on the right path for each change.
func TestWatchesGoZK(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		w, _ := s.Connect(t) // watcher on its own session
		p := prefix(t, c)
		n := p + "/n"
		mustCreate(t, c, n, []byte("x"), zk.FlagPersistent)

		_, _, dataCh, err := w.GetW(n)
		noErr(t, err, "getW")
		_, _, existCh, err := w.ExistsW(n)
		noErr(t, err, "existsW")
		_, _, childCh, err := w.ChildrenW(n)
		noErr(t, err, "childrenW")
		_, _, parentCh, err := w.ChildrenW(p)
		noErr(t, err, "childrenW parent")

		_, err = c.Set(n, []byte("y"), -1)
		noErr(t, err, "set")
		wantEvent(t, dataCh, zk.EventNodeDataChanged, n)
		wantEvent(t, existCh, zk.EventNodeDataChanged, n)

		mustCreate(t, c, n+"/c", nil, zk.FlagPersistent)
		wantEvent(t, childCh, zk.EventNodeChildrenChanged, n)

		_, _, childCh, err = w.ChildrenW(n)
		noErr(t, err, "childrenW again")
		_, _, dataCh, err = w.GetW(n)
		noErr(t, err, "getW again")
		noErr(t, c.Delete(n+"/c", -1), "delete child")
		wantEvent(t, childCh, zk.EventNodeChildrenChanged, n)

		_, _, childCh, err = w.ChildrenW(n)
		noErr(t, err, "childrenW again")
		noErr(t, c.Delete(n, -1), "delete node")
		wantEvent(t, dataCh, zk.EventNodeDeleted, n)
		wantEvent(t, childCh, zk.EventNodeDeleted, n)
		wantEvent(t, parentCh, zk.EventNodeChildrenChanged, p)

		// getData on a missing node sets no watch; exists does.
		_, _, _, err = w.GetW(n)
		wantErr(t, err, zk.ErrNoNode, "getW on a missing node")
		_, _, _, err = w.ChildrenW(n)
		wantErr(t, err, zk.ErrNoNode, "childrenW on a missing node")
		_, _, existCh, err = w.ExistsW(n)
		noErr(t, err, "existsW missing")
		mustCreate(t, c, n, nil, zk.FlagPersistent)
		wantEvent(t, existCh, zk.EventNodeCreated, n)
	})
}

// TestWatchesRaw counts notifications exactly on one connection: one event
// per (path, connection) however many registrations, one-shot semantics,
// NodeDeleted once even for a node watched for data and children, no event
// for setACL, and the event before the reply of the write that caused it.
func TestWatchesRaw(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		n := p + "/n"
		mustCreate(t, c, n, []byte("x"), zk.FlagPersistent)
		w := dial(t, s)

		// Three registrations of the data table (two getData, one exists)
		// give one NodeDataChanged.
		rawGetData(t, w, n, true)
		rawGetData(t, w, n, true)
		callOK(t, w, jute.OpExists, &jute.PathWatchRequest{Path: n, Watch: true}, &jute.StatResponse{})
		callOK(t, w, jute.OpGetChildren, &jute.PathWatchRequest{Path: n, Watch: true}, &jute.GetChildrenResponse{})
		_, err := c.Set(n, []byte("y"), -1)
		noErr(t, err, "set")
		noNewEvents(t, w, 1)
		eq(t, w.Events()[0], ev(jute.EventNodeDataChanged, n), "event")

		// One-shot: the data watch is gone, a second set sends nothing.
		_, err = c.Set(n, []byte("z"), -1)
		noErr(t, err, "set again")
		noNewEvents(t, w, 1)
		// setACL fires nothing.
		rawGetData(t, w, n, true)
		_, err = c.SetACL(n, openACL, -1)
		noErr(t, err, "setACL")
		noNewEvents(t, w, 1)

		// Delete with data and child watches on the same connection: one
		// NodeDeleted. The writer is the watching connection itself, so the
		// event must come before the reply of its delete.
		callOK(t, w, jute.OpDelete, &jute.DeleteRequest{Path: n, Version: -1}, nil)
		eq(t, len(w.Events()), 2, "notifications before the delete reply")
		eq(t, w.Events()[1], ev(jute.EventNodeDeleted, n), "event")
		noNewEvents(t, w, 2)

		// A data watch does not fire for child changes, and a child watch not
		// for data changes.
		rawCreate(t, w, n, nil, jute.FlagPersistent)
		rawGetData(t, w, n, true)
		rawCreate(t, w, n+"/c", nil, jute.FlagPersistent)
		noNewEvents(t, w, 2)
		callOK(t, w, jute.OpGetChildren2, &jute.PathWatchRequest{Path: n, Watch: true}, &jute.GetChildren2Response{})
		callOK(t, w, jute.OpSetData, &jute.SetDataRequest{Path: n + "/c", Version: -1}, &jute.StatResponse{})
		noNewEvents(t, w, 2)
		callOK(t, w, jute.OpSetData, &jute.SetDataRequest{Path: n, Version: -1}, &jute.StatResponse{})
		eq(t, w.Events()[2], ev(jute.EventNodeDataChanged, n), "data watch")
		callOK(t, w, jute.OpDelete, &jute.DeleteRequest{Path: n + "/c", Version: -1}, nil)
		eq(t, w.Events()[3], ev(jute.EventNodeChildrenChanged, n), "child watch")
		noNewEvents(t, w, 4)

		// Ephemeral cleanup by closeSession fires watches too.
		e := dial(t, s)
		rawCreate(t, e, p+"/eph", nil, jute.FlagEphemeral)
		callOK(t, w, jute.OpExists, &jute.PathWatchRequest{Path: p + "/eph", Watch: true}, &jute.StatResponse{})
		callOK(t, w, jute.OpGetChildren, &jute.PathWatchRequest{Path: p, Watch: true}, &jute.GetChildrenResponse{})
		hdr, err := e.CloseSession()
		noErr(t, err, "closeSession")
		eq(t, hdr.Err, 0, "closeSession err")
		noErr(t, e.ExpectClosed(eventTimeout), "connection closed after closeSession")
		waitEvents(t, w, 6)
		deepEq(t, w.Events()[4:], []jute.WatcherEvent{ev(jute.EventNodeDeleted, p+"/eph"), ev(jute.EventNodeChildrenChanged, p)}, "events of an ephemeral's cleanup")
	})
}

// TestCheckRemoveWatches checks checkWatches (17) and removeWatches (18):
// -121 NoWatcher when there is none, the watcher types, and that a removed
// watch no longer fires.
func TestCheckRemoveWatches(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		n := p + "/n"
		mustCreate(t, c, n, nil, zk.FlagPersistent)
		w := dial(t, s)
		check := func(op, typ int32) int32 {
			return call(t, w, op, &jute.WatchesRequest{Path: n, Type: typ}, nil)
		}
		for _, op := range []int32{jute.OpCheckWatches, jute.OpRemoveWatches} {
			for _, typ := range []int32{jute.WatcherTypeChildren, jute.WatcherTypeData, jute.WatcherTypeAny} {
				eq(t, check(op, typ), jute.ErrNoWatcher, "op %d type %d without watches", op, typ)
			}
		}
		eq(t, call(t, w, jute.OpCheckWatches, &jute.WatchesRequest{Path: p + "/missing", Type: jute.WatcherTypeAny}, nil), jute.ErrNoWatcher, "checkWatches on a missing node")

		rawGetData(t, w, n, true)
		eq(t, check(jute.OpCheckWatches, jute.WatcherTypeData), 0, "checkWatches data")
		eq(t, check(jute.OpCheckWatches, jute.WatcherTypeAny), 0, "checkWatches any")
		eq(t, check(jute.OpCheckWatches, jute.WatcherTypeChildren), jute.ErrNoWatcher, "checkWatches children")
		eq(t, check(jute.OpCheckWatches, jute.WatcherTypeData), 0, "checkWatches does not remove")
		eq(t, check(jute.OpRemoveWatches, jute.WatcherTypeChildren), jute.ErrNoWatcher, "removeWatches children")
		eq(t, check(jute.OpRemoveWatches, jute.WatcherTypeData), 0, "removeWatches data")
		eq(t, check(jute.OpRemoveWatches, jute.WatcherTypeData), jute.ErrNoWatcher, "removeWatches data again")
		_, err := c.Set(n, []byte("x"), -1)
		noErr(t, err, "set")
		noNewEvents(t, w, 0)

		// An exist watch lives in the data table.
		eq(t, call(t, w, jute.OpExists, &jute.PathWatchRequest{Path: p + "/m", Watch: true}, nil), jute.ErrNoNode, "exists missing")
		eq(t, call(t, w, jute.OpCheckWatches, &jute.WatchesRequest{Path: p + "/m", Type: jute.WatcherTypeData}, nil), 0, "exist watch is a data watch")

		callOK(t, w, jute.OpGetChildren, &jute.PathWatchRequest{Path: n, Watch: true}, &jute.GetChildrenResponse{})
		rawGetData(t, w, n, true)
		eq(t, check(jute.OpRemoveWatches, jute.WatcherTypeAny), 0, "removeWatches any")
		eq(t, check(jute.OpCheckWatches, jute.WatcherTypeAny), jute.ErrNoWatcher, "nothing left")
		mustCreate(t, c, n+"/c", nil, zk.FlagPersistent)
		_, err = c.Set(n, []byte("y"), -1)
		noErr(t, err, "set")
		noNewEvents(t, w, 0)

		// Watches belong to the connection: another connection cannot remove
		// them. (ZooKeeper 3.8.0's checkWatches answers 0 when any connection
		// watches the path, so it is not asserted across connections.)
		rawGetData(t, w, n, true)
		o := dial(t, s)
		eq(t, call(t, o, jute.OpRemoveWatches, &jute.WatchesRequest{Path: n, Type: jute.WatcherTypeAny}, nil), jute.ErrNoWatcher, "removeWatches from another connection")
		_, err = c.Set(n, []byte("z"), -1)
		noErr(t, err, "set")
		noNewEvents(t, w, 1)
		eq(t, w.Events()[0], ev(jute.EventNodeDataChanged, n), "the watch survived the other connection's removeWatches")
		noNewEvents(t, o, 0)
	})
}

// TestAddWatch checks persistent (mode 0) and persistent-recursive (mode 1)
// watches: the events each change fires, that they survive firing, that
// recursive watches never send NodeChildrenChanged, and the 4-byte reply.
func TestAddWatch(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		w := dial(t, s)

		// The reply to addWatch carries ErrorResponse{0}: a 4-byte body.
		xid := w.NextXid()
		noErr(t, w.Send(xid, jute.OpAddWatch, &jute.AddWatchRequest{Path: p + "/pw", Mode: jute.AddWatchModePersistent}), "send addWatch")
		hdr, body, err := w.Recv()
		noErr(t, err, "addWatch reply")
		eq(t, hdr.Xid, xid, "reply xid")
		eq(t, hdr.Err, 0, "addWatch err")
		deepEq(t, body, []byte{0, 0, 0, 0}, "addWatch reply body")
		// Call keeps its own xid counter; move it past the one used above.
		callOK(t, w, jute.OpAddWatch, &jute.AddWatchRequest{Path: p + "/rw", Mode: jute.AddWatchModePersistentRecursive}, &jute.ErrorResponse{})

		ops := []struct {
			do   func()
			want []jute.WatcherEvent
		}{
			{func() { mustCreate(t, c, p+"/pw", []byte("a"), zk.FlagPersistent) }, []jute.WatcherEvent{ev(jute.EventNodeCreated, p+"/pw")}},
			{func() { c.Set(p+"/pw", []byte("b"), -1) }, []jute.WatcherEvent{ev(jute.EventNodeDataChanged, p+"/pw")}},
			{func() { c.Set(p+"/pw", []byte("c"), -1) }, []jute.WatcherEvent{ev(jute.EventNodeDataChanged, p+"/pw")}},
			{func() { mustCreate(t, c, p+"/pw/k", nil, zk.FlagPersistent) }, []jute.WatcherEvent{ev(jute.EventNodeChildrenChanged, p+"/pw")}},
			{func() { c.Set(p+"/pw/k", []byte("x"), -1) }, nil}, // not recursive
			{func() { mustCreate(t, c, p+"/pw/k/g", nil, zk.FlagPersistent) }, nil},
			{func() { c.Delete(p+"/pw/k/g", -1) }, nil},
			{func() { c.Delete(p+"/pw/k", -1) }, []jute.WatcherEvent{ev(jute.EventNodeChildrenChanged, p+"/pw")}},
			{func() { c.Delete(p+"/pw", -1) }, []jute.WatcherEvent{ev(jute.EventNodeDeleted, p+"/pw")}},
			{func() { mustCreate(t, c, p+"/pw", nil, zk.FlagPersistent) }, []jute.WatcherEvent{ev(jute.EventNodeCreated, p+"/pw")}},

			{func() { mustCreate(t, c, p+"/rw", nil, zk.FlagPersistent) }, []jute.WatcherEvent{ev(jute.EventNodeCreated, p+"/rw")}},
			{func() { mustCreate(t, c, p+"/rw/a", nil, zk.FlagPersistent) }, []jute.WatcherEvent{ev(jute.EventNodeCreated, p+"/rw/a")}},
			{func() { mustCreate(t, c, p+"/rw/a/b", nil, zk.FlagEphemeral) }, []jute.WatcherEvent{ev(jute.EventNodeCreated, p+"/rw/a/b")}},
			{func() { c.Set(p+"/rw/a/b", []byte("x"), -1) }, []jute.WatcherEvent{ev(jute.EventNodeDataChanged, p+"/rw/a/b")}},
			{func() { c.Set(p+"/rw", []byte("x"), -1) }, []jute.WatcherEvent{ev(jute.EventNodeDataChanged, p+"/rw")}},
			{func() { c.Delete(p+"/rw/a/b", -1) }, []jute.WatcherEvent{ev(jute.EventNodeDeleted, p+"/rw/a/b")}},
			{func() { mustCreate(t, c, p+"/rwx", nil, zk.FlagPersistent) }, nil}, // a sibling sharing the prefix string
			{func() { c.Delete(p+"/rw/a", -1) }, []jute.WatcherEvent{ev(jute.EventNodeDeleted, p+"/rw/a")}},
		}
		var want []jute.WatcherEvent
		for i, op := range ops {
			op.do()
			want = append(want, op.want...)
			// A round trip on w flushes the notifications of the change.
			callOK(t, w, jute.OpSync, &jute.PathRequest{Path: "/"}, &jute.PathRequest{})
			deepEq(t, w.Events(), want, "events after step %d", i)
		}

		// Persistent watches sit in both tables: checkWatches finds them with
		// any type; removing them takes Any.
		eq(t, call(t, w, jute.OpCheckWatches, &jute.WatchesRequest{Path: p + "/rw", Type: jute.WatcherTypeData}, nil), 0, "check persistent as data")
		eq(t, call(t, w, jute.OpCheckWatches, &jute.WatchesRequest{Path: p + "/rw", Type: jute.WatcherTypeChildren}, nil), 0, "check persistent as children")
		eq(t, call(t, w, jute.OpRemoveWatches, &jute.WatchesRequest{Path: p + "/rw", Type: jute.WatcherTypeAny}, nil), 0, "remove persistent")
		eq(t, call(t, w, jute.OpCheckWatches, &jute.WatchesRequest{Path: p + "/rw", Type: jute.WatcherTypeAny}, nil), jute.ErrNoWatcher, "persistent removed")
		mustCreate(t, c, p+"/rw/z", nil, zk.FlagPersistent)
		noNewEvents(t, w, len(want))
	})
}

// TestSetWatches checks setWatches (101) as go-zk sends it on reconnect:
// watches whose node changed after relativeZxid fire at once, before the
// reply; the others are registered and fire later.
func TestSetWatches(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		for _, n := range []string{"changed", "deleted", "parent", "same", "samekids", "born"} {
			mustCreate(t, c, p+"/"+n, nil, zk.FlagPersistent)
		}
		noErr(t, c.Delete(p+"/born", -1), "delete born")
		rel := mustStat(t, c, p).Pzxid // the last zxid the "old connection" saw

		_, err := c.Set(p+"/changed", []byte("x"), -1)
		noErr(t, err, "set")
		noErr(t, c.Delete(p+"/deleted", -1), "delete")
		mustCreate(t, c, p+"/parent/kid", nil, zk.FlagPersistent)
		mustCreate(t, c, p+"/born", nil, zk.FlagPersistent)

		w := dial(t, s)
		xid := w.NextXid()
		noErr(t, w.Send(xid, jute.OpSetWatches, &jute.SetWatches{
			RelativeZxid: rel,
			DataWatches:  []string{p + "/changed", p + "/deleted", p + "/same"},
			ExistWatches: []string{p + "/born", p + "/unborn"},
			ChildWatches: []string{p + "/parent", p + "/samekids"},
		}), "send setWatches")
		var before []jute.WatcherEvent
		for {
			hdr, _, err := w.Recv()
			noErr(t, err, "reading the setWatches reply")
			if hdr.Xid == jute.XidNotification {
				before = w.Events()
				continue
			}
			eq(t, hdr.Xid, xid, "reply xid")
			eq(t, hdr.Err, 0, "setWatches err")
			break
		}
		// ZooKeeper fires them list by list (data, exist, child); compare as
		// a set.
		deepEq(t, sortEvents(before), sortEvents([]jute.WatcherEvent{
			ev(jute.EventNodeDataChanged, p+"/changed"),
			ev(jute.EventNodeDeleted, p+"/deleted"),
			ev(jute.EventNodeCreated, p+"/born"),
			ev(jute.EventNodeChildrenChanged, p+"/parent"),
		}), "events fired by setWatches before its reply")

		// The rest were registered.
		_, err = c.Set(p+"/same", []byte("x"), -1)
		noErr(t, err, "set same")
		mustCreate(t, c, p+"/unborn", nil, zk.FlagPersistent)
		mustCreate(t, c, p+"/samekids/k", nil, zk.FlagPersistent)
		// The fired ones were not: changing them again sends nothing.
		_, err = c.Set(p+"/changed", []byte("y"), -1)
		noErr(t, err, "set changed")
		mustCreate(t, c, p+"/parent/kid2", nil, zk.FlagPersistent)
		noNewEvents(t, w, 7)
		deepEq(t, w.Events()[4:], []jute.WatcherEvent{
			ev(jute.EventNodeDataChanged, p+"/same"),
			ev(jute.EventNodeCreated, p+"/unborn"),
			ev(jute.EventNodeChildrenChanged, p+"/samekids"),
		}, "events of the registered watches")
	})
}

func sortEvents(v []jute.WatcherEvent) []jute.WatcherEvent {
	out := append([]jute.WatcherEvent{}, v...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Path < out[i].Path || (out[j].Path == out[i].Path && out[j].Type < out[i].Type) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
