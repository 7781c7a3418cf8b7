package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// fuzzMaxBuffer is the fuzz server's jute.maxbuffer: small, so frames above
// it are cheap to send.
const fuzzMaxBuffer = 16 << 10

// fuzzSuper is the digest the control connection authenticates with; the
// server's superDigest, so cleanup passes every ACL.
const fuzzSuper = "super:fuzz"

// fuzzReplyTimeout bounds the wait for one reply (or the close) on a
// well-framed connection, and for the server to release connections.
const fuzzReplyTimeout = 4 * time.Second

// fuzzServer is the in-process server of one fuzz process, shared by every
// iteration, with its control connection.
type fuzzServer struct {
	srv     *Server
	control *zktest.RawConn
	iter    int
}

// startFuzzServer starts a standalone server with data on tmpfs when there
// is one, a short container check and a low snapshot count (so both run
// during fuzzing), TTL nodes enabled and a super digest; and the control
// connection, authenticated as super. f's cleanup stops both.
func startFuzzServer(f *testing.F) *fuzzServer {
	dir, err := os.MkdirTemp("/dev/shm", "zkraft-fuzz-")
	if err != nil {
		dir = f.TempDir()
	} else {
		f.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	cfg := Default()
	cfg.ClientPort = 0
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.DataDir = dir
	cfg.FourLetterWords = map[string]bool{"srvr": true, "ruok": true}
	cfg.AdminEnabled = false
	cfg.JuteMaxBuffer = fuzzMaxBuffer
	cfg.ExtendedTypes = true
	cfg.ContainerCheckInterval = 50 * time.Millisecond
	cfg.SnapshotEvery = 300
	cfg.SuperDigest = znode.DigestID(fuzzSuper)
	cfg.MinSessionTimeoutMs = 1000
	cfg.MaxSessionTimeoutMs = 30000
	// Logs are off: bad input is logged at warn level on every iteration.
	s := New(cfg, zerolog.Nop())
	if err := s.Start(); err != nil {
		f.Fatalf("start: %v", err)
	}
	f.Cleanup(func() {
		if err := s.Stop(); err != nil {
			f.Errorf("stop: %v", err)
		}
	})
	control, resp, err := zktest.DialRawRequest(s.Addr().String(), jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if err != nil || resp.SessionID == 0 {
		f.Fatalf("control connection: %v (session %#x)", err, resp.SessionID)
	}
	f.Cleanup(control.Close)
	control.SetTimeout(fuzzReplyTimeout)
	if err := control.Send(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte(fuzzSuper)}); err != nil {
		f.Fatal(err)
	}
	if hdr, err := control.ReadReply(jute.XidAuth, nil); err != nil || hdr.Err != 0 {
		f.Fatalf("control auth: %v (err %d)", err, hdr.Err)
	}
	fs := &fuzzServer{srv: s, control: control}
	fs.reset()
	return fs
}

// controlCheck fails t unless the control connection still answers.
func (fs *fuzzServer) controlCheck(t *testing.T, when string) {
	t.Helper()
	hdr, err := fs.control.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/zookeeper"}, &jute.StatResponse{})
	if err != nil || hdr.Err != 0 {
		t.Fatalf("%s: control connection not served: %v (err %d)", when, err, hdr.Err)
	}
	if err := fs.control.Ping(); err != nil {
		t.Fatalf("%s: control connection ping: %v", when, err)
	}
}

// reset removes everything the fuzz requests may have made (the /f subtree,
// quotas) and restores the root's ACL, as super, so iterations start alike.
// It is best effort: writes of the last iteration may still be applying.
func (fs *fuzzServer) reset() {
	c := fs.control
	var remove func(p string)
	remove = func(p string) {
		var kids jute.GetChildrenResponse
		if hdr, err := c.Call(jute.OpGetChildren, &jute.PathWatchRequest{Path: p}, &kids); err != nil || hdr.Err != 0 {
			return
		}
		for _, k := range kids.Children {
			remove(p + "/" + k)
		}
		_, _ = c.Call(jute.OpDelete, &jute.DeleteRequest{Path: p, Version: -1}, nil)
	}
	remove("/f")
	var kids jute.GetChildrenResponse
	if hdr, err := c.Call(jute.OpGetChildren, &jute.PathWatchRequest{Path: "/zookeeper/quota"}, &kids); err == nil && hdr.Err == 0 {
		for _, k := range kids.Children {
			remove("/zookeeper/quota/" + k)
		}
	}
	_, _ = c.Call(jute.OpSetACL, &jute.SetACLRequest{Path: "/", ACL: fuzzACLs[0], Version: -1}, &jute.StatResponse{})
	_, _ = c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/f", ACL: fuzzACLs[0]}, &jute.CreateResponse{})
}

// fuzzConn is one client connection of an iteration. A reader goroutine
// reads every frame the server sends until the connection ends and checks,
// while the connection is well framed (every frame sent so far had the
// length it announced): replies come in request order, and reply zxids
// (other than notifications' -1 and the 0 or -1 of auth and refusals) never
// go backwards.
type fuzzConn struct {
	nc        net.Conn
	sessionID int64
	passwd    []byte
	framed    bool // the handshake succeeded: the server sends frames

	mu       sync.Mutex
	sent     []int32 // xids of the requests sent (well framed only)
	desynced bool    // a frame announced another length than it had
	answered map[int32]bool
	next     int             // index in sent of the next reply expected (at most)
	lastZxid int64           // largest reply zxid read
	lastXid  int32           // the xid of the reply that carried lastZxid
	ops      map[int32]int32 // opcode of each xid sent, for failure messages
	ended    bool            // the server closed the connection (or we did)
	failure  error           // a broken property, found by the reader
	done     chan struct{}
}

// dialFuzz connects and, if hs is not nil, performs the handshake with it.
// It returns nil when the server refused (closed the connection): that is
// allowed for any handshake.
func dialFuzz(t *testing.T, addr string, hs *jute.ConnectRequest, raw []byte) *fuzzConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &fuzzConn{nc: nc, answered: map[int32]bool{}, ops: map[int32]int32{}, done: make(chan struct{})}
	br := bufio.NewReader(nc)
	if hs == nil {
		// Raw bytes instead of a handshake: whatever comes back is drained.
		c.desynced = true
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = nc.Write(raw)
		go func() {
			defer close(c.done)
			_ = nc.SetReadDeadline(time.Now().Add(fuzzReplyTimeout))
			_, _ = io.Copy(io.Discard, br)
		}()
		return c
	}
	_ = nc.SetDeadline(time.Now().Add(fuzzReplyTimeout))
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	e.WriteRecord(hs)
	e.EndFrame(start)
	var resp jute.ConnectResponse
	if _, err := nc.Write(e.Bytes()); err == nil {
		if body, err := jute.ReadFrame(br, nil, 1<<20); err == nil && jute.Unmarshal(body, &resp) == nil {
			c.framed = resp.SessionID != 0
		} else if zktest.IsTimeout(err) {
			t.Fatalf("no answer to a handshake within %v", fuzzReplyTimeout)
		}
	}
	_ = nc.SetDeadline(time.Time{})
	if !c.framed {
		nc.Close()
		close(c.done)
		return nil
	}
	c.sessionID, c.passwd = resp.SessionID, resp.Passwd
	go c.readLoop(br)
	return c
}

