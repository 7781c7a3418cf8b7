package server

import (
	"context"
	"fmt"
	"time"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// writeTimeout bounds how long a connection waits for its write to be
// applied; past it the connection is closed and the client sees
// ConnectionLoss (the write may or may not have happened, as in ZooKeeper).
const writeTimeout = 30 * time.Second

// handle dispatches one request. It returns false when the connection must
// end now.
func (c *conn) handle(hdr jute.RequestHeader, body []byte) bool {
	xid, op := hdr.Xid, hdr.Type
	c.stats.lastOp.Store(op)
	c.stats.lastCxid.Store(xid)
	if op != jute.OpPing && c.srv.log.Debug().Enabled() {
		// Guarded: the fields would be formatted on every request otherwise;
		// the server's logger (same level) is asked, as the connection's is
		// made only when it logs (logger).
		c.logger().Debug().Str("session", sessionHex(c.sessionID)).Int32("xid", xid).Str("op", opName(op)).Msg("request")
	}
	if op != jute.OpAuth && op != jute.OpSASL && !c.authEnforced() {
		return c.refuseUnauthenticated(xid)
	}
	switch op {
	case jute.OpPing:
		c.pushPing()
		return true
	case jute.OpAuth:
		return c.handleAuth(xid, body)
	case jute.OpSASL:
		return c.handleSASL(xid, body)
	case jute.OpDeleteContainer:
		// Internal to the container manager; ZooKeeper refuses it from a
		// client with BadArguments and keeps the connection.
		return c.enqueueReply(xid, jute.ErrBadArguments, nil, false)
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti:
		return c.handleWrite(xid, op, body)
	case jute.OpCloseSession:
		return c.handleClose(xid)
	case jute.OpSync:
		return c.handleSync(xid, body)
	case jute.OpCheck:
		// Only valid inside multi. ZooKeeper 3.8.0 logged it as a txn it
		// could not replay; zkraft answers Unimplemented and goes on.
		return c.enqueueReply(xid, jute.ErrUnimplemented, nil, false)
	case jute.OpReconfig:
		return c.handleReconfig(xid, body)
	case jute.OpCreateSession:
		c.logger().Warn().Msg("client sent createSession, closing connection")
		return false
	}
	if read := c.decodeRead(xid, op, body); read != nil {
		return c.enqueue(readItem(read))
	}
	if isKnownRead(op) {
		return c.enqueueReply(xid, jute.ErrMarshallingError, nil, false)
	}
	c.logger().Warn().Int32("opcode", op).Msg("unknown opcode, closing connection")
	c.enqueue(&item{build: func(*item) ([]byte, bool) {
		return c.reply(xid, -1, jute.ErrUnimplemented, nil), true // ZooKeeper's zxid here is -1
	}})
	c.awaitLastReply()
	return false
}

// enqueueReply queues a reply that needs no waiting. Its zxid is the last
// applied one when it is written (auth replies carry 0), so later writes
// wait until it was written (holdWrites).
func (c *conn) enqueueReply(xid, code int32, body jute.Record, closeAfter bool) bool {
	return c.enqueue(refusalItem(func(*item) ([]byte, bool) {
		zxid := c.srv.sm.lastZxid.Load()
		if xid == jute.XidAuth {
			zxid = 0
		}
		return c.reply(xid, zxid, code, body), closeAfter
	}))
}

func pingFrame(zxid int64) []byte {
	enc := jute.NewEncoder(make([]byte, 0, 20))
	start := enc.StartFrame()
	enc.WriteRecord(&jute.ReplyHeader{Xid: jute.XidPing, Zxid: zxid})
	enc.EndFrame(start)
	return enc.Bytes()
}

func (c *conn) handleAuth(xid int32, body []byte) bool {
	var p jute.AuthPacket
	if err := jute.Unmarshal(body, &p); err != nil {
		c.logger().Warn().Err(err).Msg("malformed auth packet, closing connection")
		return false
	}
	var added []jute.Id
	switch p.Scheme {
	case "digest":
		// Like ZooKeeper, any text is accepted: the user is what precedes
		// the first colon (all of it when there is none).
		id := znode.DigestID(string(p.Auth))
		added = append(added, jute.Id{Scheme: "digest", ID: id})
		if c.srv.cfg.SuperDigest != "" && id == c.srv.cfg.SuperDigest {
			added = append(added, jute.Id{Scheme: "super", ID: ""})
		}
	case "ip":
		added = []jute.Id{} // the connection already carries its ip id
	}
	if added == nil {
		c.logger().Info().Str("scheme", p.Scheme).Msg("auth failed, closing connection")
		c.enqueue(&item{build: func(*item) ([]byte, bool) {
			return c.reply(xid, 0, jute.ErrAuthFailed, nil), true
		}})
		c.awaitLastReply()
		return false
	}
	c.addAuthIDs(added)
	return c.enqueue(&item{build: func(*item) ([]byte, bool) {
		return c.reply(xid, 0, 0, nil), false
	}})
}

// addAuthIDs adds ids the connection does not have yet (copy on write).
// Reader goroutine only.
func (c *conn) addAuthIDs(added []jute.Id) {
	old := *c.authIDs.Load()
	ids := append([]jute.Id(nil), old...)
	for _, a := range added {
		dup := false
		for _, o := range ids {
			dup = dup || o == a
		}
		if !dup {
			ids = append(ids, a)
		}
	}
	c.authIDs.Store(&ids)
}

func (c *conn) handleWrite(xid, op int32, body []byte) bool {
	if c.writeDec == nil {
		c.writeDec = new(writeDecoder)
	}
	if code := c.writeDec.check(op, body, c.srv.cfg.JuteMaxBuffer); code != 0 { // checkWrite
		return c.enqueueReply(xid, code, nil, false)
	}
	if c.srv.tracker.IsClosing(c.sessionID) {
		return c.enqueueReply(xid, jute.ErrSessionExpired, nil, false)
	}
	if !c.waitReads() {
		return false
	}
	now := time.Now() // the item's arrival and deadline
	it := writeItem(now.Add(writeTimeout), buildWriteReply)
	it.conn, it.xid, it.op = c, xid, op
	e := c.ep.writeEntry(xid, op, body, *c.authIDs.Load(), c.srv.sm.treeOpts)
	// Body aliases the read buffer, reused for the next frame once this
	// returns: propose encodes the entry (a copy) before it returns, and e
	// is not kept.
	return c.proposeItem(it, e, now)
}

// proposeItem queues a write's item, then proposes its entry. Queueing first
// keeps the writer from treating the connection as idle (and writing events
// of later zxids) while this reply is owed.
//
// The connection may close between the push and the propose, and the
// writer's cancelWait then runs before the waiter is registered. The waiter
// still does not outlive the connection: this runs on the reader, whose
// serve goroutine ends in finish, which waits for the writer and then
// cancels the waiter of every item left in the queue (dropUnanswered); the
// writer pops an item only once it was answered, when its waiter is gone
// (applied hands it over, a failed propose cancels it).
//
// it is the proposal's waiter (item.applied) and takes raft's answer to it
// (item.ProposeDone): its conn and signal are set here.
func (c *conn) proposeItem(it *item, e *entry, now time.Time) bool {
	e.ReqID = c.srv.newReqID()
	it.reqID = e.ReqID // set before the writer can see the item
	it.conn, it.signal = c, c.readyC
	if !c.enqueueAt(it, now) {
		return false
	}
	// Not waiting for raft to take the entry: the next write of this
	// connection is queued behind it for the same log write. Raft takes
	// them in this order; one that is not proposed fails its item (the
	// writer closes the connection on reaching it) and, its sequence
	// number missing, every later write of the connection is refused at
	// apply (errOutOfOrder). Raft does not take it once the server stops
	// or past the item's deadline (checked when the raft loop reaches it:
	// no context or timer per write).
	if err := c.srv.proposeQueued(c.srv.stopCtx, it.deadline, e, it, it); err != nil {
		it.failed(err)
		return false
	}
	return true
}

// applied implements waiter: it completes a connection's write or close
// item (proposeItem) with its entry's result. An entry refused as out of
// order means an earlier write of this connection was lost: the
// connection closes at once.
func (it *item) applied(r applyResult) {
	it.res = writeResult{Zxid: r.Zxid, Err: r.Err, Res: r.Res}
	it.complete()
	if r.Err == errOutOfOrder {
		it.conn.logger().Warn().Msg("an earlier write of this connection was lost, closing connection")
		it.conn.close()
	}
}

// ProposeDone implements consensus.ProposeDone for a write item: if raft
// did not take its entry and its waiter was still registered, the item
// fails (Server.proposeAsync's onFailed).
func (it *item) ProposeDone(err error) {
	if err != nil && it.conn.srv.cancelWait(it.reqID) {
		it.failed(fmt.Errorf("propose: %w", err))
	}
}

// failed completes the item as not proposed; the writer closes the
// connection when it reaches it.
func (it *item) failed(err error) {
	it.conn.logger().Warn().Err(err).Msg("write not proposed, closing connection")
	it.err = err
	it.complete()
}

// buildWriteReply builds the reply of an applied write item (handleWrite).
func buildWriteReply(it *item) ([]byte, bool) {
	return it.conn.writeReply(it.xid, it.op, &it.res), false
}

// writeReply encodes the reply of an applied write.
func (c *conn) writeReply(xid, op int32, r *writeResult) []byte {
	if c.replyBodies == nil {
		c.replyBodies = new(replyBodies)
	}
	code, body := c.replyBodies.of(op, r) // writeReplyBody
	frame := c.reply(xid, r.Zxid, code, body)
	c.replyBodies.reset() // drop the result's path and multi results
	return frame
}

func (c *conn) handleClose(xid int32) bool {
	if !c.waitReads() {
		return false
	}
	now := time.Now()
	it := writeItem(now.Add(writeTimeout), func(it *item) ([]byte, bool) {
		return c.reply(xid, it.res.Zxid, 0, nil), true
	})
	e := c.ep.closeEntry(xid)
	if !c.proposeItem(it, e, now) {
		return false
	}
	c.srv.tracker.SetClosing(c.sessionID)
	// Debug, as session creation (handshake): ZooKeeper 3.8 logs neither.
	c.srv.log.Debug().Str("session", sessionHex(c.sessionID)).Msg("session closing")
	c.awaitLastReply()
	return false
}

func (c *conn) handleSync(xid int32, body []byte) bool {
	var r jute.PathRequest
	if jute.Unmarshal(body, &r) != nil {
		return c.enqueueReply(xid, jute.ErrMarshallingError, nil, false)
	}
	barrier := syncBarrier()
	it := syncItem(barrier, time.Now().Add(writeTimeout), func(*item) ([]byte, bool) {
		return c.reply(xid, c.srv.sm.lastZxid.Load(), 0, &jute.PathRequest{Path: r.Path}), false
	})
	if !barrier {
		return c.enqueue(it)
	}
	it.signal = c.readyC
	// Counted in connWG: this connection's serve goroutine, counted too, is
	// running, so Stop waits for it; Stop's cancel ends the wait.
	c.srv.connWG.Go(func() {
		ctx, cancel := context.WithTimeout(c.srv.stopCtx, writeTimeout)
		defer cancel()
		_, it.err = c.srv.node.ReadIndex(ctx)
		it.complete()
	})
	return c.enqueue(it)
}
