package server

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// This file is the seam for tools that drive consensus themselves (the
// deterministic simulator, cmd/zksim): the replicated state machine of one
// member, the entries the request path proposes, a client connection's
// request handling and request queue without its goroutines (Endpoint,
// on the requestQueue conn.go drives) and the leader-side
// session logic (leader change, expiry, lock-delay and container/TTL
// rounds), exactly as the server uses them. It only exposes the server's
// own code: the body builders below are the ones the request path calls.

// Replica is one member's replicated state (the data tree, the sessions and
// the per-connection write order), applied by the server's own apply code.
// It is not safe for concurrent use with its hooks: hooks run inside Apply
// and Restore.
type Replica struct {
	sm    *stateMachine
	hooks ReplicaHooks
}

// Applied is the outcome of one applied entry, for the member that proposed
// it (Proposer, ReqID as given in the Proposal).
type Applied struct {
	Proposer  uint64
	ReqID     uint64
	SessionID int64
	Type      int32
	Zxid      int64
	Err       int32     // ZooKeeper error code, 0 on success
	Path      string    // create: the created path
	Stat      jute.Stat // create, setData: the node's stat after the write
	Multi     []jute.MultiResult
}

// ReplicaHooks receives what a Replica's apply tells the server.
type ReplicaHooks interface {
	Applied(a Applied)
	SessionCreated(s session.Session)
	SessionClosed(id int64, expired bool)
	// SessionTouched runs before an attach entry is applied.
	SessionTouched(id int64)
	ExpiryRefused(s session.Session)
}

type replicaHooks struct{ h ReplicaHooks }

func (r replicaHooks) applied(e *entry, res applyResult) {
	r.h.Applied(Applied{Proposer: e.Proposer, ReqID: e.ReqID, SessionID: e.SessionID, Type: e.Type, Zxid: res.Zxid,
		Err: res.Err, Path: res.Res.Path, Stat: res.Res.Stat, Multi: res.Res.Multi})
}
func (r replicaHooks) sessionCreated(s session.Session)               { r.h.SessionCreated(s) }
func (r replicaHooks) sessionClosed(id int64, expired bool, _ uint64) { r.h.SessionClosed(id, expired) }
func (r replicaHooks) sessionTouched(id int64)                        { r.h.SessionTouched(id) }
func (r replicaHooks) expiryRefused(s session.Session)                { r.h.ExpiryRefused(s) }
func (r replicaHooks) configChanged([]byte)                           {}
func (r replicaHooks) stateReplaced()                                 {}

// NewReplica returns an empty replica whose apply reports to hooks.
func NewReplica(opts znode.Options, hooks ReplicaHooks, log zerolog.Logger) *Replica {
	return &Replica{
		sm:    newStateMachine(opts, newWatchManager(), replicaHooks{hooks}, log),
		hooks: hooks,
	}
}

// Apply applies the raft entry data at index in term (consensus.StateMachine).
func (r *Replica) Apply(index, term uint64, data []byte) error { return r.sm.Apply(index, term, data) }

// Snapshot returns the replica's state as the server snapshots it.
func (r *Replica) Snapshot() ([]byte, error) { return r.sm.Snapshot() }

// Restore replaces the state with a snapshot taken at raft index.
func (r *Replica) Restore(index uint64, data []byte) error { return r.sm.Restore(index, data) }

// LastZxid is the zxid of the last applied entry.
func (r *Replica) LastZxid() int64 { return r.sm.lastZxid.Load() }

// Sessions returns the live sessions.
func (r *Replica) Sessions() []session.Session {
	r.sm.mu.RLock()
	defer r.sm.mu.RUnlock()
	return r.sm.sessions.All()
}

// HasSession reports whether session id is live.
func (r *Replica) HasSession(id int64) bool { _, ok := r.sm.session(id); return ok }

// GetData reads a node. The data is a read-only view of the tree's own
// bytes (znode.Tree.GetData): writing into it corrupts the node or, for
// some values, faults the process; copy it to change it.
func (r *Replica) GetData(path string) ([]byte, jute.Stat, bool) {
	r.sm.mu.RLock()
	defer r.sm.mu.RUnlock()
	return r.sm.tree.GetData(path)
}

