package sim

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/internal/check"
	"github.com/zkraft/zkraft/jute"
)

const (
	registerPath = "/r"
	lockPath     = "/lock"
)

// call is a client request waiting for its answer.
type call struct {
	xid     uint64
	op      int32  // the opcode of its request frame (0: connect or attach)
	path    string // the node it is about
	watch   bool   // a read that sets a watch
	data    string // the data a setData writes
	onReply func(response)
	onLost  func() // connection lost or timed out before an answer
}

// part is one request of a pipeline: its opcode, its body, the node it is
// about, and what to do with its answer (nil: nothing) or if it is lost.
type part struct {
	op      int32
	body    []byte
	path    string
	watch   bool   // a read that sets a watch
	data    string // the data a setData writes
	tracked bool   // a write on a container or TTL node the checkers follow
	onReply func(response)
	onLost  func()
}

type lockState int

const (
	lockIdle     lockState = iota
	lockCreating           // create of its node in flight
	lockFinding            // does its node exist? (after an unknown create or a reconnect)
	lockChecking           // waiting for its node to be first
	lockHolding            // in the critical section
)

// client is one ZooKeeper client: one request or one pipeline of requests
// at a time (sent without waiting for each other's answers) plus pings, a
// session it reattaches to other members when its connection is lost, a
// register workload (recorded for the linearizability check) and a
// Curator-style lock (ephemeral-sequential node, lowest holds).
type client struct {
	w          *world
	idx        int
	member     int
	connID     uint64
	connected  bool
	passwd     []byte // its session's password, from the ConnectResponse
	epoch      int    // grows at every disconnect: stale timers do nothing
	paused     bool
	sess       int64
	sessGen    int
	xid        uint64
	inflight   []*call       // sent, not answered, in xid order
	order      fifoConn      // the FIFO checker's view of the connection
	lastHeard  time.Duration // last answer on the current session
	lastOK     time.Duration // last successful operation
	resumedAt  time.Duration // when a pause last ended (0: never paused)
	lastZxid   int64         // highest zxid seen on the current session
	lastVer    int32         // version of /r last seen
	dead       bool          // stopped for good
	lastSent   time.Duration // last request or ping sent (it may touch the session)
	lastQuorum time.Duration // last answer from a member in touch with the leader
	upAt       time.Duration // delivery time of the last message to the member
	downAt     time.Duration // and from it
	writes     int
	lock       lockState
	lockNode   string
	nodes      []ownNode // its containers and TTL nodes, as far as it knows
	nodeCount  int
}

func newClient(w *world, idx int) *client { return &client{w: w, idx: idx, member: -1} }

// connect sends a connect or attach request.
func (c *client) connect(kind reqKind, onReply func(response)) {
	// A ZooKeeper ConnectRequest: a new session asks with id 0 and a zero
	// password, a reattach with its id and password; both carry the last
	// zxid the client saw (a member behind it refuses).
	req := jute.ConnectRequest{LastZxidSeen: c.lastZxid, TimeOut: int32(sessionTimeout / time.Millisecond),
		Passwd: make([]byte, 16)}
	if kind == reqAttach {
		req.SessionID, req.Passwd = c.sess, c.passwd
	}
	frame := jute.Marshal(&req)
	c.xid++
	cl := &call{xid: c.xid, onReply: onReply}
	r := &request{kind: kind, xid: c.xid, connID: c.connID, session: c.sess,
		frames: [][]byte{append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)}}
	c.inflight = []*call{cl}
	c.post(r)
	c.timeout(cl)
}

// send sends the requests of parts as ZooKeeper request frames, pipelined
// as a ZooKeeper client does: all at once, each answered in its turn.
func (c *client) send(parts ...part) {
	r := &request{kind: reqFrames, connID: c.connID, session: c.sess}
	var last *call
	for _, p := range parts {
		c.xid++
		last = &call{xid: c.xid, op: p.op, path: p.path, watch: p.watch, data: p.data, onReply: p.onReply, onLost: p.onLost}
		c.inflight = append(c.inflight, last)
		r.frames = append(r.frames, requestFrame(int32(c.xid), p.op, p.body))
		path := ""
		if p.tracked {
			path = p.path
		}
		r.paths = append(r.paths, path)
	}
	c.post(r)
	c.timeout(last)
}

