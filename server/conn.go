package server

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/sasl"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
)

// maxInFlight bounds the requests of one connection that are decoded but not
// yet answered; the reader stops reading when it is reached (back-pressure).
const maxInFlight = 1000

// maxQueuedNotifications bounds events and ping replies waiting for a slow
// client; past it the connection is closed rather than grow without bound.
const maxQueuedNotifications = 100000

// conn is one client connection. The reader goroutine decodes requests,
// proposes writes and queues items; the writer goroutine answers items in
// order, and writes notifications and ping replies (the out-of-band queue)
// before any later reply.
type conn struct {
	srv    *Server
	nc     net.Conn
	id     uint64
	ip     string
	remote string
	// log is the server's logger with the client's address, made at its
	// first use (logger): most connections log nothing.
	log     zerolog.Logger
	logOnce sync.Once

	sessionID int64
	timeoutMs int32
	connID    uint64                    // unique per connection across members and restarts
	ep        endpoint                  // entries of the connection's writes (reader only)
	authIDs   atomic.Pointer[[]jute.Id] // copy-on-write; ip first, then added ids
	// saslServer is the connection's DIGEST-MD5 exchange, made at its first
	// SASL request (reader goroutine only).
	saslServer *sasl.DigestMD5Server
	// writeDec checks write requests before they are proposed (reader
	// goroutine only; it keeps nothing of a request once checked). Made at
	// the first write: a session that only connects and closes needs none.
	writeDec *writeDecoder
	// readDec decodes read requests (reader goroutine only; reset to
	// nothing after each, it keeps no request's bytes).
	readDec jute.Decoder

	// replies is the connection's request queue and its decisions
	// (requestqueue.go, replyqueue.go): the items in arrival order, the
	// queued notifications and ping replies, the reads and holdWrites items
	// not yet answered, and the highest reply zxid written. The reader
	// pushes, the writer answers the front item.
	replies   requestQueue
	avail     chan struct{} // an item was pushed (wakes the writer)
	readyC    chan struct{} // an item completed (item.complete; wakes the writer)
	space     chan struct{} // a pop made room for a waiting reader (wakes it)
	readsDone chan struct{}
	enc       *jute.Encoder // writer goroutine only; from encoderPool at the first reply (nil before)
	deadline  *time.Timer   // writer goroutine only (the reader's before startWriter, proposeAndWait, and while it runs writeLoop itself, awaitLastReply): the answered item's deadline
	bw        *bufio.Writer // writer goroutine only
	// replyBodies are the records write replies are encoded from (writer
	// goroutine only; made at the first write reply).
	replyBodies *replyBodies

	wake chan struct{} // a notification or ping reply was queued

	replyZxid int64 // zxid of the last frame built by reply (writer only)

	closeOnce  sync.Once
	done       chan struct{}
	writerDone chan struct{} // closed when the writer goroutine ended; nil if it never started (startWriter; serve goroutine only)

	watches watchIndex // this connection's watches; guarded by srv.watches.mu

	established time.Time
	stats       connStats
}

func newConn(srv *Server, nc net.Conn) *conn {
	remote := nc.RemoteAddr().String()
	host, _, _ := net.SplitHostPort(remote)
	c := &conn{
		srv:         srv,
		nc:          nc,
		id:          srv.nextConn.Add(1),
		ip:          host,
		remote:      remote,
		avail:       make(chan struct{}, 1),
		readyC:      make(chan struct{}, 1),
		space:       make(chan struct{}, 1),
		bw:          writerPool.Get().(*bufio.Writer),
		wake:        make(chan struct{}, 1),
		readsDone:   make(chan struct{}, 1),
		done:        make(chan struct{}),
		established: time.Now(),
	}
	c.replies.init(srv.queueCap, maxQueuedNotifications, &c.replyZxid)
	c.bw.Reset(nc)
	c.connID = srv.reqBase | uint64(uint32(c.id))
	ids := []jute.Id{{Scheme: "ip", ID: host}}
	c.authIDs.Store(&ids)
	c.stats.minLatency.Store(-1)
	return c
}

