package gozk

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// eventTimeout bounds every wait for an event that must come.
const eventTimeout = 10 * time.Second

var (
	openACL  = zk.WorldACL(zk.PermAll)
	juteOpen = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
)

// ---- assertions (plain testing: got before want, fatal on mismatch) ----

func noErr(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", fmt.Sprintf(what, args...), err)
	}
}

func wantErr(t testing.TB, err, want error, what string, args ...any) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v; want %v", fmt.Sprintf(what, args...), err, want)
	}
}

func eq[T comparable](t testing.TB, got, want T, what string, args ...any) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v; want %v", fmt.Sprintf(what, args...), got, want)
	}
}

func deepEq(t testing.TB, got, want any, what string, args ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s =\n  %#v\nwant\n  %#v", fmt.Sprintf(what, args...), got, want)
	}
}

func isTrue(t testing.TB, cond bool, what string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf("expected: %s", fmt.Sprintf(what, args...))
	}
}

// sorted returns a sorted copy.
func sorted(v []string) []string {
	v = slices.Clone(v)
	slices.Sort(v)
	if v == nil {
		v = []string{}
	}
	return v
}

// ---- go-zookeeper helpers ----

// prefix creates (after removing any leftover) the persistent node under
// which the calling test works, and returns its path.
func prefix(t *testing.T, c *zk.Conn) string {
	t.Helper()
	p := "/" + prefixName(t)
	deleteTree(t, c, p)
	_, err := c.Create(p, nil, zk.FlagPersistent, openACL)
	noErr(t, err, "create prefix %s", p)
	return p
}

// deleteTree removes p and everything below it, if present.
func deleteTree(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	children, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	noErr(t, err, "children of %s", p)
	for _, ch := range children {
		deleteTree(t, c, p+"/"+ch)
	}
	if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("delete %s: %v", p, err)
	}
}

func mustCreate(t testing.TB, c *zk.Conn, path string, data []byte, flags int32) string {
	t.Helper()
	got, err := c.Create(path, data, flags, openACL)
	noErr(t, err, "create %s (flags %d)", path, flags)
	return got
}

func mustStat(t testing.TB, c *zk.Conn, path string) *zk.Stat {
	t.Helper()
	ok, st, err := c.Exists(path)
	noErr(t, err, "exists %s", path)
	isTrue(t, ok, "%s exists", path)
	return st
}

// waitEvent returns the event on ch or fails after eventTimeout.
func waitEvent(t testing.TB, ch <-chan zk.Event, what string) zk.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		isTrue(t, ok, "watch channel for %s open", what)
		return ev
	case <-time.After(eventTimeout):
		t.Fatalf("no event for %s within %v", what, eventTimeout)
		return zk.Event{}
	}
}

// wantEvent waits for an event on ch and checks its type and path.
func wantEvent(t testing.TB, ch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	ev := waitEvent(t, ch, fmt.Sprintf("%v on %s", typ, path))
	if ev.Type != typ || ev.Path != path || ev.Err != nil {
		t.Fatalf("event = %+v; want %v on %s", ev, typ, path)
	}
}

// ---- raw client helpers ----

// dial opens a new raw session with a 10 s timeout.
func dial(t testing.TB, s *zktest.Server) *zktest.RawConn {
	t.Helper()
	c, resp := zktest.DialRaw(t, s.Addr, 0, nil, 10000, false)
	isTrue(t, resp.SessionID != 0 && resp.TimeOut > 0, "new session granted (got %+v)", resp)
	return c
}

// call performs a raw request and fails the test on transport errors. It
// returns the reply's error code.
func call(t testing.TB, c *zktest.RawConn, op int32, req, resp jute.Record) int32 {
	t.Helper()
	hdr, err := c.Call(op, req, resp)
	noErr(t, err, "raw op %d %+v", op, req)
	return hdr.Err
}

// callOK is call that also requires err 0.
func callOK(t testing.TB, c *zktest.RawConn, op int32, req, resp jute.Record) {
	t.Helper()
	eq(t, call(t, c, op, req, resp), jute.ErrOk, "err of raw op %d %+v", op, req)
}

func rawCreate(t testing.TB, c *zktest.RawConn, path string, data []byte, flags int32) jute.Create2Response {
	t.Helper()
	var resp jute.Create2Response
	callOK(t, c, jute.OpCreate2, &jute.CreateRequest{Path: path, Data: data, ACL: juteOpen, Flags: flags}, &resp)
	return resp
}

func rawGetData(t testing.TB, c *zktest.RawConn, path string, watch bool) jute.GetDataResponse {
	t.Helper()
	var resp jute.GetDataResponse
	callOK(t, c, jute.OpGetData, &jute.PathWatchRequest{Path: path, Watch: watch}, &resp)
	return resp
}

// noNewEvents proves that c has received no notification beyond the first
// n: a request round trip on c flushes any notification already due.
func noNewEvents(t testing.TB, c *zktest.RawConn, n int) {
	t.Helper()
	callOK(t, c, jute.OpSync, &jute.PathRequest{Path: "/"}, &jute.PathRequest{})
	if ev := c.Events(); len(ev) != n {
		t.Fatalf("notifications = %+v; want only the first %d", ev, n)
	}
}

// waitEvents waits until c has received at least n notifications in all.
func waitEvents(t testing.TB, c *zktest.RawConn, n int) {
	t.Helper()
	for len(c.Events()) < n {
		if _, err := c.WaitEvent(eventTimeout); err != nil {
			t.Fatalf("waiting for notification %d (have %+v): %v", n, c.Events(), err)
		}
	}
}

// ev builds the notification the server should send.
func ev(typ int32, path string) jute.WatcherEvent {
	return jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path}
}

// zkStat converts a go-zk Stat into a jute Stat for comparisons.
func zkStat(s *zk.Stat) jute.Stat {
	return jute.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}