// timeout disconnects if cl is still unanswered after requestTimeout.
func (c *client) timeout(cl *call) {
	epoch := c.epoch
	c.w.after(requestTimeout, func() {
		if c.epoch == epoch && slices.Contains(c.inflight, cl) {
			c.disconnect("request timeout")
		}
	})
}

// syncPart is a sync of path.
func syncPart(path string) part {
	return part{op: jute.OpSync, body: jute.Marshal(&jute.PathRequest{Path: path}), path: path}
}

// readPart is a getData (or getChildren, exists) of path.
func readPart(op int32, path string, watch bool, onReply func(response)) part {
	return part{op: op, body: jute.Marshal(&jute.PathWatchRequest{Path: path, Watch: watch}), path: path,
		watch: watch, onReply: onReply}
}

// tracked marks a write on a container or TTL node, which the checkers
// follow.
func tracked(p part) part {
	p.tracked = true
	return p
}

// writePart is a write of op with body on path.
func writePart(op int32, path string, body jute.Record, onReply func(response), onLost func()) part {
	return part{op: op, body: jute.Marshal(body), path: path, onReply: onReply, onLost: onLost}
}

func (c *client) post(r *request) {
	c.lastSent = c.w.now
	m := c.w.members[c.member]
	c.w.after(c.fifo(&c.upAt), func() {
		m.deliver(func() { m.handle(c, r) }, nil)
	})
}

// requestFrame encodes a ZooKeeper request frame: length prefix, request
// header, body.
func requestFrame(xid, op int32, body []byte) []byte {
	hdr := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(body)))
	return append(append(frame, hdr...), body...)
}

// fifo returns the delay of the next message on a client link, which keeps
// its order (a TCP connection): never before the previous one.
func (c *client) fifo(last *time.Duration) time.Duration {
	at := max(c.w.now+c.w.between(200*time.Microsecond, 3*time.Millisecond), *last)
	*last = at
	return at - c.w.now
}

func (c *client) receive(resp response) {
	if c.paused || resp.connID != c.connID {
		return
	}
	if resp.withQuorum {
		c.lastQuorum = c.w.now
	}
	if !resp.connect {
		c.receiveFrames(resp.wire)
		return
	}
	if len(c.inflight) == 0 || c.inflight[0].xid != resp.xid {
		return
	}
	cl := c.inflight[0]
	// A ConnectResponse: timeout 0 is ZooKeeper's answer to a session
	// that is gone.
	var cr jute.ConnectResponse
	if len(resp.wire) < 4 || int(binary.BigEndian.Uint32(resp.wire)) != len(resp.wire)-4 ||
		jute.Unmarshal(resp.wire[4:], &cr) != nil {
		c.w.fail("frame", "client %d: bad connect response", c.idx)
		return
	}
	switch {
	case cr.TimeOut <= 0:
		resp.err = jute.ErrSessionExpired
	case cr.SessionID != c.sess || len(cr.Passwd) != 16:
		c.w.fail("frame", "client %d: connect answered with session %#x (password %d bytes), want %#x",
			c.idx, cr.SessionID, len(cr.Passwd), c.sess)
		return
	default:
		c.passwd = cr.Passwd
	}
	c.inflight = c.inflight[1:]
	c.lastHeard = c.w.now
	cl.onReply(resp)
}