// logger is the connection's logger: the server's, with the client's
// address. zerolog's With copies the logger's context, so it is made only
// when the connection first logs; any goroutine may call it.
func (c *conn) logger() *zerolog.Logger {
	c.logOnce.Do(func() { c.log = c.srv.log.With().Str("remote", c.remote).Logger() })
	return &c.log
}

// connBufSize is the size of a connection's read and write buffers.
const connBufSize = 64 * 1024

// Connection buffers are pooled: a session that only connects and closes
// would otherwise allocate (and clear) 128 KiB, which made the garbage
// collector the largest CPU cost of session create+close (README,
// Performance). A buffer goes back to its pool only once the goroutine that
// used it has ended.
var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, connBufSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, connBufSize) }}
	// encoderPool holds reply encoders (conn.enc), taken at a connection's
	// first reply; one whose buffer grew past connBufSize is not kept.
	encoderPool = sync.Pool{New: func() any { return jute.NewEncoder(make([]byte, 0, 512)) }}
)

// queuedEvent is a notification frame waiting for its turn.
type queuedEvent struct {
	zxid  int64
	frame []byte
}

// ownWatches implements watcher.
func (c *conn) ownWatches() *watchIndex { return &c.watches }

// notify implements watcher: queue the notification of a change made by zxid.
func (c *conn) notify(frame []byte, zxid int64) {
	c.stats.watchEvents.Add(1)
	c.push(c.replies.pushEvent(zxid, frame))
}

// pushPing queues a ping reply carrying the last applied zxid. Ping replies
// may overtake other replies, but never an event of a change at or before
// their zxid; the zxid is read under the queue's lock (replyQueue.pushPing).
func (c *conn) pushPing() {
	c.push(c.replies.pushPing(c.srv.sm.lastZxid.Load))
}

// push closes the connection if a notification or ping reply could not be
// queued (ok false: the client does not read), else wakes the writer.
func (c *conn) push(ok bool) {
	if !ok {
		c.logger().Warn().Msg("client not reading notifications, closing connection")
		c.close()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close ends the connection without blocking, so any goroutine may call it,
// apply hooks on the raft goroutine included. It marks the connection closed,
// which stops the writer, and expires the socket's deadlines, so a pending
// Read or Write returns at once. The socket itself is closed by the
// connection's own goroutine (finish): a TLS Close sends close_notify and can
// wait seconds for a client that stopped reading.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.nc.SetDeadline(time.Now())
	})
}

// setReadDeadline sets the socket's read deadline unless the connection is
// closing; false if it is. close marks the connection before it expires the
// deadline, so either the deadline set here is overridden by close's or the
// closing is seen here: a reader never blocks on a closed connection.
func (c *conn) setReadDeadline(t time.Time) bool {
	_ = c.nc.SetReadDeadline(t)
	return !c.closed()
}

// finish runs on the connection's own goroutine when the connection ends.
// It stops the writer and waits for it, so no request of the connection runs
// after this point; then it unregisters the connection and its watches,
// before the peer can see EOF; then it closes the socket.
func (c *conn) finish() {
	c.close()
	if c.writerDone != nil {
		<-c.writerDone
	}
	c.dropUnanswered()
	c.srv.dropConn(c)
	_ = c.nc.Close()
	// The writer, the only user of bw and enc, has ended (or never started).
	c.bw.Reset(nil)
	writerPool.Put(c.bw)
	c.bw = nil
	if c.enc != nil {
		if cap(c.enc.Bytes()) <= connBufSize {
			c.enc.Reset()
			encoderPool.Put(c.enc)
		}
		c.enc = nil
	}
}

// dropUnanswered takes the requests the writer left unanswered off the
// server's outstanding count (globalOutstandingLimit), which would otherwise
// keep them for good and end up throttling every connection. It runs after
// the reader (the only goroutine that enqueues) and the writer ended.
func (c *conn) dropUnanswered() {
	for it := c.replies.front(); it != nil; it = c.replies.front() {
		c.replies.pop()
		c.srv.stats.answered(int64(c.srv.cfg.GlobalOutstandingLimit))
		if it.reqID != 0 {
			c.srv.cancelWait(it.reqID) // its proposal may never be applied
		}
	}
}

