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
// request handling without its goroutines (Endpoint) and the leader-side
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

// GetData reads a node.
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
// server's own code (endpoint.go) without the connection's goroutines and
// socket: a request frame is decoded, checked and turned into the entry the
// server proposes (with the connection's session, connection id, write
// sequence number, xid, auth ids and write options) or answered at once
// (a refusal, a ping, a read served against the replica's tree, with its
// watch registered); an applied write's result is turned into its reply
// frame. The caller owns what conn.go's goroutines do: the order of the
// replies (conn.go answers a connection's requests in arrival order, a read
// only after every earlier request was answered), the ReadIndex barrier of
// a sync, proposing, and the handshake. Not safe for concurrent use with
// the Replica.
type Endpoint struct {
	r       *Replica
	ep      endpoint
	auth    []jute.Id
	opts    znode.Options
	maxLen  int
	enc     *jute.Encoder
	watches watchIndex
	events  []byte
}

// ErrNotInEndpoint is returned by Endpoint.Request for a request the
// Endpoint does not handle (auth, SASL, reconfig, the other reads): only
// the server's connection answers those.
var ErrNotInEndpoint = errors.New("server: request not handled by Endpoint")

// NewEndpoint returns the request handling of connection connID attached
// to session sessionID (after its createSession or attach entry applied),
// with auth ids auth (the server's connections start with their ip id),
// proposing its writes with opts and reading frames up to maxLen bytes
// (jute.maxbuffer).
func (r *Replica) NewEndpoint(sessionID int64, connID uint64, auth []jute.Id, opts znode.Options, maxLen int) *Endpoint {
	return &Endpoint{r: r, ep: endpoint{sessionID: sessionID, connID: connID}, auth: auth, opts: opts,
		maxLen: maxLen, enc: jute.NewEncoder(nil)}
}

// Step is what the server does with one request.
type Step struct {
	Xid int32
	Op  int32
	// Reply, if not nil, is the reply frame (length prefix included) the
	// request is answered with when its turn comes.
	Reply []byte
	// Propose, if not nil, is the entry to propose (the caller stamps
	// Proposer, ReqID and TimeMs); the reply is WriteReply of its result.
	// If the proposal fails, or its result is ErrConnectionLoss (an earlier
	// write of the connection was lost), the server closes the connection
	// without a reply.
	Propose *Proposal
	// Sync: the request is a sync; it is answered with SyncReply once a
	// ReadIndex barrier is applied.
	Sync bool
	// Close: the server closes the connection after Reply.
	Close bool
	path  string
}

// Request handles one request frame (request header and body, without the
// length prefix), as the server's connection does when it reads it.
func (e *Endpoint) Request(frame []byte) (Step, error) {
	if len(frame) < 8 {
		return Step{Close: true}, nil
	}
	var hdr jute.RequestHeader
	_ = jute.NewDecoder(frame, len(frame)).ReadRecord(&hdr)
	body := frame[8:]
	s := Step{Xid: hdr.Xid, Op: hdr.Type}
	zxid := e.r.sm.lastZxid.Load()
	switch hdr.Type {
	case jute.OpPing:
		s.Reply = pingFrame(zxid)
	case jute.OpDeleteContainer:
		s.Reply = e.reply(hdr.Xid, zxid, jute.ErrBadArguments, nil)
	case jute.OpCheck:
		s.Reply = e.reply(hdr.Xid, zxid, jute.ErrUnimplemented, nil)
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti:
		if code := checkWrite(hdr.Type, body, e.maxLen); code != 0 {
			s.Reply = e.reply(hdr.Xid, zxid, code, nil)
			return s, nil
		}
		en := e.ep.writeEntry(hdr.Xid, hdr.Type, append([]byte(nil), body...), e.auth, e.opts)
		s.Propose = e.proposal(en)
		s.Propose.Options = e.opts
	case jute.OpCloseSession:
		s.Propose, s.Close = e.proposal(e.ep.closeEntry(hdr.Xid)), true
	case jute.OpSync:
		var r jute.PathRequest
		if jute.Unmarshal(body, &r) != nil {
			s.Reply = e.reply(hdr.Xid, zxid, jute.ErrMarshallingError, nil)
			return s, nil
		}
		s.path = r.Path
		if !syncBarrier() {
			s.Reply = e.SyncReply(s)
			return s, nil
		}
		s.Sync = true
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		var r jute.PathWatchRequest
		if jute.NewDecoder(body, e.maxLen).ReadRecord(&r) != nil {
			s.Reply = e.reply(hdr.Xid, zxid, jute.ErrMarshallingError, nil)
			return s, nil
		}
		z, code, rec := readNode(e.r.sm, e, hdr.Type, &r, e.auth)
		s.Reply = e.reply(hdr.Xid, z, code, rec)
	default:
		return s, fmt.Errorf("%w: opcode %d", ErrNotInEndpoint, hdr.Type)
	}
	return s, nil
}

func (e *Endpoint) proposal(en *entry) *Proposal {
	return &Proposal{SessionID: en.SessionID, ConnID: en.ConnID, Seq: en.Seq, Cxid: en.Cxid, Type: en.Type,
		Auth: en.Auth, Body: en.Body}
}

// WriteReply is the reply frame of s's applied proposal.
func (e *Endpoint) WriteReply(s Step, a Applied) []byte {
	if s.Op == jute.OpCloseSession {
		return e.reply(s.Xid, a.Zxid, 0, nil)
	}
	res := applyResult{Zxid: a.Zxid, Err: a.Err, Res: znode.Result{Path: a.Path, Stat: a.Stat, Multi: a.Multi}}
	code, body := writeReplyBody(s.Op, &res)
	return e.reply(s.Xid, a.Zxid, code, body)
}

// SyncReply is the reply frame of sync s once its ReadIndex barrier was
// applied.
func (e *Endpoint) SyncReply(s Step) []byte {
	return e.reply(s.Xid, e.r.sm.lastZxid.Load(), 0, &jute.PathRequest{Path: s.path})
}

// Events returns the notification frames of the endpoint's watches fired
// since the last call, in zxid order.
func (e *Endpoint) Events() []byte {
	ev := e.events
	e.events = nil
	return ev
}

// Close drops the endpoint's watches, as the server does when a connection
// ends.
func (e *Endpoint) Close() { e.r.sm.watches.removeWatcher(e) }

func (e *Endpoint) reply(xid int32, zxid int64, code int32, body jute.Record) []byte {
	return append([]byte(nil), encodeReply(e.enc, xid, zxid, code, body)...)
}

// notify implements watcher.
func (e *Endpoint) notify(frame []byte, _ int64) { e.events = append(e.events, frame...) }

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