// receiveFrames decodes the reply frames of a member's server.Endpoint:
// notifications, ping replies and the replies to the calls in flight, which
// must come in the order they were sent (the FIFO checker).
func (c *client) receiveFrames(wire []byte) {
	for len(wire) > 0 {
		if len(wire) < 4 {
			c.w.fail("frame", "client %d: truncated frame", c.idx)
			return
		}
		n := int(binary.BigEndian.Uint32(wire))
		if n < 16 || len(wire) < 4+n {
			c.w.fail("frame", "client %d: bad frame length %d", c.idx, n)
			return
		}
		frame := wire[4 : 4+n]
		wire = wire[4+n:]
		d := jute.NewDecoder(frame, len(frame))
		var hdr jute.ReplyHeader
		if d.ReadRecord(&hdr) != nil {
			c.w.fail("frame", "client %d: bad reply header", c.idx)
			return
		}
		switch hdr.Xid {
		case jute.XidPing:
			c.lastHeard = c.w.now
			c.w.chk.fifoZxid(c, hdr.Xid, hdr.Zxid)
			c.checkZxid(hdr.Zxid)
			continue
		case jute.XidNotification:
			var ev jute.WatcherEvent
			if d.ReadRecord(&ev) != nil {
				c.w.fail("frame", "client %d: bad notification", c.idx)
				return
			}
			c.order.event(ev.Path)
			continue
		}
		if len(c.inflight) == 0 {
			c.w.fail(chkFifo, "client %d connection %d: reply to xid %d with no request in flight", c.idx, c.connID, hdr.Xid)
			return
		}
		cl := c.inflight[0]
		if hdr.Xid != int32(cl.xid) {
			c.w.fail(chkFifo, "client %d connection %d: reply to xid %d while xid %d, sent before it, is unanswered",
				c.idx, c.connID, hdr.Xid, cl.xid)
			return
		}
		c.inflight = c.inflight[1:]
		resp := response{err: hdr.Err, zxid: hdr.Zxid}
		if hdr.Err == 0 && !c.decodeReply(cl.op, d, &resp) {
			c.w.fail("frame", "client %d: reply to opcode %d does not decode", c.idx, cl.op)
			return
		}
		c.lastHeard = c.w.now
		c.w.chk.fifoZxid(c, hdr.Xid, hdr.Zxid)
		if resp.err == 0 {
			c.checkZxid(resp.zxid)
		}
		c.w.chk.fifoReply(c, cl, &resp)
		if cl.onReply != nil {
			cl.onReply(resp)
		}
	}
}

// decodeReply decodes the body of a successful reply to op into resp.
func (c *client) decodeReply(op int32, d *jute.Decoder, resp *response) bool {
	switch op {
	case jute.OpSetData, jute.OpSetACL, jute.OpExists:
		var r jute.StatResponse
		ok := d.ReadRecord(&r) == nil
		resp.stat = r.Stat
		return ok
	case jute.OpCreate:
		var r jute.CreateResponse
		ok := d.ReadRecord(&r) == nil
		resp.path = r.Path
		return ok
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		var r jute.Create2Response
		ok := d.ReadRecord(&r) == nil
		resp.path, resp.stat = r.Path, r.Stat
		return ok
	case jute.OpMulti:
		var r jute.MultiResponse
		ok := d.ReadRecord(&r) == nil
		for _, mr := range r.Results {
			if mr.Err != 0 {
				resp.err = mr.Err
				break
			}
		}
		return ok
	case jute.OpGetData:
		var r jute.GetDataResponse
		ok := d.ReadRecord(&r) == nil
		resp.data, resp.stat = r.Data, r.Stat
		return ok
	case jute.OpGetChildren:
		var r jute.GetChildrenResponse
		ok := d.ReadRecord(&r) == nil
		resp.children = r.Children
		return ok
	}
	return true // delete: no body
}

func (c *client) checkZxid(z int64) {
	if z == 0 {
		return
	}
	if z < c.lastZxid {
		c.w.fail("zxid", "client %d session %#x saw zxid %#x after %#x", c.idx, c.sess, z, c.lastZxid)
	}
	c.lastZxid = max(c.lastZxid, z)
}

// connLost: the member closed the connection (or crashed).
func (c *client) connLost(connID uint64) {
	if connID == c.connID && !c.paused {
		c.disconnect("connection closed")
	}
}

