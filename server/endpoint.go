package server

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// This file is the goroutine-free part of a client connection's request
// path: the checks a write passes before it is proposed, the entry it is
// proposed as, the reply an applied write gets and the reads served against
// the tree (with their watch registration); requestqueue.go is the order
// they are answered in. conn.go calls it from its reader and writer
// goroutines; Endpoint (replica.go) exposes it, step by step, to tools that
// drive a Replica themselves (the simulator).

// The connect handshake, without the socket and the wait for the session's
// entry: decodeConnect reads the ConnectRequest, planConnect decides (the
// zxid check, the timeout negotiation, a new session or the reattach of a
// known one with its password), the caller proposes the plan's entry and,
// once it applied, asks connectOutcome for the answer (ZooKeeper 3.8's:
// the session's id, timeout and password, or the expired answer, timeout 0
// and a zero password, then the connection is closed).

// errClientAhead: the client has seen a zxid this member has not applied
// yet; the connection is closed without an answer, as ZooKeeper does, and
// the client moves on to another member.
var errClientAhead = errors.New("client has seen a newer zxid than this server")

// decodeConnect decodes a ConnectRequest frame (without its length prefix).
func decodeConnect(frame []byte) (jute.ConnectRequest, error) {
	var req jute.ConnectRequest
	if err := jute.Unmarshal(frame, &req); err != nil {
		return req, fmt.Errorf("malformed connect request: %w", err)
	}
	return req, nil
}

// connectEnv is what a member decides a connect request with.
type connectEnv struct {
	lastZxid     int64 // the member's last applied zxid
	minMs, maxMs int32 // session timeout bounds
	connID       uint64
	// lookup returns a live session of the replicated table.
	lookup func(id int64) (session.Session, bool)
	// closing reports a session the leader decided to end (nil: none).
	closing func(id int64) bool
	// newID returns the id of a new session.
	newID func() int64
	// rand is where a new session's password is read from.
	rand io.Reader
}

// connectPlan is the decision on a connect request: propose entry, or
// (entry nil) answer with the expired response and close.
type connectPlan struct {
	req     jute.ConnectRequest
	timeout int32 // negotiated
	entry   *entry
	resp    jute.ConnectResponse // the answer once entry applied
}

// planConnect decides on a connect request, as ZooKeeper 3.8 does. A new
// session (id 0) gets an id, the negotiated timeout and a fresh password in
// a createSession entry; a reattach of a live session with its password is
// fenced by an attach entry (writes the client sent on its previous
// connection are settled, applied or refused, before it can read again); a
// reattach of an unknown, closing or expired session, or with a wrong
// password, gets the expired answer (entry nil). It fails with
// errClientAhead, or when no password could be read.
func planConnect(req *jute.ConnectRequest, env *connectEnv) (connectPlan, error) {
	p := connectPlan{req: *req}
	if req.LastZxidSeen > env.lastZxid {
		return p, fmt.Errorf("%w: client zxid %#x, server zxid %#x", errClientAhead, req.LastZxidSeen, env.lastZxid)
	}
	p.timeout = session.NegotiateTimeout(req.TimeOut, env.minMs, env.maxMs)
	p.resp = jute.ConnectResponse{TimeOut: p.timeout, HasReadOnly: req.HasReadOnly}
	if req.SessionID == 0 {
		passwd, err := session.NewPassword(env.rand)
		if err != nil {
			return p, fmt.Errorf("new session: %w", err)
		}
		id := env.newID()
		p.entry = &entry{Type: entryCreateSession, SessionID: id, ConnID: env.connID,
			Body: CreateSessionBody(id, p.timeout, passwd)}
		p.resp.SessionID, p.resp.Passwd = id, passwd
		return p, nil
	}
	sess, ok := env.lookup(req.SessionID)
	if !ok || (env.closing != nil && env.closing(req.SessionID)) || !session.VerifyPassword(sess, req.Passwd) {
		return p, nil // expired, unknown, closing or wrong password
	}
	p.entry = &entry{Type: entryAttachSession, SessionID: sess.ID, ConnID: env.connID}
	p.resp.SessionID, p.resp.Passwd = sess.ID, sess.Password
	return p, nil
}