func (c *fuzzConn) readLoop(br *bufio.Reader) {
	defer close(c.done)
	var buf []byte
	for {
		frame, err := jute.ReadFrame(br, buf, 1<<20)
		if err != nil {
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
			return
		}
		buf = frame[:0]
		var hdr jute.ReplyHeader
		if jute.Unmarshal(frame[:min(len(frame), 16)], &hdr) != nil {
			c.fail(fmt.Errorf("reply frame of %d bytes has no header", len(frame)))
			continue
		}
		c.mu.Lock()
		if hdr.Xid != jute.XidNotification && hdr.Zxid > 0 {
			if hdr.Zxid < c.lastZxid && !c.desynced {
				c.failLocked(fmt.Errorf("reply xid %d (op %d, err %d) has zxid %#x after zxid %#x of xid %d (op %d)",
					hdr.Xid, c.ops[hdr.Xid], hdr.Err, hdr.Zxid, c.lastZxid, c.lastXid, c.ops[c.lastXid]))
			}
			if hdr.Zxid > c.lastZxid {
				c.lastZxid, c.lastXid = hdr.Zxid, hdr.Xid
			}
		}
		if hdr.Xid != jute.XidNotification && hdr.Xid != jute.XidPing {
			c.answered[hdr.Xid] = true
			if !c.desynced {
				i := c.next
				for i < len(c.sent) && c.sent[i] != hdr.Xid {
					i++
				}
				if i == len(c.sent) {
					c.failLocked(fmt.Errorf("reply xid %d out of request order (sent %v, next %d)", hdr.Xid, c.sent, c.next))
				} else {
					c.next = i + 1
				}
			}
		}
		c.mu.Unlock()
	}
}