func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// serve runs a connection to its end.
func (c *conn) serve() {
	defer c.finish()
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(c.nc)
	defer func() { // before finish: only this goroutine reads
		br.Reset(nil)
		readerPool.Put(br)
	}()

	// A connection that sends nothing is dropped (sessionlessCnxnTimeout).
	if !c.setReadDeadline(time.Now().Add(10 * time.Second)) {
		return
	}
	var first [4]byte
	if _, err := io.ReadFull(br, first[:]); err != nil {
		return
	}
	if cmd := string(first[:]); isFourLetterWord(cmd) {
		c.srv.fourLetterWord(c.nc, cmd)
		return
	}
	if !c.srv.serving.Load() {
		return // no quorum: the client moves on to another member
	}
	n := int32(binary.BigEndian.Uint32(first[:]))
	if n < 0 || int(n) > c.srv.cfg.JuteMaxBuffer {
		c.logger().Warn().Int32("length", n).Msg("bad connect frame length, closing")
		return
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(br, buf); err != nil {
		return
	}
	req, err := decodeConnect(buf)
	if err != nil {
		c.logger().Warn().Err(err).Msg("malformed connect request, closing")
		return
	}
	if !c.handshake(&req) {
		return
	}
	if !c.setReadDeadline(time.Time{}) {
		return
	}
	c.readLoop(br)
}

// startWriter starts the connection's writer (writeLoop) unless it runs
// already (reader only). The reader starts it before it handles any request
// but a closeSession, so before anything is queued for the writer: requests
// and ping replies are queued by the reader, and events only for watches,
// which only requests (reads) set. A session whose first request is
// closeSession never has a writer: its reader answers it (awaitLastReply),
// and the goroutine, its start and two wake-ups are saved on every session
// that is opened and closed.
func (c *conn) startWriter() {
	if c.writerDone != nil {
		return
	}
	c.writerDone = make(chan struct{})
	c.srv.writersStarted.Add(1)
	c.srv.connWG.Add(1) // the serve goroutine's count is held: never from zero
	go func() {
		defer c.srv.connWG.Done()
		defer close(c.writerDone)
		c.writeLoop()
	}()
}

// awaitLastReply is the reader's end once it queued a reply after which
// the connection closes (a closeSession's, a refusal's): it reads nothing
// more and waits for the writer to answer and close. With no writer (the
// request was the connection's first, a closeSession), nothing else is
// queued and the reader runs the writer's loop itself: it owns the
// writer's state (bw, enc, the reply queue's consumer side) as long as no
// writer was started, and finish waits for no other goroutine.
func (c *conn) awaitLastReply() {
	if c.writerDone == nil {
		c.writeLoop()
		return
	}
	<-c.done
}

// handshake settles the session of a new connection, answering as
// ZooKeeper 3.8 does (planConnect, connectOutcome in endpoint.go). It
// reports whether the connection goes on.
func (c *conn) handshake(req *jute.ConnectRequest) bool {
	srv := c.srv
	minMs, maxMs := srv.cfg.SessionBounds()
	plan, err := planConnect(req, &connectEnv{
		lastZxid: srv.sm.lastZxid.Load(), minMs: minMs, maxMs: maxMs, connID: c.connID,
		lookup: func(id int64) (session.Session, bool) {
			srv.detachSession(id) // the connection it had is closed before it is looked up
			return srv.sm.session(id)
		},
		closing: srv.tracker.IsClosing, newID: srv.ids.Next, rand: rand.Reader,
	})
	if err != nil {
		if errors.Is(err, errClientAhead) {
			c.logger().Warn().Err(err).Msg("connect refused, closing")
		} else {
			c.logger().Error().Err(err).Msg("connect failed, closing")
		}
		return false
	}
	if plan.entry == nil {
		// Expired, unknown, closing or wrong password: ZooKeeper's answer.
		c.writeConnectResponse(plan.expiredResponse())
		c.logger().Info().Str("session", sessionHex(req.SessionID)).Msg("session reattach refused")
		return false
	}
	if r, ok := c.proposeAndWait(plan.entry, plan.timeout); !ok || r.Err != 0 {
		return false // connectOutcome: no answer
	}
	// Logged once the client has its answer (or is refused): the log
	// write is not on the way to the ConnectResponse. Debug, as ZooKeeper
	// 3.8's "Established session": at info level a client that opens
	// sessions by the thousand would write a log line for each.
	logCreated := func() {
		if req.SessionID == 0 {
			srv.log.Debug().Str("session", sessionHex(plan.resp.SessionID)).Int32("timeout_ms", plan.timeout).Str("remote", c.remote).Msg("session created")
		}
	}
	c.sessionID, c.timeoutMs = plan.resp.SessionID, plan.timeout
	c.ep = endpoint{sessionID: c.sessionID, connID: c.connID}
	// attachSession reports whether the session lives on this connection
	// (stateMachine.attachable) and registers it if so.
	resp, ok := connectOutcome(&plan, 0, srv.attachSession(c))
	if !ok {
		// Closed or expired (or attached elsewhere) after its entry was
		// applied here: ZooKeeper's answer to an expired session.
		c.writeConnectResponse(resp)
		logCreated()
		c.logger().Info().Str("session", sessionHex(plan.resp.SessionID)).Msg("session ended before its connection was attached")
		return false
	}
	if req.SessionID != 0 {
		// Tracked only once attached: a session that ended meanwhile must
		// not come back to life in the leader's tracker.
		srv.tracker.Track(req.SessionID, plan.timeout)
		srv.touch(req.SessionID)
		srv.log.Debug().Str("session", sessionHex(plan.resp.SessionID)).Msg("session reattached")
	}
	ok = c.writeConnectResponse(resp)
	logCreated()
	return ok
}

// proposeAndWait proposes a handshake entry and waits up to the session
// timeout for its result; false if it failed or took too long. It does not
// wait for raft to take the entry, only for its apply or its failure: one
// wake-up of the connection's goroutine, not two. It makes no context: raft
// fails the entry if it has not taken it by the deadline (proposeAsync),
// and the wait uses the connection's timer (c.deadline), which the reader
// owns until it starts the writer, so the closeSession answered next reuses
// it (answer). A connection closed while its connect entry waits for a
// leader leaves the entry queued until its deadline (the old per-session
// context dropped it at once): if a leader takes it in time, it makes a
// session nobody holds, which expires after its timeout, as a session
// whose client vanished after connecting does.
func (c *conn) proposeAndWait(e *entry, timeoutMs int32) (applyResult, bool) {
	type outcome struct {
		r   applyResult
		err error // not proposed
	}
	srv := c.srv
	done := make(chan outcome, 1) // one of the two callbacks runs, once
	wait := time.Duration(timeoutMs) * time.Millisecond
	err := srv.proposeAsync(srv.stopCtx, time.Now().Add(wait), e,
		func(r applyResult) { done <- outcome{r: r} },
		func(err error) { done <- outcome{err: err} })
	if err != nil {
		c.logger().Warn().Err(err).Int32("type", e.Type).Msg("session entry not proposed, closing")
		return applyResult{}, false
	}
	if c.deadline == nil {
		c.deadline = time.NewTimer(wait)
	} else {
		c.deadline.Reset(wait)
	}
	defer c.deadline.Stop()
	select {
	case o := <-done:
		if o.err != nil {
			c.logger().Warn().Err(o.err).Int32("type", e.Type).Msg("session entry not proposed, closing")
			return applyResult{}, false
		}
		return o.r, true
	case <-c.deadline.C:
		srv.cancelWait(e.ReqID)
		c.logger().Warn().Int32("type", e.Type).Msg("session entry not committed in time, closing")
	case <-srv.stopCtx.Done():
		srv.cancelWait(e.ReqID)
	case <-c.done:
		srv.cancelWait(e.ReqID)
	}
	return applyResult{}, false
}

func (c *conn) writeConnectResponse(resp *jute.ConnectResponse) bool {
	frame := connectResponseFrame(resp)
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if c.closed() {
		return false // close's expired deadline may have been overridden just now
	}
	_, err := c.nc.Write(frame)
	_ = c.nc.SetWriteDeadline(time.Time{})
	return err == nil
}

// readLoop reads request frames until the connection ends.
func (c *conn) readLoop(br *bufio.Reader) {
	var buf []byte
	for {
		frame, err := jute.ReadFrame(br, buf, c.srv.cfg.JuteMaxBuffer)
		if err != nil {
			if errors.Is(err, jute.ErrFrameTooLarge) {
				c.logger().Warn().Err(err).Msg("frame above jute.maxbuffer, closing connection")
			} else if !errors.Is(err, io.EOF) && !c.closed() {
				c.logger().Debug().Err(err).Msg("read failed, closing connection")
			}
			return
		}
		buf = frame[:0]
		if !c.srv.stats.admit(int64(c.srv.cfg.GlobalOutstandingLimit), c.done) {
			return
		}
		c.stats.received.Add(1)
		c.srv.stats.received.Add(1)
		c.srv.touch(c.sessionID)
		if len(frame) < 8 {
			c.logger().Warn().Int("length", len(frame)).Msg("request header too short, closing connection")
			return
		}
		// The RequestHeader record (xid, type), read in place.
		hdr := jute.RequestHeader{Xid: int32(binary.BigEndian.Uint32(frame)), Type: int32(binary.BigEndian.Uint32(frame[4:]))}
		if hdr.Type != jute.OpCloseSession {
			c.startWriter()
		}
		if !c.handle(hdr, frame[8:]) {
			return
		}
	}
}

// waitReads blocks the reader until every read and sync queued before now
// was answered; false if the connection closed meanwhile.
func (c *conn) waitReads() bool {
	for !c.replies.mayPropose() {
		select {
		case <-c.readsDone:
		case <-c.done:
			return false
		}
	}
	return true
}

// enqueue hands an item to the writer, waiting while the queue is full;
// false if the connection is closing.
func (c *conn) enqueue(it *item) bool {
	return c.enqueueAt(it, time.Now())
}

// enqueueAt is enqueue of an item received at now (a reading of the clock
// the caller took anyway: a write's, for its deadline).
func (c *conn) enqueueAt(it *item, now time.Time) bool {
	c.replies.arrive(it)
	it.received = now
	c.srv.stats.outstanding.Add(1)
	for !c.replies.push(it) {
		c.replies.wantRoom()
		if c.replies.push(it) {
			break
		}
		select {
		case <-c.space:
		case <-c.done:
			c.srv.stats.answered(int64(c.srv.cfg.GlobalOutstandingLimit))
			c.replies.answered(it)
			return false
		}
	}
	select {
	case c.avail <- struct{}{}:
	default:
	}
	return true
}

// writeLoop answers items in order (the queue's front). Before each reply
// it writes every queued notification: an event queued during an apply is
// on the wire before the reply of any request that was answered after that
// apply.
func (c *conn) writeLoop() {
	defer c.close()
	for {
		if c.closed() {
			return
		}
		if it := c.replies.front(); it != nil {
			// Taken off at once, as dropUnanswered counts only what is
			// still queued; answer accounts for it whatever happens.
			if c.replies.pop() {
				select {
				case c.space <- struct{}{}:
				default:
				}
			}
			if !c.answer(it) {
				return
			}
			continue
		}
		select {
		case <-c.done:
			return
		case <-c.avail:
		case <-c.wake:
			// An item may have been pushed meanwhile: then a reply is owed
			// and the connection is not idle; answer writes what may go
			// before it, and the rest once the queue is empty.
			if c.replies.pending() > 0 {
				// Give the token back: answer may wait on c.wake for the
				// item's apply, and the events this wake-up announced may
				// go before that reply.
				select {
				case c.wake <- struct{}{}:
				default:
				}
				continue
			}
			// Idle: nothing is pending, so every queued event may go. An
			// item queued from now on is proposed or read later, so its
			// zxid is at least that of every event and ping queued now.
			if !c.flushOOB(c.replies.idle()) || c.bw.Flush() != nil {
				return
			}
		}
	}
}

func (c *conn) answer(it *item) bool {
	defer c.srv.stats.answered(int64(c.srv.cfg.GlobalOutstandingLimit))
	if !it.isReady() {
		// Replies of earlier items still in the buffer go out before the
		// wait: a pipelining client must not wait for them until this
		// item's apply (one log write or more later).
		if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
			return false
		}
		// One timer per connection, reset per item: a timer per write was
		// a steady allocation on the write path. Since Go 1.23 a Reset
		// timer never delivers a value from before the Reset.
		wait := c.replies.waitFor(it, time.Now())
		if c.deadline == nil {
			c.deadline = time.NewTimer(wait)
		} else {
			c.deadline.Reset(wait)
		}
		timer := c.deadline
		defer timer.Stop()
	wait:
		for !it.isReady() {
			select {
			case <-c.readyC:
				// An item completed, maybe a later one: checked again.
			case <-c.wake:
				// Events up to the last applied zxid, read before
				// checking, may pass its reply (replyQueue.whileWaiting).
				applied := c.srv.sm.lastZxid.Load()
				if it.isReady() {
					break wait
				}
				if !c.flushOOB(c.replies.whileWaiting(applied)) || c.bw.Flush() != nil {
					return false
				}
			case <-timer.C:
				if id := c.replies.timedOut(it); id != 0 {
					c.srv.cancelWait(id)
				}
				c.logger().Warn().Msg("request not committed in time, closing connection")
				return false
			case <-c.done:
				if it.reqID != 0 {
					c.srv.cancelWait(it.reqID)
				}
				return false
			}
		}
	}
	if !c.replies.answers(it) {
		// The request failed without an answer: close the connection with
		// no reply; the client reports ConnectionLoss.
		if it.err != nil {
			c.logger().Warn().Err(it.err).Msg("request failed, closing connection")
		}
		return false
	}
	frame, closeAfter, wakeReader, pings, events := c.replies.turn(it)
	if wakeReader {
		select {
		case c.readsDone <- struct{}{}:
		default:
		}
	}
	if !c.flushOOB(pings, events) {
		return false
	}
	if frame != nil {
		if _, err := c.bw.Write(frame); err != nil {
			return false
		}
		c.stats.sent.Add(1)
		c.srv.stats.sent.Add(1)
		// One clock read for the latency and its window's step.
		now := time.Now()
		d := now.Sub(it.received)
		lat := d.Milliseconds()
		c.stats.recordLatency(lat)
		c.srv.stats.recordLatency(lat)
		if it.read || it.waits {
			c.srv.observeRequest(it.read, d, now)
		}
	}
	if closeAfter {
		_ = c.bw.Flush()
		return false
	}
	if c.replies.pending() == 0 {
		// Idle: the next request is not proposed yet, so its zxid will be
		// above every event queued now; they may all go.
		if !c.flushOOB(c.replies.idle()) {
			return false
		}
		return c.bw.Flush() == nil
	}
	return true
}

// flushOOB writes events and ping replies taken from the queue, in wire
// order (writeOOB).
func (c *conn) flushOOB(pings, events []queuedEvent) bool {
	if !writeOOB(pings, events, func(f []byte) bool {
		_, err := c.bw.Write(f)
		return err == nil
	}) {
		return false
	}
	c.stats.sent.Add(int64(len(pings) + len(events)))
	c.srv.stats.sent.Add(int64(len(pings) + len(events)))
	return true
}

// reply encodes a reply frame with the connection's encoder (writer only).
func (c *conn) reply(xid int32, zxid int64, code int32, body jute.Record) []byte {
	if code != 0 {
		body = nil
	}
	return c.replyWithBody(xid, zxid, code, body)
}

// replyWithBody is reply with body written whatever the code, as ZooKeeper
// does for a failed SASL request (its SetSASLResponse, which the Java
// client reads in any case).
func (c *conn) replyWithBody(xid int32, zxid int64, code int32, body jute.Record) []byte {
	if c.enc == nil {
		c.enc = encoderPool.Get().(*jute.Encoder)
	}
	frame := encodeReplyWithBody(c.enc, xid, zxid, code, body)
	c.stats.lastZxid.Store(zxid)
	c.replyZxid = zxid
	return frame
}