// expiredResponse is ZooKeeper's answer to a connect request for a session
// that is gone: timeout 0, session 0, a zero password.
func (p *connectPlan) expiredResponse() *jute.ConnectResponse {
	return &jute.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: p.req.HasReadOnly}
}

// connectOutcome is the answer to a planned connect request whose entry
// applied with code applyErr: ok and the session's answer if the session
// lives on this connection (attachable), the expired answer if it ended or
// moved meanwhile, nil (close without an answer, as when the entry was not
// committed) if the entry failed.
func connectOutcome(p *connectPlan, applyErr int32, attachable bool) (resp *jute.ConnectResponse, ok bool) {
	if applyErr != 0 {
		return nil, false
	}
	if !attachable {
		return p.expiredResponse(), false
	}
	return &p.resp, true
}

// attachable reports whether session id is live and its connection is
// connID (its createSession or attach entry was the last one applied).
func (sm *stateMachine) attachable(id int64, connID uint64) bool {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	_, ok := sm.sessions.Get(id)
	return ok && sm.order[id].ConnID == connID
}

// connectResponseFrameSize is the size of a ConnectResponse frame with a
// 16-byte password and the readOnly byte, length prefix included.
const connectResponseFrameSize = 4 + 4 + 4 + 8 + 4 + 16 + 1

// connectResponseFrame encodes a ConnectResponse frame, length prefix
// included, into one allocation (a growing encoder took four).
func connectResponseFrame(resp *jute.ConnectResponse) []byte {
	enc := jute.NewEncoder(make([]byte, 0, connectResponseFrameSize))
	start := enc.StartFrame()
	enc.WriteRecord(resp)
	enc.EndFrame(start)
	return enc.Bytes()
}

// endpoint is the per-connection state the request path builds entries
// with.
type endpoint struct {
	sessionID int64
	connID    uint64 // unique per connection across members and restarts
	writeSeq  uint64 // sequence number of the last proposed write
}

// checkWrite is the check a write passes before it is proposed: its body
// must decode as the request of op within maxLen (0, or the code it is
// refused with).
func checkWrite(op int32, body []byte, maxLen int) int32 {
	return new(writeDecoder).check(op, body, maxLen)
}

// writeEntry builds the entry of the connection's next write. It carries
// the proposer's write options: every member decides the write with them,
// as ZooKeeper's followers take the leader's decision (entry.Opts). Body is
// not copied.
func (ep *endpoint) writeEntry(xid, op int32, body []byte, auth []jute.Id, opts znode.Options) *entry {
	ep.writeSeq++
	return &entry{Type: op, SessionID: ep.sessionID, Cxid: xid, ConnID: ep.connID, Seq: ep.writeSeq,
		Auth: auth, Body: body, Opts: writeOpts(opts)}
}

// closeEntry builds the entry of the connection's closeSession request.
func (ep *endpoint) closeEntry(xid int32) *entry {
	ep.writeSeq++
	return &entry{Type: entryCloseSession, SessionID: ep.sessionID, Cxid: xid, ConnID: ep.connID, Seq: ep.writeSeq}
}

// syncBarrier reports whether a sync is answered only after a ReadIndex
// barrier applied (always, but under the sync-without-barrier mutation):
// reads sent after it then see every write committed before it was sent.
func syncBarrier() bool { return !mutation.Enabled(mutation.SyncWithoutBarrier) }

// writeReplyBody is the reply code and body of an applied write of op.
func writeReplyBody(op int32, r *writeResult) (int32, jute.Record) {
	return new(replyBodies).of(op, r)
}

// replyBodies holds the records of write replies and of node reads
// (readNode), reused by one connection's writer: a reply is encoded as soon
// as it is built, and the record is not used after that.
type replyBodies struct {
	create    jute.CreateResponse
	create2   jute.Create2Response
	stat      jute.StatResponse
	multi     jute.MultiResponse
	data      jute.GetDataResponse
	children  jute.GetChildrenResponse
	children2 jute.GetChildren2Response
	// names is the scratch the children's names are listed into, kept
	// across reads (reset) unless it grew past maxKeptNames.
	names []string
}

