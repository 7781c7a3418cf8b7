package differential_test

import (
	"github.com/zkraft/zkraft/jute"
)

// sessionScript covers the handshake: timeout negotiation, the optional
// readOnly byte, resuming with a good and a bad password, resuming a closed
// session, and a client that has seen a zxid from the future.
func sessionScript() *script {
	b := newScript("sessions")
	for i, to := range []int32{100, 1000000, 0, -5, 6000} {
		b.connect(i, to)
		b.call(i, jute.OpPing, nil)
	}
	for i := range 5 {
		b.closeSession(i)
	}
	b.connectSpec(0, connectSpec{timeoutMs: 30000, resume: -1, noReadOnly: true})
	b.mk(0, "/ss")
	b.create(0, "/ss/eph", nil, open, jute.FlagEphemeral)
	b.children(0, "/ss", true)
	// wrong password: refused, session untouched
	b.connectSpec(1, connectSpec{timeoutMs: 30000, resume: 0, badPasswd: true})
	b.probe(1)
	b.call(0, jute.OpGetEphemerals, &jute.PathRequest{Path: "/ss"})
	// right password: same session, the old connection is closed
	b.connectSpec(2, connectSpec{timeoutMs: 20000, resume: 0})
	b.probe(0)
	b.call(2, jute.OpGetEphemerals, &jute.PathRequest{Path: "/ss"}).ex(excReattachZxid)
	b.create(2, "/ss/k", nil, open, 0) // the old connection's watch is gone with it
	b.probe(2)
	b.call(2, jute.OpWhoAmI, nil)
	// a second resume while the first resumed connection is open
	b.connectSpec(3, connectSpec{timeoutMs: 30000, resume: 2, noReadOnly: true})
	b.probe(2)
	b.get(3, "/ss/eph", false).ex(excReattachZxid)
	b.closeSession(3)
	b.connectSpec(4, connectSpec{timeoutMs: 30000, resume: 3})
	b.probe(4)
	b.connect(5, 30000)
	b.exists(5, "/ss/eph", false)
	// lastZxidSeen ahead of the server: closed without a reply
	b.connectSpec(6, connectSpec{timeoutMs: 30000, resume: -1, zxidAhead: true})
	b.connectSpec(7, connectSpec{timeoutMs: 30000, resume: 5, zxidAhead: true})
	b.exists(5, "/ss/k", false)
	// requests on a session after its closeSession reply are never answered
	b.closeSession(5)
	return b.s
}

// timerScript waits for the server's own removals: an emptied container
// and an expired TTL node, each announced to a watcher.
func timerScript() *script {
	b := newScript("timers")
	b.connect(0, 30000)
	b.connect(1, 30000)
	b.mk(0, "/tm")
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/tm/cont", ACL: open})
	b.call(0, jute.OpCreateContainer, &jute.CreateRequest{Path: "/tm/unused", ACL: open})
	b.create(0, "/tm/cont/k", nil, open, 0)
	b.exists(1, "/tm/cont", true)
	b.children(1, "/tm", true)
	b.del(0, "/tm/cont/k", -1)
	b.waitEvent(1)
	b.waitEvent(1)
	b.exists(1, "/tm/cont", false)
	b.exists(1, "/tm/unused", false)
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/tm/ttl", Data: []byte("t"), ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 1})
	b.call(0, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/tm/ttl-long", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 600000})
	b.exists(1, "/tm/ttl", true)
	b.waitEvent(1)
	b.children2(1, "/tm", false)
	b.closeSession(0)
	b.closeSession(1)
	return b.s
}

// closingScript sends what makes a server drop the connection (and a few
// malformed requests that must not), each on its own connection.
func closingScript() *script {
	b := newScript("closing")
	for i := range 14 {
		b.connect(i, 30000)
	}
	// Unknown opcodes: both answer -6 and close the connection (ZooKeeper
	// closes asynchronously after its reply, so a probe would race).
	b.call(0, 999, nil).thenCloses()
	b.call(1, jute.OpNotification, nil).thenCloses()
	b.auth(3, "nosuchscheme", "x").thenProbe()
	b.raw(4, "getData with a truncated body", 1, map[int32]int32{1001: jute.OpGetData}, func(*side) []byte {
		return append(lengthOnly(10), 0, 0, 0x03, 0xe9, 0, 0, 0, 4, 0, 0)
	}).thenProbe()
	b.raw(5, "frame length jute.maxbuffer+1 (no body)", 0, nil, func(*side) []byte {
		return lengthOnly(jute.DefaultMaxBuffer + 1)
	}).thenProbe()
	b.raw(6, "create2 in a frame of exactly jute.maxbuffer bytes", 1, map[int32]int32{1002: jute.OpCreate2}, func(*side) []byte {
		cr := &jute.CreateRequest{Path: "/big", ACL: open}
		cr.Data = make([]byte, jute.DefaultMaxBuffer-(len(frame(1002, jute.OpCreate2, cr))-4))
		for i := range cr.Data {
			cr.Data[i] = byte(i)
		}
		return frame(1002, jute.OpCreate2, cr)
	}).thenProbe()
	b.get(6, "/big", false)
	b.del(6, "/big", -1)
	b.raw(7, "request header of 4 bytes", 0, nil, func(*side) []byte {
		return append(lengthOnly(4), 0, 0, 0, 1)
	}).thenProbe()
	b.raw(8, "negative frame length", 0, nil, func(*side) []byte { return lengthOnly(0xfffffff0) }).thenProbe()
	b.raw(9, "auth packet with a 2-byte body", 1, map[int32]int32{jute.XidAuth: jute.OpAuth}, func(*side) []byte {
		return append(lengthOnly(10), 0xff, 0xff, 0xff, 0xfc, 0, 0, 0, 100, 0, 0)
	}).thenProbe()
	b.raw(10, "multi with an op of type 9", 1, map[int32]int32{1003: jute.OpMulti}, func(*side) []byte {
		e := jute.NewEncoder(nil)
		st := e.StartFrame()
		e.WriteRecord(&jute.RequestHeader{Xid: 1003, Type: jute.OpMulti})
		e.WriteRecord(&jute.MultiHeader{Type: 9, Err: -1})
		e.WriteRecord(&jute.PathRequest{Path: "/"})
		e.WriteRecord(&jute.MultiHeader{Type: -1, Done: true, Err: -1})
		e.EndFrame(st)
		return e.Bytes()
	}).thenProbe().ex(excEarlyReject)
	b.raw(11, "setData with a string length beyond the frame", 1, map[int32]int32{1004: jute.OpSetData}, func(*side) []byte {
		return append(lengthOnly(12), 0, 0, 0x03, 0xec, 0, 0, 0, 5, 0x7f, 0xff, 0xff, 0xff)
	}).thenProbe().ex(excEarlyReject)
	b.call(12, jute.OpDeleteContainer, &jute.PathRequest{Path: "/nope"}).thenProbe().ex(excEarlyReject)
	// A lone check (13) is deliberately not sent: see exception excLoneCheck.
	b.exists(13, "/big", false)
	// createSession (-10) from a client (exception excClientCreateSession)
	// comes last, right before a write: ZooKeeper's -5 reply carries a zxid
	// it spent, which zkraft does not, and only a write's reply shows both
	// sides at a new zxid again.
	b.call(2, jute.OpCreateSession, nil).thenProbe().ex(excClientCreateSession)
	b.closeSession(13)
	return b.s
}
