package server

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// This file is the seam for tools that drive consensus themselves (the
// deterministic simulator, cmd/zksim): the replicated state machine of one
// member, the entries the request path proposes and the leader-side session
// logic (leader change, expiry, lock-delay and container/TTL rounds),
// exactly as the server uses them. It only exposes the server's
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
	Type      int32
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
		Seq: p.Seq, Type: p.Type, Body: p.Body, Opts: writeOpts(p.Options)}
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