func (c *fuzzConn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

func (c *fuzzConn) failLocked(err error) {
	if c.failure == nil {
		c.failure = err
	}
}

// send writes one frame. xid is recorded for the order check when the
// frame is well formed (announces its own length and holds a header).
func (c *fuzzConn) send(frame []byte, xid int32, wellFramed bool) {
	c.mu.Lock()
	if !wellFramed {
		c.desynced = true
	} else if len(frame) >= 12 && xid != jute.XidPing && xid != jute.XidNotification {
		c.sent = append(c.sent, xid)
	}
	if len(frame) >= 12 {
		c.ops[xid] = int32(binary.BigEndian.Uint32(frame[8:12]))
	}
	c.mu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.nc.Write(frame)
}

// barrier sends exists with xid and waits for its reply or the end of the
// connection. On a well-framed connection one of them must come.
func (c *fuzzConn) barrier(t *testing.T, xid int32) {
	c.mu.Lock()
	skip := c.desynced || c.ended
	c.mu.Unlock()
	if skip {
		return
	}
	c.send(requestFrame(xid, jute.OpExists, &jute.PathWatchRequest{Path: "/f"}), xid, true)
	deadline := time.Now().Add(fuzzReplyTimeout)
	for {
		c.mu.Lock()
		ok := c.answered[xid] || c.ended
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %#x: no reply to xid %d and the connection is still open after %v", c.sessionID, xid, fuzzReplyTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func requestFrame(xid, op int32, rec jute.Record) []byte {
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	e.WriteRecord(&jute.RequestHeader{Xid: xid, Type: op})
	if rec != nil {
		e.WriteRecord(rec)
	}
	e.EndFrame(start)
	return e.Bytes()
}

// fuzzReadOps are the read-side and session requests the fuzzer sends.
func (in *fuzzInput) request() (int32, jute.Record) {
	switch in.pick(24) {
	case 0:
		return jute.OpExists, &jute.PathWatchRequest{Path: in.path(), Watch: in.pick(2) == 0}
	case 1:
		return jute.OpGetData, &jute.PathWatchRequest{Path: in.path(), Watch: in.pick(2) == 0}
	case 2:
		return jute.OpGetChildren, &jute.PathWatchRequest{Path: in.path(), Watch: in.pick(2) == 0}
	case 3:
		return jute.OpGetChildren2, &jute.PathWatchRequest{Path: in.path(), Watch: in.pick(2) == 0}
	case 4:
		return jute.OpGetACL, &jute.PathRequest{Path: in.path()}
	case 5:
		return jute.OpSync, &jute.PathRequest{Path: in.path()}
	case 6:
		return jute.OpGetEphemerals, &jute.PathRequest{Path: in.path()}
	case 7:
		return jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: in.path()}
	case 8:
		return jute.OpAddWatch, &jute.AddWatchRequest{Path: in.path(), Mode: int32(in.pick(3))}
	case 9:
		return jute.OpSetWatches, &jute.SetWatches{RelativeZxid: int64(in.pick(64)),
			DataWatches: []string{in.path()}, ExistWatches: []string{in.path()}, ChildWatches: []string{in.path()}}
	case 10:
		return jute.OpSetWatches2, &jute.SetWatches2{RelativeZxid: int64(in.pick(64)), DataWatches: []string{in.path()},
			PersistentWatches: []string{in.path()}, PersistentRecursiveWatches: []string{in.path()}}
	case 11:
		return jute.OpCheckWatches, &jute.WatchesRequest{Path: in.path(), Type: int32(in.pick(5))}
	case 12:
		return jute.OpRemoveWatches, &jute.WatchesRequest{Path: in.path(), Type: int32(in.pick(5))}
	case 13:
		m := &jute.MultiRequest{}
		for range in.pick(4) {
			typ := jute.OpGetData
			if in.pick(2) == 0 {
				typ = jute.OpGetChildren
			}
			m.Ops = append(m.Ops, jute.MultiOp{Type: typ, Read: &jute.PathWatchRequest{Path: in.path()}})
		}
		return jute.OpMultiRead, m
	case 14:
		return jute.OpWhoAmI, nil
	case 15:
		auth := [][]byte{[]byte("u:x"), []byte(fuzzSuper), []byte("nocolon")}
		scheme := []string{"digest", "digest", "ip", "bogus"}[in.pick(4)]
		return jute.OpAuth, &jute.AuthPacket{Scheme: scheme, Auth: auth[in.pick(len(auth))]}
	case 16:
		return jute.OpSASL, &jute.BufferRecord{Token: in.bytes(in.pick(8))}
	case 17:
		return jute.OpReconfig, &jute.ReconfigRequest{JoiningServers: "server.9=127.0.0.1:1:2;3", CurConfigID: -1}
	case 18:
		return jute.OpCheck, &jute.CheckVersionRequest{Path: in.path(), Version: in.version()}
	case 19:
		return jute.OpDeleteContainer, &jute.PathRequest{Path: in.path()}
	default:
		return in.write()
	}
}

// rawFrame returns a malformed or unusual frame and whether it announces
// its own length.
func (in *fuzzInput) rawFrame(xid int32) ([]byte, bool) {
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	hdr := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: int32(in.u32())})
	switch in.pick(8) {
	case 0: // arbitrary opcode and body
		return frame(append(hdr, in.bytes(in.pick(32))...)), true
	case 1: // a known request with a damaged body
		op, rec := in.request()
		body := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
		if rec != nil {
			body = append(body, in.mangle(jute.Marshal(rec))...)
		}
		return frame(body), true
	case 2: // header shorter than 8 bytes
		return frame(in.bytes(in.pick(8))), true
	case 3: // above jute.maxbuffer, or negative
		n := []uint32{fuzzMaxBuffer + 1, 0x7fffffff, 0xffffffff, 0x80000000}[in.pick(4)]
		return binary.BigEndian.AppendUint32(nil, n), false
	case 4: // exactly jute.maxbuffer
		op, rec := in.write()
		body := append(jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op}), jute.Marshal(rec)...)
		if len(body) < fuzzMaxBuffer {
			body = append(body, make([]byte, fuzzMaxBuffer-len(body))...)
		}
		return frame(body[:fuzzMaxBuffer]), true
	case 5: // a length that does not match the bytes
		body := append(hdr, in.bytes(in.pick(16))...)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body)+in.pick(8)-4)), body...), false
	case 6: // a vector or buffer length of 2^31-1 inside a create
		body := append(jute.Marshal(&jute.RequestHeader{Xid: xid, Type: jute.OpCreate}), 0, 0, 0, 2, '/', 'f', 0x7f, 0xff, 0xff, 0xff)
		return frame(body), true
	default: // a reserved opcode from a client
		op := []int32{jute.OpNotification, jute.OpCreateSession, jute.OpError, jute.OpPing, jute.OpCloseSession}[in.pick(5)]
		return frame(jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})), true
	}
}