// GetChildren lists a node's children.
func (r *Replica) GetChildren(path string) ([]string, bool) {
	r.sm.mu.RLock()
	defer r.sm.mu.RUnlock()
	c, _, ok := r.sm.tree.GetChildren(path)
	return c, ok
}

// SessionLeader is the server's leader-side session logic (sessionLeader,
// leader.go) on a Replica: the leader change, the expiry round (session
// expiries and lock-delay's due removals) and the container and TTL
// removal round, driven step by step with the caller's clock, exactly as
// the server's raft goroutine and its expiry and container loops drive it
// with time.Now. Not safe for concurrent use with the Replica.
type SessionLeader struct{ l *sessionLeader }

// LeaderConfig is what a SessionLeader decides with.
type LeaderConfig struct {
	RetryAfter     time.Duration // a decision not applied after this long is proposed again
	LockDelayMs    int64         // zkraft.lockDelayMs (0: none)
	LockDelayPaths []string      // zkraft.lockDelayPaths
}

// LeaderHooks receives what a SessionLeader decides.
type LeaderHooks interface {
	// LeaderMoved runs in LeaderChange when the known leader was replaced
	// by another: the server fails its proposals in flight.
	LeaderMoved()
	// Propose proposes a decision of the leader (Type, SessionID, TimeMs
	// when the decision carries its time, Body); false ends the round, as
	// a stopping server does.
	Propose(p Proposal) bool
	// Interleave runs in LeaderChange between its two steps, where the
	// server's expiry loop may run a round on its own goroutine: after the
	// tracker reset and the term, before the leader flag (or, under the
	// late-tracker-reset mutation, after the flag, before the reset).
	Interleave()
}

type replicaLeaderHooks struct{ h LeaderHooks }

func (r replicaLeaderHooks) leaderMoved() { r.h.LeaderMoved() }
func (r replicaLeaderHooks) proposeDecision(e *entry) bool {
	return r.h.Propose(Proposal{Type: e.Type, SessionID: e.SessionID, TimeMs: e.Time, Body: e.Body})
}

// NewSessionLeader returns the leader-side session logic of this replica's
// member, deciding from tracker (which the member's apply hooks and
// liveness keep, as the server's do).
func (r *Replica) NewSessionLeader(tracker *session.Tracker, cfg LeaderConfig, hooks LeaderHooks) *SessionLeader {
	l := newSessionLeader(r.sm, tracker, leaderConfig{retryAfter: cfg.RetryAfter, lockDelayMs: cfg.LockDelayMs,
		lockDelayPaths: cfg.LockDelayPaths}, replicaLeaderHooks{hooks}, r.sm.log)
	l.interleave = hooks.Interleave
	return &SessionLeader{l: l}
}

// LeaderChange is the member's consensus OnLeaderChange, as the server's
// (Server.onLeaderChange); it reports whether the member just became leader.
func (l *SessionLeader) LeaderChange(isLeader bool, leaderID, term uint64) (became bool) {
	return l.l.leaderChange(isLeader, leaderID, term)
}

// IsLeader reports the leader flag the rounds act on.
func (l *SessionLeader) IsLeader() bool { return l.l.isLeader() }

// Term is the raft term in which the member last became leader.
func (l *SessionLeader) Term() uint64 { return l.l.term.Load() }

// ExpiryRound is one round of the server's expiry loop at now; it returns
// the sessions whose expiry it proposed.
func (l *SessionLeader) ExpiryRound(now time.Time) []int64 { return l.l.expiryRound(now) }

// ContainerRound is one round of the server's container loop at now.
func (l *SessionLeader) ContainerRound(now time.Time) bool { return l.l.containerRound(now) }

// Proposal is an entry as the server's request path builds it.
type Proposal struct {
	Proposer  uint64
	ReqID     uint64
	TimeMs    int64
	SessionID int64
	ConnID    uint64
	Seq       uint64
	Cxid      int32 // the client's xid of a client request
	Type      int32
	Auth      []jute.Id // the connection's auth ids a client write is checked with
	Body      []byte
	// Options are the proposer's write options a client write is decided
	// with (TTL nodes need ExtendedTypesEnabled), as the request path
	// takes them from the member's configuration.
	Options znode.Options
}