func (c *client) disconnect(reason string) {
	c.w.tracef("client %d disconnected from member %d: %s", c.idx, c.member+1, reason)
	c.epoch++
	c.connected = false
	c.connID = 0
	if c.lock == lockHolding {
		c.w.chk.exit(c)
	}
	if c.lock != lockIdle {
		c.lock = lockFinding
	}
	calls := c.inflight
	c.inflight = nil
	c.order = fifoConn{}
	for _, cl := range calls {
		if cl.onLost != nil {
			cl.onLost()
		}
	}
	if !c.paused {
		c.w.after(c.w.between(10*time.Millisecond, 100*time.Millisecond), c.reconnect)
	}
}

// pause stops the client for d: it neither sends nor hears anything, as a
// process stopped by a long GC. When it resumes it reconnects.
func (c *client) pause(d time.Duration) {
	if c.paused {
		return
	}
	c.w.tracef("client %d paused for %v", c.idx, d)
	c.paused = true
	if c.connID != 0 || len(c.inflight) > 0 {
		c.disconnect("paused")
	}
	if d < time.Hour {
		c.w.after(d, c.resume)
	}
}

// pauseUntilExpiry pauses the client and resumes it (the simulator knows
// the leader's tracker) within a few tens of milliseconds of its session's
// expiry deadline there: its reattach then races the expiry decision.
func (c *client) pauseUntilExpiry() {
	if c.paused || c.sess == 0 {
		return
	}
	c.pause(time.Hour) // resumed below
	sess := c.sess
	c.w.after(sessionTimeout-time.Second, func() {
		resumeIn := c.w.between(0, time.Second)
		for _, m := range c.w.members {
			if m.up && m.isLeader {
				if d, ok := m.tracker.Deadline(sess); ok {
					if left := d.Sub(clock{c.w}.Now()); left > 0 {
						resumeIn = left + c.w.between(-40*time.Millisecond, 60*time.Millisecond)
					}
				}
			}
		}
		c.w.after(max(resumeIn, 0), c.resume)
	})
}

// die stops the client for good, as a killed process: no close, no more
// pings. Its session is left to expire.
func (c *client) die() {
	if c.paused || c.dead {
		return
	}
	c.w.tracef("client %d dies (session %#x)", c.idx, c.sess)
	c.pause(time.Hour)
	c.dead = true
	c.w.chk.died(c)
}

func (c *client) resume() {
	if !c.paused || c.dead {
		return
	}
	c.paused = false
	c.resumedAt = c.w.now
	c.w.tracef("client %d resumed", c.idx)
	c.reconnect()
}

func (c *client) reconnect() {
	if c.paused || c.connID != 0 {
		return
	}
	var live []int
	for i, m := range c.w.members {
		if m.inEnsemble() {
			live = append(live, i)
		}
	}
	c.member = live[c.w.rng.IntN(len(live))]
	c.w.connCount++
	c.connID = c.w.connCount
	kind := reqAttach
	if c.sess == 0 {
		c.sessGen++
		c.sess = int64(c.idx+1)<<32 | int64(c.sessGen)
		c.lastZxid = 0
		c.passwd = nil
		c.lock, c.lockNode = lockIdle, ""
		kind = reqConnect
	}
	epoch := c.epoch
	c.connect(kind, func(resp response) {
		switch {
		case resp.err == 0:
			c.connected = true
			c.w.tracef("client %d session %#x connected to member %d", c.idx, c.sess, c.member+1)
			c.schedulePing(epoch)
			c.next()
		case resp.err == jute.ErrSessionExpired:
			c.w.tracef("client %d session %#x expired", c.idx, c.sess)
			c.sess = 0
			c.disconnect("session expired")
		default:
			c.disconnect(fmt.Sprintf("connect error %d", resp.err))
		}
	})
}

func (c *client) schedulePing(epoch int) {
	c.w.after(pingEvery, func() {
		if c.epoch != epoch || !c.connected || c.paused {
			return
		}
		if c.w.now-c.lastHeard > clientSilence {
			c.disconnect("no answer from the member")
			return
		}
		c.post(&request{kind: reqFrames, connID: c.connID, session: c.sess,
			frames: [][]byte{requestFrame(jute.XidPing, jute.OpPing, nil)}})
		c.schedulePing(epoch)
	})
}