// rawConnect returns bytes sent instead of a handshake.
func (in *fuzzInput) rawConnect() []byte {
	switch in.pick(5) {
	case 0:
		return []byte([]string{"ruok", "srvr", "stat", "kill", "mntr"}[in.pick(5)])
	case 1:
		return binary.BigEndian.AppendUint32(nil, in.u32())
	case 2:
		body := in.bytes(in.pick(48))
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	case 3:
		req := jute.Marshal(&jute.ConnectRequest{TimeOut: 2000, Passwd: make([]byte, 16)})
		body := in.mangle(req)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	default:
		return in.bytes(in.pick(16))
	}
}

// maxFuzzConns bounds the connections of one iteration.
const maxFuzzConns = 4

// runSequence plays one fuzz input against the server and checks the
// properties of FuzzRequestSequence.
func (fs *fuzzServer) runSequence(t *testing.T, data []byte) {
	fs.iter++
	addr := fs.srv.Addr().String()
	in := &fuzzInput{b: data}
	var conns []*fuzzConn // every connection opened, for the final checks
	var live []*fuzzConn  // those requests go to
	xid := int32(0)
	nextXid := func() int32 { xid++; return xid }
	conn := func() *fuzzConn {
		if len(live) == 0 {
			return nil
		}
		return live[in.pick(len(live))]
	}
	open := func() {
		if len(conns) >= maxFuzzConns {
			return
		}
		var c *fuzzConn
		switch in.pick(8) {
		case 0:
			c = dialFuzz(t, addr, nil, in.rawConnect())
		case 1, 2:
			// Reattach a session of this iteration, with its password or not.
			var old *fuzzConn
			for _, o := range conns {
				if o.sessionID != 0 {
					old = o
				}
			}
			if old != nil {
				pw := old.passwd
				old.mu.Lock()
				seen := old.lastZxid
				old.mu.Unlock()
				if in.pick(3) == 0 {
					pw = make([]byte, 16)
				}
				c = dialFuzz(t, addr, &jute.ConnectRequest{TimeOut: 2000, SessionID: old.sessionID, Passwd: pw,
					LastZxidSeen: seen}, nil)
				break
			}
			fallthrough
		default:
			req := &jute.ConnectRequest{TimeOut: int32(1000 + in.pick(4)*1000), Passwd: make([]byte, 16), HasReadOnly: in.pick(2) == 0}
			if in.pick(16) == 0 {
				req.LastZxidSeen = 1 << 40 // newer than the server: refused
			}
			c = dialFuzz(t, addr, req, nil)
		}
		if c == nil {
			return
		}
		conns = append(conns, c)
		if c.framed {
			live = append(live, c)
		}
	}
	open()
	for steps := 0; !in.done() && steps < 64; steps++ {
		switch op := in.pick(16); {
		case op == 0:
			open()
		case op <= 9:
			if c := conn(); c != nil {
				x := nextXid()
				code, rec := in.request()
				c.send(requestFrame(x, code, rec), x, true)
			}
		case op <= 11:
			if c := conn(); c != nil {
				x := nextXid()
				frame, ok := in.rawFrame(x)
				c.send(frame, x, ok)
			}
		case op == 12:
			if c := conn(); c != nil {
				c.send(requestFrame(jute.XidPing, jute.OpPing, nil), jute.XidPing, true)
			}
		case op == 13:
			if c := conn(); c != nil {
				c.barrier(t, nextXid())
			}
		case op == 14:
			if c := conn(); c != nil {
				if in.pick(2) == 0 {
					x := nextXid()
					c.send(requestFrame(x, jute.OpCloseSession, nil), x, true)
				} else {
					c.nc.Close()
				}
			}
		default:
			fs.controlCheck(t, "during the sequence")
		}
	}
	// Collect the answers still owed, then close every connection.
	for _, c := range live {
		c.barrier(t, nextXid())
	}
	for i, c := range conns {
		c.nc.Close()
		<-c.done
		if c.failure != nil {
			t.Fatalf("session %#x: %v", c.sessionID, c.failure)
		}
		t.Logf("connection %d: session %#x, %d requests sent, %d answered, desynced %v, last zxid %#x",
			i, c.sessionID, len(c.sent), len(c.answered), c.desynced, c.lastZxid)
	}
	fs.controlCheck(t, "after the sequence")
	fs.waitConns(t)
	if err := checkState(fs.srv.sm); err != nil {
		t.Fatalf("state after the sequence: %v", err)
	}
	fs.reset()
}