// Proposal types that are not client opcodes.
const (
	ProposalCreateSession = entryCreateSession
	ProposalAttachSession = entryAttachSession
	ProposalExpireSession = entryExpireSession
	ProposalCloseSession  = entryCloseSession
	// The leader's decisions (SessionLeader).
	ProposalExpireSessionDelayed = entryExpireSessionDelayed
	ProposalDeleteDelayed        = entryDeleteDelayed
	ProposalDeleteContainer      = entryDeleteContainer
	ProposalDeleteTTL            = entryDeleteTTL
)

// Encode returns the raft entry data of p.
func (p *Proposal) Encode() []byte {
	e := entry{Proposer: p.Proposer, ReqID: p.ReqID, Time: p.TimeMs, SessionID: p.SessionID, ConnID: p.ConnID,
		Seq: p.Seq, Cxid: p.Cxid, Type: p.Type, Auth: p.Auth, Body: p.Body, Opts: writeOpts(p.Options)}
	return e.data()
}

// CreateSessionBody is the body of a createSession proposal.
func CreateSessionBody(id int64, timeoutMs int32, password []byte) []byte {
	return jute.Marshal(&sessionRecord{ID: id, TimeoutMs: timeoutMs, Password: password})
}

// ExpireBody is the body of an expire proposal: the fence of a decision
// taken in term while the session's connection was connID.
func ExpireBody(term uint64, connID uint64) []byte {
	return jute.Marshal(&expireRecord{Term: term, ConnID: connID})
}

// Endpoint is one client connection's request handling on a Replica, the
// server's own code (endpoint.go, requestqueue.go, replyqueue.go) without
// the connection's goroutines and socket, driven step by step. Receive
// hands it request frames as the connection's reader reads them; Next
// handles them in order as the reader does: a request is decoded, checked
// and queued in the connection's requestQueue, and a write is turned into
// the entry the server proposes (with the connection's session, connection
// id, write sequence number, xid, auth ids and write options) only once
// every read, sync and refusal before it was answered (a write waits there,
// and the frames after it with it, as the reader waits); Replies answers
// the queue in arrival order as the connection's writer does: the oldest
// request once it is ready (a write applied, a sync's barrier applied), a
// read served against the replica's tree, with its watch registered, only
// on its turn, notifications and ping replies before the reply that must
// follow them. The caller owns proposing (Applied and Failed report the
// outcome), the ReadIndex barrier of a sync (Synced), the wire and the
// handshake. Not safe for concurrent use with the Replica.
type Endpoint struct {
	r         *Replica
	ep        endpoint
	auth      []jute.Id
	opts      znode.Options
	maxLen    int
	enc       *jute.Encoder
	watches   watchIndex
	q         requestQueue
	replyZxid int64    // zxid of the last reply built (requestQueue.turn)
	inbox     [][]byte // frames received, not handled yet
	overflow  bool     // the client left too many notifications unread
	// closed: a closeSession was handled; nothing after it is, as the
	// server's reader stops reading there (handleClose).
	closed bool
	// closing reports a session whose close was decided (the server's
	// tracker, IsClosing); its writes are refused with SessionExpired, as
	// the server's handleWrite does. nil: none.
	closing func(sessionID int64) bool
}

// ErrNotInEndpoint is returned by Endpoint.Next for a request the Endpoint
// does not handle (auth, SASL, reconfig, the other reads): only the
// server's connection answers those.
var ErrNotInEndpoint = errors.New("server: request not handled by Endpoint")

// errNotProposed: the caller reported that a proposal or a sync barrier of
// the connection failed (Endpoint.Failed).
var errNotProposed = errors.New("proposal or barrier failed")

// NewEndpoint returns the request handling of connection connID attached
// to session sessionID (after its createSession or attach entry applied),
// with auth ids auth (the server's connections start with their ip id),
// proposing its writes with opts and reading frames up to maxLen bytes
// (jute.maxbuffer). closing reports a session the member decided to end
// (the server's tracker, ConnectConfig.Closing; nil: none): a write of a
// closing session is refused with SessionExpired, as on the server. The
// caller marks the session closing once it proposed a closeSession Step,
// as the server does.
func (r *Replica) NewEndpoint(sessionID int64, connID uint64, auth []jute.Id, opts znode.Options, maxLen int,
	closing func(sessionID int64) bool) *Endpoint {
	e := &Endpoint{r: r, ep: endpoint{sessionID: sessionID, connID: connID}, auth: auth, opts: opts,
		maxLen: maxLen, enc: jute.NewEncoder(nil), closing: closing}
	e.q.init(endpointInFlight, maxQueuedNotifications, &e.replyZxid)
	e.q.buildsEarly = true // one goroutine: mutations may build a read at arrival
	return e
}

