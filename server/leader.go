package server

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
)

// sessionLeader is the leader-side session logic of one member: what a
// leader change does (the tracker reset, the term the expiry decisions are
// fenced with, the leader flag), the expiry round (session expiries and
// lock-delay's due removals) and the container and TTL removal round. It
// is step-driven and clock-injected and starts no goroutine: the server's
// raft goroutine calls leaderChange, its expiry and container loops call
// expiryRound and containerRound with time.Now (server.go); the
// deterministic simulator calls the same steps through SessionLeader
// (replica.go) with its simulated clock.
//
// Concurrency: leaderChange, expiryRound and containerRound may run at the
// same time on different goroutines (the flag and terms are atomics; the
// tracker and the state machine lock themselves). expiryRound owns the
// decisions it carries from round to round and must not run concurrently
// with itself; nor must containerRound, nor leaderChange.
type sessionLeader struct {
	sm      *stateMachine
	tracker *session.Tracker
	hooks   leaderHooks
	cfg     leaderConfig
	log     zerolog.Logger

	leader   atomic.Bool
	leaderID atomic.Uint64 // the last leader raft reported; 0 = none
	// term is the raft term in which this member became leader; its expiry
	// decisions carry it (see expireRecord). Set before leader.
	term atomic.Uint64
	// seenTerm is the term of the last leader change reported, whoever
	// leads; only the follower-expiry mutation decides with it.
	seenTerm atomic.Uint64

	// Owned by expiryRound.
	decided map[int64]expiryDecision
	delayed map[int64]time.Time

	// interleave, when set, runs in leaderChange between its two steps
	// (after the tracker reset, before the leader flag is raised), where
	// the server's expiry loop, on its own goroutine, may run a round: a
	// test or the simulator runs one there.
	interleave func()
}

// leaderConfig is what a sessionLeader decides with.
type leaderConfig struct {
	// retryAfter: a decision not applied after this long is proposed again.
	retryAfter time.Duration
	// lockDelayMs and lockDelayPaths: zkraft.lockDelayMs and
	// zkraft.lockDelayPaths, carried by the expire entries (none when unset).
	lockDelayMs    int64
	lockDelayPaths []string
}

// leaderHooks receives what a sessionLeader decides.
type leaderHooks interface {
	// leaderMoved runs in leaderChange when the known leader was replaced
	// by another: proposals in flight fail (Server.failPendingProposals).
	leaderMoved()
	// proposeDecision proposes one decision of the leader (an expiry, a
	// lock-delay removal, a container or TTL removal); false when the
	// member is stopping, which ends the round.
	proposeDecision(e *entry) bool
}

func newSessionLeader(sm *stateMachine, tracker *session.Tracker, cfg leaderConfig, hooks leaderHooks,
	log zerolog.Logger) *sessionLeader {
	return &sessionLeader{sm: sm, tracker: tracker, cfg: cfg, hooks: hooks, log: log,
		decided: map[int64]expiryDecision{}, delayed: map[int64]time.Time{}}
}

// isLeader reports whether this member acts as the leader.
func (l *sessionLeader) isLeader() bool { return l.leader.Load() }

// leaderChange is consensus.Config.OnLeaderChange's session part. It
// reports whether this member just became leader.
func (l *sessionLeader) leaderChange(isLeader bool, leaderID, term uint64) (became bool) {
	was := l.leader.Load()
	l.seenTerm.Store(term)
	if prev := l.leaderID.Swap(leaderID); prev != 0 && prev != leaderID {
		l.hooks.leaderMoved()
	}
	if !isLeader || was {
		l.leader.Store(isLeader)
		return false
	}
	if mutation.Enabled(mutation.LateTrackerReset) {
		// Known wrong (issue 8 item 2 reverted): the flag is raised
		// before the reset, so an expiry round in between reads the
		// follower's stale tracker as a leader's.
		l.term.Store(term)
		l.leader.Store(true)
		l.interleaved()
		l.resetTracker()
		return true
	}
	// A new leader gives every session a fresh timeout, as ZooKeeper does.
	// The tracker is reset before the leader flag is raised: the expiry
	// round acts only on a leader, and this member's tracker was not
	// refreshed by other members' liveness reports while it followed, so
	// it must never be read as a leader's before the reset.
	l.resetTracker()
	l.term.Store(term)
	l.interleaved()
	l.leader.Store(true)
	return true
}

func (l *sessionLeader) resetTracker() {
	l.sm.mu.RLock()
	all := l.sm.sessions.All()
	l.sm.mu.RUnlock()
	l.tracker.ResetAll(all)
}

func (l *sessionLeader) interleaved() {
	if l.interleave != nil {
		l.interleave()
	}
}

// expiryRound is one round of the expiry loop at now: on the leader, it
// proposes the expiry of every session the tracker reports expired (and
// again a close not applied after retryAfter), then the removal of every
// dead session's lock-delayed ephemerals that are due. It returns the
// sessions whose expiry it proposed.
func (l *sessionLeader) expiryRound(now time.Time) []int64 {
	proposed := decideExpiries(l.leader.Load(), l.tracker, l.sm, now, l.cfg.retryAfter, l.decided, l.proposeExpiry, l.log)
	decideDelayedDeletions(l.leader.Load(), l.sm, now, l.cfg.retryAfter, l.delayed, l.proposeDelayedDeletion)
	return proposed
}

// proposeExpiry proposes the expiry of a session, fenced by this leader's
// term and the session's connection when the leader decided (see
// expireRecord); a failed proposal is retried by the expiry round (the
// session stays marked closing). With lock-delay configured, the entry
// carries this leader's delay and paths (entryExpireSessionDelayed).
func (l *sessionLeader) proposeExpiry(id int64, connID uint64) {
	term := l.term.Load()
	if mutation.Enabled(mutation.FollowerExpiry) && !l.leader.Load() {
		// Known wrong, with the decision itself (decideExpiries): a
		// follower fences with the term it follows in.
		term = l.seenTerm.Load()
	}
	l.hooks.proposeDecision(expiryEntry(id, term, connID, l.cfg.lockDelayMs, l.cfg.lockDelayPaths))
}

// proposeDelayedDeletion proposes the removal of the ephemerals a
// lock-delay kept for the dead session id, at timeMs; a failed proposal is
// retried by the expiry round.
func (l *sessionLeader) proposeDelayedDeletion(id int64, timeMs int64) {
	l.hooks.proposeDecision(&entry{Type: entryDeleteDelayed, SessionID: id, Time: timeMs})
}

// containerRound is one round of the container loop at now: on the leader,
// it proposes the removal of every empty container that had a child and
// every expired, empty TTL node (znode's ExpiryCandidates); apply checks
// the condition again with the entry's time. False when the member is
// stopping.
func (l *sessionLeader) containerRound(now time.Time) bool {
	if !l.leader.Load() {
		return true
	}
	ms := now.UnixMilli()
	l.sm.mu.RLock()
	containers, ttls := l.sm.tree.ExpiryCandidates(ms)
	l.sm.mu.RUnlock()
	for _, list := range []struct {
		typ   int32
		paths []string
	}{{entryDeleteContainer, containers}, {entryDeleteTTL, ttls}} {
		for _, p := range list.paths {
			e := &entry{Type: list.typ, Time: ms, Body: jute.Marshal(&jute.PathRequest{Path: p})}
			if !l.hooks.proposeDecision(e) {
				return false
			}
		}
	}
	return true
}
