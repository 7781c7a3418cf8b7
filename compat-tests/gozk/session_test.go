package gozk

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// fastTickMs gives session timeouts in [400, 4000] ms.
const fastTickMs = 200

// TestSessions runs the session life-cycle checks on a dedicated server with
// a short tickTime: timeout negotiation, expiry of a silent session and its
// effects, reattaching to a live session, wrong passwords, and a
// lastZxidSeen from the future.
func TestSessions(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		s := zktest.Start(t, target, zktest.Options{TickMs: fastTickMs})
		t.Run("negotiation", func(t *testing.T) { testNegotiation(t, s) })
		t.Run("expiry", func(t *testing.T) { testExpiry(t, s) })
		t.Run("reattach", func(t *testing.T) { testReattach(t, s) })
		t.Run("future zxid", func(t *testing.T) { testFutureZxid(t, s) })
	})
}

// testNegotiation: the timeout is clamped to [2, 20] ticks, and the reply
// has the readOnly byte only if the request had it.
func testNegotiation(t *testing.T, s *zktest.Server) {
	tests := []struct {
		ask, want int32
		readOnly  bool
	}{
		{100, 2 * fastTickMs, false},
		{1000000, 20 * fastTickMs, true},
		{0, 2 * fastTickMs, false},
		{-5, 2 * fastTickMs, true},
		{1234, 1234, false},
	}
	for _, tt := range tests {
		c, resp := zktest.DialRaw(t, s.Addr, 0, nil, tt.ask, tt.readOnly)
		eq(t, resp.TimeOut, tt.want, "negotiated timeout for %d", tt.ask)
		isTrue(t, resp.SessionID != 0, "session id")
		eq(t, len(resp.Passwd), 16, "password length")
		eq(t, resp.HasReadOnly, tt.readOnly, "readOnly byte present in the reply")
		eq(t, resp.ReadOnly, false, "readOnly")
		eq(t, resp.ProtocolVersion, 0, "protocolVersion")
		_, err := c.CloseSession()
		noErr(t, err, "closeSession")
	}
}

// testExpiry: a session that stops sending expires; its ephemerals go, with
// NodeDeleted/NodeChildrenChanged to watchers, its socket is closed, and a
// reconnect with its id is refused with timeOut 0 and sessionId 0.
func testExpiry(t *testing.T, s *zktest.Server) {
	w, _ := s.ConnectTimeout(t, 20*fastTickMs*time.Millisecond) // go-zk pings it
	mustCreate(t, w, "/expiry", nil, zk.FlagPersistent)

	a, resp := zktest.DialRaw(t, s.Addr, 0, nil, 600, false)
	eq(t, resp.TimeOut, 600, "timeout")
	rawCreate(t, a, "/expiry/e1", nil, jute.FlagEphemeral)
	rawCreate(t, a, "/expiry/e2-", nil, jute.FlagEphemeralSequential)
	st := mustStat(t, w, "/expiry/e1")
	eq(t, st.EphemeralOwner, resp.SessionID, "ephemeralOwner")

	_, _, delCh, err := w.ExistsW("/expiry/e1")
	noErr(t, err, "existsW")
	_, _, childCh, err := w.ChildrenW("/expiry")
	noErr(t, err, "childrenW")
	// From here on a sends nothing.
	wantEvent(t, delCh, zk.EventNodeDeleted, "/expiry/e1")
	wantEvent(t, childCh, zk.EventNodeChildrenChanged, "/expiry")
	children, _, err := w.Children("/expiry")
	noErr(t, err, "children")
	eq(t, len(children), 0, "ephemerals left after expiry")
	noErr(t, a.ExpectClosed(eventTimeout), "the expired session's connection is closed")

	for _, ro := range []bool{false, true} {
		again, r := zktest.DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, 600, ro)
		eq(t, r.TimeOut, 0, "timeOut of a reconnect to an expired session")
		eq(t, r.SessionID, 0, "sessionId of a reconnect to an expired session")
		deepEq(t, r.Passwd, make([]byte, 16), "password of a refused reconnect")
		eq(t, r.HasReadOnly, ro, "readOnly byte")
		noErr(t, again.ExpectClosed(eventTimeout), "connection after the refusal")
	}
}

// testReattach: a new connection with the right id and password takes over
// a live session (closing the old connection) and keeps its ephemerals; a
// wrong password is refused without killing the session.
func testReattach(t *testing.T, s *zktest.Server) {
	const timeout = 20 * fastTickMs
	c1, resp := zktest.DialRaw(t, s.Addr, 0, nil, timeout, false)
	rawCreate(t, c1, "/reattach", nil, jute.FlagPersistent)
	eph := rawCreate(t, c1, "/reattach/e", []byte("mine"), jute.FlagEphemeral)

	c2, r2 := zktest.DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, timeout, false)
	eq(t, r2.SessionID, resp.SessionID, "session id after reattach")
	eq(t, r2.TimeOut, timeout, "timeout after reattach")
	deepEq(t, r2.Passwd, resp.Passwd, "password after reattach")
	noErr(t, c1.ExpectClosed(eventTimeout), "the old connection is closed by the reattach")
	var eps jute.StringsResponse
	callOK(t, c2, jute.OpGetEphemerals, &jute.PathRequest{Path: "/reattach"}, &eps)
	deepEq(t, eps.Strings, []string{"/reattach/e"}, "ephemerals after reattach")

	wrong := append([]byte(nil), resp.Passwd...)
	wrong[0] ^= 0xff
	bad, rb := zktest.DialRaw(t, s.Addr, resp.SessionID, wrong, timeout, true)
	eq(t, rb.TimeOut, 0, "timeOut with a wrong password")
	eq(t, rb.SessionID, 0, "sessionId with a wrong password")
	noErr(t, bad.ExpectClosed(eventTimeout), "connection with a wrong password")
	// ZooKeeper closes the session's other connection before it checks the
	// password.
	noErr(t, c2.ExpectClosed(eventTimeout), "the session's live connection after a wrong-password attempt")

	c3, r3 := zktest.DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, timeout, false)
	eq(t, r3.SessionID, resp.SessionID, "session still alive after a wrong password")
	var sr jute.StatResponse
	callOK(t, c3, jute.OpExists, &jute.PathWatchRequest{Path: "/reattach/e"}, &sr)
	eq(t, sr.Stat, eph.Stat, "the ephemeral is untouched")
	hdr, err := c3.CloseSession()
	noErr(t, err, "closeSession")
	eq(t, hdr.Err, 0, "closeSession err")
	r := dial(t, s)
	eq(t, call(t, r, jute.OpExists, &jute.PathWatchRequest{Path: "/reattach/e"}, nil), jute.ErrNoNode, "ephemeral after closeSession")
}

// testFutureZxid: a client that has seen a zxid the server does not have
// is disconnected without a reply.
func testFutureZxid(t *testing.T, s *zktest.Server) {
	c, resp, err := zktest.DialRawRequest(s.Addr, jute.ConnectRequest{LastZxidSeen: 1 << 50, TimeOut: 4000, Passwd: make([]byte, 16)})
	if err == nil {
		c.Close()
		t.Fatalf("connect with lastZxidSeen from the future answered %+v; want the connection closed", resp)
	}
	isTrue(t, zktest.IsClosed(err), "closed without a reply (got %v)", err)
}