// endpointInFlight bounds an Endpoint's unanswered requests, as
// maxInFlight does a connection's (smaller: an Endpoint's caller pipelines
// a few requests, and one is made per simulated connection).
const endpointInFlight = 64

// Step is a request Next handled that needs the caller.
type Step struct {
	Xid int32
	Op  int32
	// Propose, if not nil, is the entry to propose (the caller stamps
	// Proposer, ReqID and TimeMs), then report its outcome with Applied or
	// Failed. A failed proposal, or a result of ErrConnectionLoss (an
	// earlier write of the connection was lost), closes the connection
	// without a reply when its turn comes.
	Propose *Proposal
	// Sync: a sync, answered once the caller reports with Synced that a
	// ReadIndex barrier applied (Failed: no barrier).
	Sync bool
	// Close: the frame is malformed; the server closes the connection at
	// once, with no reply.
	Close bool
	it    *item
}

// Receive queues a request frame (request header and body, without the
// length prefix), as the connection's reader reads it; Next handles it.
func (e *Endpoint) Receive(frame []byte) { e.inbox = append(e.inbox, frame) }

// Next handles the received frames in order, as the server's connection
// reader does, until none is left, the queue is full (back-pressure), a
// write must wait for the reads, syncs and refusals before it to be
// answered (Replies), or a closeSession was handled (the server's reader
// reads nothing after it: neither does Next, ever again); it returns the steps the caller must act on, and how
// many frames it handled.
func (e *Endpoint) Next() (steps []Step, handled int, err error) {
	for len(e.inbox) > 0 && !e.closed && !e.q.full() {
		s, ok, err := e.handle(e.inbox[0])
		if err != nil {
			e.inbox = e.inbox[1:] // not handled: the server would close
			return steps, handled, err
		}
		if !ok {
			return steps, handled, nil
		}
		e.inbox = e.inbox[1:]
		handled++
		if s.Propose != nil || s.Sync || s.Close {
			steps = append(steps, s)
		}
		if s.Close {
			return steps, handled, nil
		}
	}
	return steps, handled, nil
}

// queue queues it as the connection's reader does (conn.enqueue).
func (e *Endpoint) queue(it *item) {
	e.q.arrive(it)
	e.q.push(it) // not full: Next checked

}

// refuse queues a reply that needs no waiting, with the last applied zxid
// when it is built (conn.enqueueReply).
func (e *Endpoint) refuse(xid, code int32) {
	e.queue(refusalItem(func(*item) ([]byte, bool) {
		return e.reply(xid, e.r.sm.lastZxid.Load(), code, nil), false
	}))
}

