// Package mutation holds switches that turn on known-wrong behaviour in
// production code paths, so that a checker (cmd/zksim) can prove it catches
// real bugs. Every switch is off by default and only tools that test the
// checkers turn one on; production code reads a switch with one atomic load.
//
// Invariant: with every switch off (the default), the code behaves exactly as
// if this package did not exist.
package mutation

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// Name identifies one mutation.
type Name string

// The known mutations.
const (
	// SkipExpiryFence applies every expire entry, ignoring the fence of the
	// deciding leader's term and the session's connection (server's
	// stateMachine.expiryFence).
	SkipExpiryFence Name = "skip-expiry-fence"
	// FollowerExpiry lets a member that is not the leader decide and propose
	// session expiries from its own tracker (server's expiry decision).
	FollowerExpiry Name = "follower-expiry"
	// IgnoreSetVersion makes setData ignore the expected version (znode).
	IgnoreSetVersion Name = "ignore-set-version"
	// RestoreRaftIndex makes a member restored from a snapshot report the
	// snapshot's raft index as its last zxid instead of the snapshot's own
	// zxid (issue 8 item 7; server's stateMachine.Restore).
	RestoreRaftIndex Name = "restore-raft-index"
	// LeaseReads answers ReadIndex (sync) from the leader's lease instead
	// of a quorum round (consensus.RaftConfig's ReadOnlyOption).
	LeaseReads Name = "lease-reads"
	// AckBeforeDurable makes a member send a Ready's raft messages (its
	// append acknowledgements and votes) before the Ready's hard state and
	// entries are durable (consensus.Core.HandleReady).
	AckBeforeDurable Name = "ack-before-durable"
	// SkipActiveQuorum lets a membership change of the voters through when
	// fewer than a majority of the new voters are known to be running
	// (consensus's checkConfChange, which refuses it with ErrNoActiveQuorum).
	SkipActiveQuorum Name = "skip-active-quorum"
	// SkipLearner adds a new member directly as a voter instead of as a
	// learner promoted once caught up (consensus's membership changes).
	SkipLearner Name = "skip-learner"
	// LateTrackerReset makes a member that becomes leader raise its leader
	// flag before it resets its session tracker (issue 8 item 2 reverted;
	// server's sessionLeader.leaderChange), so an expiry round in between
	// decides from the tracker of a follower.
	LateTrackerReset Name = "late-tracker-reset"
	// EarlyTTL makes a TTL node count as expired once half its TTL passed
	// since its last modification (znode's expired, read by the leader's
	// removal decision and by apply's re-check).
	EarlyTTL Name = "early-ttl"
	// SyncWithoutBarrier answers a sync at once instead of after a
	// ReadIndex barrier (server's request path, syncBarrier), so a read
	// sent after it may be served from a member's stale state.
	SyncWithoutBarrier Name = "sync-without-barrier"
	// ReadOvertakesWrite builds a read's reply when the read arrives
	// instead of on its turn, after every earlier request of its connection
	// was answered (server's requestQueue.arrive), so a read pipelined
	// behind a write of the same connection may not see it.
	ReadOvertakesWrite Name = "read-overtakes-write"
	// WriteOvertakesRead proposes a write at once instead of after every
	// read, sync and refusal sent before it on its connection was answered
	// (server's replyQueue.mayPropose), so an earlier read may show the
	// write, or a later state, and an earlier reply carry a later zxid.
	WriteOvertakesRead Name = "write-overtakes-read"
	// EarlyAckBeforeWrite makes a Ready's write (consensus.ReadyWrite.Write)
	// send the messages that wait for it, a follower's append
	// acknowledgements and votes, when the write starts instead of once it
	// returned.
	EarlyAckBeforeWrite Name = "early-ack-before-write"
	// ApplyUnwritten makes a Core stepping peer messages while it writes
	// (consensus.Core.StepWhileWriting) apply the committed entries of the
	// write still running, before they are durable on this member (the
	// clamp to the mirror's last index dropped).
	ApplyUnwritten Name = "apply-unwritten"
	// TellUncommitted makes a leader stepping acknowledgements while it
	// writes (consensus.Core's tellCommit) tell its followers the last
	// index it writes as the commit index, before a quorum made it durable.
	TellUncommitted Name = "tell-uncommitted"
	// CancelAddKeepsLearners makes a membership change given up while it
	// adds learners (consensus.Core.CancelMemberChange in its add phase)
	// report at once, leaving the learners it added, and the one whose add
	// step is in flight, in the group without naming them.
	CancelAddKeepsLearners Name = "cancel-add-keeps-learners"
)

var all = []Name{SkipExpiryFence, FollowerExpiry, IgnoreSetVersion, RestoreRaftIndex, LeaseReads, AckBeforeDurable,
	SkipActiveQuorum, SkipLearner, LateTrackerReset, EarlyTTL, SyncWithoutBarrier, ReadOvertakesWrite,
	WriteOvertakesRead, EarlyAckBeforeWrite, ApplyUnwritten, TellUncommitted, CancelAddKeepsLearners}

// on[i] is whether all[i] is switched on.
var on = make([]atomic.Bool, len(all))

// All returns the names of the known mutations, in a fixed order.
func All() []Name { return slices.Clone(all) }

// Enabled reports whether mutation n is switched on.
func Enabled(n Name) bool {
	i := slices.Index(all, n)
	return i >= 0 && on[i].Load()
}

// Flag is one mutation's switch, looked up once (Lookup), for code that
// reads it on a hot path: On is a single atomic load.
type Flag struct{ on *atomic.Bool }

// On reports whether the mutation is switched on.
func (f Flag) On() bool { return f.on.Load() }

// Lookup returns the switch of mutation n, which Set and Reset change; it
// panics on an unknown name (a programming error, caught when the package
// that looks it up is initialised).
func Lookup(n Name) Flag {
	i := slices.Index(all, n)
	if i < 0 {
		panic(fmt.Sprintf("mutation: unknown name %q", n))
	}
	return Flag{on: &on[i]}
}

// Set switches mutation n on or off.
func Set(n Name, enabled bool) error {
	i := slices.Index(all, n)
	if i < 0 {
		return fmt.Errorf("mutation: unknown name %q", n)
	}
	on[i].Store(enabled)
	return nil
}

// Reset switches every mutation off.
func Reset() {
	for i := range on {
		on[i].Store(false)
	}
}