// next schedules the client's next step.
func (c *client) next() {
	epoch := c.epoch
	c.w.after(c.w.between(time.Millisecond, 40*time.Millisecond), func() {
		if c.epoch == epoch && c.connected && !c.paused && len(c.inflight) == 0 && !c.w.draining {
			c.step()
		}
	})
}

func (c *client) ok() { c.lastOK = c.w.now }

func (c *client) step() {
	switch c.lock {
	case lockFinding:
		c.lockFind()
		return
	case lockChecking:
		c.lockCheck()
		return
	case lockHolding, lockCreating:
		return
	}
	switch k := c.w.rng.IntN(12); {
	case k >= 10:
		c.nodeStep()
	case k < 2:
		c.lockStart()
	case k < 4 && c.w.chance(0.5):
		c.pipeline()
	case k < 4:
		c.write(false)
	case k < 6:
		c.write(true)
	case k < 9:
		c.read(true)
	default:
		c.read(false)
	}
}

// register workload

func (c *client) write(conditional bool) { c.send(c.writeRegister(conditional, c.next)) }

// writeRegister is a write of the register, recorded in its history; then
// runs after its answer (nil: nothing).
func (c *client) writeRegister(conditional bool, then func()) part {
	c.writes++
	val := fmt.Sprintf("c%d.%d", c.idx, c.writes)
	version := int32(-1)
	if conditional {
		version = c.lastVer
	}
	op := check.RegisterOp{Client: c.idx, Path: registerPath, Kind: check.OpSet, Data: val, Version: version, Call: int64(c.w.now)}
	p := writePart(jute.OpSetData, registerPath, &jute.SetDataRequest{Path: registerPath, Data: []byte(val), Version: version}, func(resp response) {
		op.Return = int64(c.w.now)
		switch resp.err {
		case 0:
			c.ok()
			c.lastVer = resp.stat.Version
			c.w.chk.acked(c, resp.zxid)
			op.Status, op.RespVersion, op.RespMzxid = check.StatusOK, resp.stat.Version, resp.stat.Mzxid
			c.w.chk.record(op)
		case jute.ErrBadVersion:
			c.ok()
			op.Status = check.StatusBadVersion
			c.w.chk.record(op)
		}
		if then != nil {
			then()
		}
	}, func() {
		op.Status, op.Return = check.StatusUnknown, 0
		c.w.chk.record(op)
	})
	p.data = val
	return p
}

// read reads the register, after a sync (a ReadIndex round) or not,
// sometimes setting a watch on it.
func (c *client) read(sync bool) {
	read := c.readRegister(sync, c.w.chance(0.3), c.next)
	if sync {
		c.send(syncPart(registerPath), read)
		return
	}
	c.send(read)
}

// readRegister is a getData of the register, recorded in its history
// (linearizable: sent right after a sync); then runs after its answer.
func (c *client) readRegister(linearizable, watch bool, then func()) part {
	op := check.RegisterOp{Client: c.idx, Path: registerPath, Kind: check.OpGet, Linearizable: linearizable, Call: int64(c.w.now)}
	return readPart(jute.OpGetData, registerPath, watch, func(resp response) {
		if resp.err == 0 {
			c.ok()
			c.lastVer = resp.stat.Version
			op.Return, op.Status = int64(c.w.now), check.StatusOK
			op.RespData, op.RespVersion, op.RespMzxid = string(resp.data), resp.stat.Version, resp.stat.Mzxid
			c.w.chk.record(op)
		}
		if then != nil {
			then()
		}
	})
}

// pipeline sends several requests without waiting for their answers, as
// ZooKeeper clients do; the server answers them in order, a read after a
// write of the connection seeing it, a write after a read or sync applied
// after it (the fifo checker).
func (c *client) pipeline() {
	switch c.w.rng.IntN(3) {
	case 0: // write the register, then read it
		c.send(c.writeRegister(false, nil), c.readRegister(false, c.w.chance(0.5), c.next))
	case 1: // write the register, then watch it
		c.send(c.writeRegister(false, nil), readPart(jute.OpExists, registerPath, true, func(response) { c.next() }))
	default: // sync, read, then write
		c.send(syncPart(registerPath), c.readRegister(true, false, nil), c.writeRegister(c.w.chance(0.5), c.next))
	}
}