// handle handles one frame; ok false: it is a write that must wait
// (requestQueue.mayPropose), handle it again later.
func (e *Endpoint) handle(frame []byte) (s Step, ok bool, err error) {
	if len(frame) < 8 {
		return Step{Close: true}, true, nil
	}
	var hdr jute.RequestHeader
	_ = jute.NewDecoder(frame, len(frame)).ReadRecord(&hdr)
	body := frame[8:]
	xid, op := hdr.Xid, hdr.Type
	s = Step{Xid: xid, Op: op}
	switch op {
	case jute.OpPing:
		if !e.q.pushPing(e.r.sm.lastZxid.Load) {
			e.overflow = true
		}
	case jute.OpDeleteContainer:
		e.refuse(xid, jute.ErrBadArguments)
	case jute.OpCheck:
		e.refuse(xid, jute.ErrUnimplemented)
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti:
		if code := checkWrite(op, body, e.maxLen); code != 0 {
			e.refuse(xid, code)
			return s, true, nil
		}
		if e.closing != nil && e.closing(e.ep.sessionID) {
			e.refuse(xid, jute.ErrSessionExpired)
			return s, true, nil
		}
		if !e.q.mayPropose() {
			return s, false, nil
		}
		en := e.ep.writeEntry(xid, op, append([]byte(nil), body...), e.auth, e.opts)
		s.Propose = e.proposal(en)
		s.Propose.Options = e.opts
		s.it = writeItem(time.Time{}, func(it *item) ([]byte, bool) {
			code, rec := writeReplyBody(op, &it.res)
			return e.reply(xid, it.res.Zxid, code, rec), false
		})
		e.queue(s.it)
	case jute.OpCloseSession:
		if !e.q.mayPropose() {
			return s, false, nil
		}
		s.Propose = e.proposal(e.ep.closeEntry(xid))
		s.it = writeItem(time.Time{}, func(it *item) ([]byte, bool) { return e.reply(xid, it.res.Zxid, 0, nil), true })
		e.queue(s.it)
		e.closed = true
	case jute.OpSync:
		var r jute.PathRequest
		if jute.Unmarshal(body, &r) != nil {
			e.refuse(xid, jute.ErrMarshallingError)
			return s, true, nil
		}
		barrier := syncBarrier()
		it := syncItem(barrier, time.Time{}, func(*item) ([]byte, bool) {
			return e.reply(xid, e.r.sm.lastZxid.Load(), 0, &jute.PathRequest{Path: r.Path}), false
		})
		if barrier {
			s.Sync, s.it = true, it
		}
		e.queue(it)
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		var r jute.PathWatchRequest
		if jute.NewDecoder(body, e.maxLen).ReadRecord(&r) != nil {
			e.refuse(xid, jute.ErrMarshallingError)
			return s, true, nil
		}
		e.queue(readItem(func(*item) ([]byte, bool) {
			z, code, rec := readNode(e.r.sm, e, op, &r, e.auth, nil)
			return e.reply(xid, z, code, rec), false
		}))
	default:
		return s, false, fmt.Errorf("%w: opcode %d", ErrNotInEndpoint, op)
	}
	return s, true, nil
}

func (e *Endpoint) proposal(en *entry) *Proposal {
	return &Proposal{SessionID: en.SessionID, ConnID: en.ConnID, Seq: en.Seq, Cxid: en.Cxid, Type: en.Type,
		Auth: en.Auth, Body: en.Body}
}

// Applied reports the applied result of s's proposal.
func (e *Endpoint) Applied(s Step, a Applied) {
	// An Err of ErrConnectionLoss is errOutOfOrder: no reply.
	s.it.res = writeResult{Zxid: a.Zxid, Err: a.Err, Res: znode.Result{Path: a.Path, Stat: a.Stat, Multi: a.Multi}}
	s.it.complete()
}

// Synced reports that the ReadIndex barrier of sync s applied.
func (e *Endpoint) Synced(s Step) { s.it.complete() }

// Failed reports that s's proposal or barrier failed: the connection is
// closed, with no reply, when its turn comes.
func (e *Endpoint) Failed(s Step) {
	s.it.err = errNotProposed
	s.it.complete()
}

// Replies answers the queued requests in arrival order, as the server's
// connection writer does, up to the first one that is not ready: it
// returns the frames (length prefix included) the connection writes now,
// notifications and ping replies in their place among the replies, and
// whether the connection is then closed (a closeSession answered, a
// request that failed without an answer, a client that does not read its
// notifications).
func (e *Endpoint) Replies() (wire []byte, closed bool) {
	write := func(pings, events []queuedEvent) {
		_ = writeOOB(pings, events, func(f []byte) bool { wire = append(wire, f...); return true })
	}
	for !e.overflow {
		it := e.q.front()
		if it == nil {
			write(e.q.idle())
			return wire, false
		}
		if !it.isReady() {
			write(e.q.whileWaiting(e.r.sm.lastZxid.Load()))
			return wire, false
		}
		if !e.q.answers(it) {
			return wire, true
		}
		frame, closeAfter, _, pings, events := e.q.turn(it)
		e.q.pop()
		write(pings, events)
		wire = append(wire, frame...)
		if closeAfter {
			return wire, true
		}
	}
	return wire, true
}