// maxKeptNames bounds the children's names a connection's replyBodies keeps
// room for between reads: one listing of a large node does not hold its
// size for the connection's life.
const maxKeptNames = 1024

// reset drops every record's values, keeping the names scratch (emptied)
// when it is small.
func (b *replyBodies) reset() {
	names := b.names
	clear(names[:cap(names)])
	if cap(names) > maxKeptNames {
		names = nil
	}
	*b = replyBodies{names: names[:0]}
}

// of is writeReplyBody with b's records, valid until its next call.
func (b *replyBodies) of(op int32, r *writeResult) (int32, jute.Record) {
	if r.Err != 0 {
		return r.Err, nil
	}
	switch op {
	case jute.OpCreate:
		b.create = jute.CreateResponse{Path: r.Res.Path}
		return 0, &b.create
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		b.create2 = jute.Create2Response{Path: r.Res.Path, Stat: r.Res.Stat}
		return 0, &b.create2
	case jute.OpSetData, jute.OpSetACL:
		b.stat = jute.StatResponse{Stat: r.Res.Stat}
		return 0, &b.stat
	case jute.OpMulti:
		b.multi = jute.MultiResponse{Results: r.Res.Multi}
		return 0, &b.multi
	}
	return 0, nil
}

// readNode answers exists, getData, getChildren and getChildren2 against
// sm's tree for ids, and registers w's watch under the same read lock as
// the read, so no change can fall between the two. It returns the reply's
// zxid, code and body; the body is one of b's records (valid until b is
// used again), or a new record when b is nil.
func readNode(sm *stateMachine, w watcher, op int32, r *jute.PathWatchRequest, ids []jute.Id, b *replyBodies) (int64, int32, jute.Record) {
	if b == nil {
		b = new(replyBodies)
	}
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	zxid := sm.lastZxid.Load()
	tree := sm.tree
	exists, allowed := tree.CheckPermission(r.Path, jute.PermRead, ids)
	if op == jute.OpExists {
		if strings.IndexByte(r.Path, 0) >= 0 {
			return zxid, jute.ErrBadArguments, nil // exists checks only for NUL
		}
		if r.Watch {
			sm.watches.addData(w, r.Path) // set even when the node is missing
		}
		if !exists {
			return zxid, jute.ErrNoNode, nil
		}
		if !allowed {
			return zxid, jute.ErrNoAuth, nil
		}
		st, _ := tree.Exists(r.Path)
		b.stat = jute.StatResponse{Stat: st}
		return zxid, 0, &b.stat
	}
	if !exists {
		return zxid, jute.ErrNoNode, nil
	}
	if !allowed {
		return zxid, jute.ErrNoAuth, nil
	}
	switch op {
	case jute.OpGetData:
		data, st, _ := tree.GetData(r.Path)
		if r.Watch {
			sm.watches.addData(w, r.Path)
		}
		b.data = jute.GetDataResponse{Data: data, Stat: st}
		return zxid, 0, &b.data
	default:
		children, st, _ := tree.AppendChildren(b.names[:0], r.Path)
		if children == nil {
			children = []string{}
		}
		b.names = children
		if r.Watch {
			sm.watches.addChild(w, r.Path)
		}
		if op == jute.OpGetChildren {
			b.children = jute.GetChildrenResponse{Children: children}
			return zxid, 0, &b.children
		}
		b.children2 = jute.GetChildren2Response{Children: children, Stat: st}
		return zxid, 0, &b.children2
	}
}

// encodeReply encodes a reply frame with enc (reset first); body is written
// only when code is 0.
func encodeReply(enc *jute.Encoder, xid int32, zxid int64, code int32, body jute.Record) []byte {
	if code != 0 {
		body = nil
	}
	return encodeReplyWithBody(enc, xid, zxid, code, body)
}

func encodeReplyWithBody(enc *jute.Encoder, xid int32, zxid int64, code int32, body jute.Record) []byte {
	enc.Reset()
	start := enc.StartFrame()
	enc.WriteRecord(&jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code})
	if body != nil {
		enc.WriteRecord(body)
	}
	enc.EndFrame(start)
	return enc.Bytes()
}