// lock recipe

func (c *client) lockPrefix() string { return fmt.Sprintf("c%d-%x-", c.idx, c.sess) }

func (c *client) lockStart() {
	c.lock = lockCreating
	path := lockPath + "/" + c.lockPrefix()
	c.send(writePart(jute.OpCreate, path, &jute.CreateRequest{Path: path, ACL: openACL, Flags: jute.FlagEphemeralSequential}, func(resp response) {
		if resp.err == 0 {
			c.ok()
			c.lockNode = resp.path
			c.lock = lockChecking
		} else {
			c.lock = lockIdle
		}
		c.next()
	}, nil)) // lost: disconnect sets lockFinding
}

func lockSeq(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func sortLock(children []string) []string {
	out := slices.Clone(children)
	slices.SortFunc(out, func(a, b string) int {
		if d := lockSeq(a) - lockSeq(b); d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// lockFind looks for its own node after a reconnect or an unknown create
// (Curator's protected mode: the name carries the session).
func (c *client) lockFind() {
	c.send(syncPart(lockPath), readPart(jute.OpGetChildren, lockPath, false, func(resp response) {
		if resp.err != 0 {
			c.next()
			return
		}
		c.ok()
		c.lock, c.lockNode = lockIdle, ""
		for _, ch := range sortLock(resp.children) {
			if strings.HasPrefix(ch, c.lockPrefix()) {
				c.lock, c.lockNode = lockChecking, lockPath+"/"+ch
				break
			}
		}
		c.next()
	}))
}

func (c *client) lockCheck() {
	c.send(syncPart(lockPath), readPart(jute.OpGetChildren, lockPath, false, func(resp response) {
		if resp.err != 0 {
			c.next()
			return
		}
		c.ok()
		sorted := sortLock(resp.children)
		own := strings.TrimPrefix(c.lockNode, lockPath+"/")
		switch {
		case !slices.Contains(sorted, own):
			c.w.tracef("client %d lock node %s gone", c.idx, own)
			c.lock, c.lockNode = lockIdle, ""
			c.next()
		case sorted[0] == own:
			c.hold(lockSeq(own))
		default:
			epoch := c.epoch
			c.w.after(c.w.between(10*time.Millisecond, 80*time.Millisecond), func() {
				if c.epoch == epoch && c.connected && !c.paused && len(c.inflight) == 0 {
					c.lockCheck()
				}
			})
		}
	}))
}

// hold runs the critical section: a read and a write of the fenced counter,
// fenced by the lock node's sequence number, then releases the lock.
func (c *client) hold(token int64) {
	c.lock = lockHolding
	c.w.chk.enter(c, token)
	epoch := c.epoch
	c.w.after(c.w.between(time.Millisecond, 20*time.Millisecond), func() {
		if c.epoch != epoch || c.paused {
			return
		}
		v, ok := c.w.chk.counterRead(c, token)
		c.w.after(c.w.between(time.Millisecond, 20*time.Millisecond), func() {
			if c.epoch != epoch || c.paused {
				return
			}
			if ok {
				c.w.chk.counterWrite(c, token, v+1)
			}
			c.w.chk.exit(c)
			c.release()
		})
	})
}

func (c *client) release() {
	c.lock = lockCreating // the delete is in flight
	c.send(writePart(jute.OpDelete, c.lockNode, &jute.DeleteRequest{Path: c.lockNode, Version: -1}, func(resp response) {
		if resp.err == 0 || resp.err == jute.ErrNoNode {
			c.ok()
			c.lock, c.lockNode = lockIdle, ""
		} else {
			c.lock = lockFinding
		}
		c.next()
	}, nil))
}

// containers and TTL nodes: each client creates some, adds and removes a
// child in them and modifies its TTL nodes; the leader removes them
// (checked by checks.nodeApplied and the final check).

const (
	containerPrefix = "/ctr-"
	ttlPrefix       = "/ttl-"
)

// ownNode is a container or TTL node a client created.
type ownNode struct {
	path  string
	ttl   bool
	child string // a child it created and did not delete ("" none)
	kids  int
}

func (c *client) ownNode(path string) *ownNode {
	for i := range c.nodes {
		if c.nodes[i].path == path {
			return &c.nodes[i]
		}
	}
	return nil
}

func (c *client) dropNode(path string) {
	c.nodes = slices.DeleteFunc(c.nodes, func(n ownNode) bool { return n.path == path })
}

func (c *client) nodeStep() {
	if len(c.nodes) < 2 || (len(c.nodes) < 4 && c.w.chance(0.1)) {
		c.nodeCreate()
		return
	}
	n := c.nodes[c.w.rng.IntN(len(c.nodes))]
	switch k := c.w.rng.IntN(10); {
	case n.child != "" && k < 6:
		c.nodeDeleteChild(n.path, n.child)
	case n.child == "" && k < 5:
		c.nodeCreateChild(n.path)
	case n.ttl && k < 9:
		c.nodeTouch(n.path)
	case k == 9:
		// Forgotten: a container that never had a child stays for good, a
		// TTL node or an empty container goes.
		c.dropNode(n.path)
		c.next()
	default:
		c.next()
	}
}

func (c *client) nodeCreate() {
	c.nodeCount++
	n := ownNode{ttl: c.w.chance(0.5)}
	var op int32
	var body jute.Record
	if n.ttl {
		n.path = fmt.Sprintf("%sc%d-%d", ttlPrefix, c.idx, c.nodeCount)
		ttl := c.w.between(time.Second, 4*time.Second).Milliseconds()
		op = jute.OpCreateTTL
		body = &jute.CreateTTLRequest{Path: n.path, ACL: openACL, Flags: jute.FlagPersistentWithTTL, TTL: ttl}
	} else {
		n.path = fmt.Sprintf("%sc%d-%d", containerPrefix, c.idx, c.nodeCount)
		op = jute.OpCreateContainer
		body = &jute.CreateRequest{Path: n.path, ACL: openACL, Flags: jute.FlagContainer}
	}
	c.send(tracked(writePart(op, n.path, body, func(resp response) {
		if resp.err == 0 {
			c.ok()
			c.nodes = append(c.nodes, n)
		}
		c.next()
	}, func() { c.nodes = append(c.nodes, n) }))) // perhaps created
}

func (c *client) nodeCreateChild(parent string) {
	n := c.ownNode(parent)
	n.kids++
	child := fmt.Sprintf("%s/k%d", parent, n.kids)
	body := &jute.CreateRequest{Path: child, ACL: openACL, Flags: jute.FlagPersistent}
	c.send(tracked(writePart(jute.OpCreate, child, body, func(resp response) {
		switch resp.err {
		case 0:
			c.ok()
			if n := c.ownNode(parent); n != nil {
				n.child = child
			}
		case jute.ErrNoNode: // the leader removed it
			c.ok()
			c.dropNode(parent)
		}
		c.next()
	}, func() {
		if n := c.ownNode(parent); n != nil {
			n.child = child // perhaps created: delete it later
		}
	})))
}

func (c *client) nodeDeleteChild(parent, child string) {
	body := &jute.DeleteRequest{Path: child, Version: -1}
	c.send(tracked(writePart(jute.OpDelete, child, body, func(resp response) {
		if resp.err == 0 || resp.err == jute.ErrNoNode {
			c.ok()
			if n := c.ownNode(parent); n != nil && n.child == child {
				n.child = ""
			}
		}
		c.next()
	}, nil)))
}

// nodeTouch sets a TTL node's data: its TTL runs again from now.
func (c *client) nodeTouch(path string) {
	body := &jute.SetDataRequest{Path: path, Data: []byte("t"), Version: -1}
	c.send(tracked(writePart(jute.OpSetData, path, body, func(resp response) {
		switch resp.err {
		case 0:
			c.ok()
		case jute.ErrNoNode:
			c.ok()
			c.dropNode(path)
		}
		c.next()
	}, nil)))
}