// Wake reports whether the server's connection writer would be woken now
// though no request of the connection moved: notifications or ping replies
// are queued (conn.notify wakes it), or the client left too many unread
// (the server closes the connection). The caller then runs Replies.
func (e *Endpoint) Wake() bool { return e.overflow || e.q.queuedOOB() }

// Close drops the endpoint's watches, as the server does when a connection
// ends.
func (e *Endpoint) Close() { e.r.sm.watches.removeWatcher(e) }

// reply encodes a reply frame (a copy) and records its zxid.
func (e *Endpoint) reply(xid int32, zxid int64, code int32, body jute.Record) []byte {
	e.replyZxid = zxid
	return append([]byte(nil), encodeReply(e.enc, xid, zxid, code, body)...)
}

// notify implements watcher: the notification of a change made by zxid is
// queued, as on the server's connection.
func (e *Endpoint) notify(frame []byte, zxid int64) {
	if !e.q.pushEvent(zxid, frame) {
		e.overflow = true
	}
}

// ownWatches implements watcher.
func (e *Endpoint) ownWatches() *watchIndex { return &e.watches }

// ConnectConfig is what a member decides connect requests with.
type ConnectConfig struct {
	MinSessionTimeoutMs, MaxSessionTimeoutMs int32 // minSessionTimeout, maxSessionTimeout
	// NewSessionID returns the id of a new session (the server's
	// session.IDGenerator).
	NewSessionID func() int64
	// Rand is read for new sessions' passwords (the server's crypto/rand).
	Rand io.Reader
	// Closing reports a session the leader decided to end (the server's
	// tracker); nil: none.
	Closing func(id int64) bool
}

// Connect is the server's decision on a connect request.
type Connect struct {
	// Reply, if not nil, is the ConnectResponse frame (length prefix
	// included) the connection is answered with before it is closed: the
	// expired answer (timeout 0, session 0, zero password) to a reattach
	// of an unknown, closing or expired session or with a wrong password.
	Reply []byte
	// Propose, if not nil, is the createSession or attach entry to propose
	// (the caller stamps Proposer, ReqID and TimeMs); the answer is
	// Connected of its result. If the proposal fails the server closes the
	// connection without an answer.
	Propose   *Proposal
	SessionID int64 // the session of Propose
	TimeoutMs int32 // the negotiated timeout
	plan      connectPlan
}

// Connect handles a connect request frame (ConnectRequest, without the
// length prefix) of connection connID, as the server's connection does. It
// fails, and the server closes the connection without an answer, if the
// frame is malformed, the client has seen a zxid this replica has not
// applied, or no password could be read.
func (r *Replica) Connect(frame []byte, connID uint64, cfg ConnectConfig) (Connect, error) {
	req, err := decodeConnect(frame)
	if err != nil {
		return Connect{}, err
	}
	plan, err := planConnect(&req, &connectEnv{lastZxid: r.sm.lastZxid.Load(),
		minMs: cfg.MinSessionTimeoutMs, maxMs: cfg.MaxSessionTimeoutMs, connID: connID,
		lookup: r.sm.session, closing: cfg.Closing, newID: cfg.NewSessionID, rand: cfg.Rand})
	if err != nil {
		return Connect{}, err
	}
	c := Connect{plan: plan, TimeoutMs: plan.timeout}
	if plan.entry == nil {
		c.Reply = connectResponseFrame(plan.expiredResponse())
		return c, nil
	}
	e := plan.entry
	c.Propose = &Proposal{Type: e.Type, SessionID: e.SessionID, ConnID: e.ConnID, Body: e.Body}
	c.SessionID = e.SessionID
	return c, nil
}

// Connected is the answer to c once its proposal applied with a: the
// ConnectResponse frame (length prefix included), and whether the
// connection goes on. A failed entry closes the connection without an
// answer (frame nil); a session that ended or moved to another connection
// meanwhile gets the expired answer.
func (r *Replica) Connected(c Connect, a Applied) (frame []byte, ok bool) {
	attachable := a.Err == 0 && r.sm.attachable(c.SessionID, c.plan.entry.ConnID)
	resp, ok := connectOutcome(&c.plan, a.Err, attachable)
	if resp == nil {
		return nil, false
	}
	return connectResponseFrame(resp), ok
}