// waitConns waits until the server released every connection but the
// control one (no connection of an iteration outlives it) and no request is
// outstanding (globalOutstandingLimit's count).
func (fs *fuzzServer) waitConns(t *testing.T) {
	deadline := time.Now().Add(fuzzReplyTimeout)
	for {
		fs.srv.connMu.Lock()
		n := len(fs.srv.conns)
		fs.srv.connMu.Unlock()
		out := fs.srv.stats.outstanding.Load()
		if n == 1 && out == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still registered and %d requests outstanding %v after every client closed", n-1, out, fuzzReplyTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// FuzzRequestSequence plays request sequences decoded from the input (see
// runSequence) against one in-process standalone server per fuzz process:
// valid requests built from jute records mixed with malformed frames (bad
// lengths, unknown and reserved opcodes, damaged bodies, bad paths, frames
// at and above jute.maxbuffer, garbage handshakes and four-letter words),
// on up to four connections, with reattaches, closeSession and abrupt
// closes. After every input:
//   - the server did not crash (a panic in any of its goroutines ends the
//     fuzz process and the fuzzer reports the input);
//   - the control connection, opened once, still answers exists and ping:
//     bad input closed at most its own connection;
//   - on every well-framed connection, replies came in request order, their
//     zxids never went backwards, and every request was answered or the
//     connection closed within fuzzReplyTimeout;
//   - the server released every connection of the iteration, and no
//     request is left outstanding (globalOutstandingLimit's count);
//   - znode.Check holds and every ephemeral's owner is a live session.
//
// The tree is reset between inputs (reset), but sessions of earlier inputs
// may still be expiring: a failure found by the fuzzer is replayed with
// `go test -run 'FuzzRequestSequence/<id>' ./server/`, which starts a
// fresh server.
func FuzzRequestSequence(f *testing.F) {
	for _, seed := range requestSeeds() {
		f.Add(seed)
	}
	fs := startFuzzServer(f)
	f.Fuzz(fs.runSequence)
}

// requestSeeds are meaningful sequences in runSequence's format: the first
// byte opens the first connection (>= 3: a new session); then each step is
// a step byte (1-9 valid request, 10-11 raw frame, 12 ping, 13 barrier,
// 14 close, 15 control check, 0 open) followed by its choices.
func requestSeeds() [][]byte {
	const (
		stepReq     = 1
		stepRaw     = 10
		stepPing    = 12
		stepBarrier = 13
		stepClose   = 14
		stepControl = 15
		stepOpen    = 16 // picks 0 (open) modulo 16
	)
	// A request: step, connection, request choice (20+: a write), fields.
	create := func(path, flags byte) []byte { return []byte{stepReq, 0, 20, 0, path, 3, 0, 0, flags + 1} }
	setData := func(path byte) []byte { return []byte{stepReq, 0, 20, 5, path, 4, 3, 'x', 'y', 'z', 0} }
	read := func(op, path, watch byte) []byte { return []byte{stepReq, 0, op, path, watch} }
	readPath := func(op, path byte) []byte { return []byte{stepReq, 0, op, path} }
	// multi: create /f/a, setData /f/a, check /f/a.
	multi := []byte{stepReq, 0, 20, 7, 3, 0, 2, 0, 0, 1, 3, 2, 0, 0, 4, 2, 0}
	addWatch := []byte{stepReq, 0, 8, 1, 1}
	setWatches := []byte{stepReq, 0, 9, 0, 2, 3, 1}
	multiRead := []byte{stepReq, 0, 13, 2, 0, 2, 1, 1}
	auth := []byte{stepReq, 0, 15, 0, 0}
	whoAmI := []byte{stepReq, 0, 14}
	closeSession := []byte{stepClose, 0, 0}
	newSession := []byte{stepOpen, 3, 0, 1}
	cat := func(parts ...[]byte) []byte {
		out := []byte{3, 0, 0, 1} // the first connection: a new session
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return [][]byte{
		cat(),
		cat(create(1, 0), create(2, 1), read(1, 2, 0), setData(2), read(2, 1, 0), []byte{stepBarrier, 0}),
		cat(addWatch, create(2, 0), setData(2), readPath(5, 1), read(3, 1, 0), multi, []byte{stepBarrier, 0}, closeSession),
		cat(create(1, 2), create(1, 3), readPath(6, 1), readPath(7, 0), []byte{stepPing, 0}, []byte{stepControl}),
		cat(create(1, 0), newSession, create(2, 1), []byte{stepRaw, 1, 0, 0, 0, 77, 0, 2, 1, 2}, setData(1)),
		cat([]byte{stepRaw, 0, 0xff, 0xff, 0xff, 0xff, 3, 0}, create(1, 0)),
		cat(create(2, 1), []byte{stepOpen, 1, 1}, create(3, 1), []byte{stepOpen, 1, 0}, []byte{stepOpen, 0, 0, 0}),
		cat(create(1, 4), create(2, 0), setWatches, multiRead, auth, whoAmI, []byte{stepBarrier, 0}),
		cat([]byte{stepRaw, 0, 0, 0, 0, 1, 6}, []byte{stepRaw, 0, 0, 0, 0, 1, 5, 2, 1, 2, 3}, create(1, 0)),
		cat(create(2, 1), []byte{stepClose, 0, 1}, newSession, read(1, 2, 0), []byte{stepControl}),
	}
}
