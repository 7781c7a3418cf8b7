package server

import (
	"slices"
	"sync"

	"github.com/zkraft/zkraft/session"
)

// LivenessReports is the decision part of the liveness channel of one
// member (see ensemble.go): which sessions its clients touched since the
// last report, the report of a round (sorted ids, batched, for the current
// leader only), and what is kept for the next round when a report may not
// have arrived. It starts no goroutine, reads no clock and opens no socket:
// the server's livenessSender (ensemble.go) delivers its reports over the
// leader's liveness port, the deterministic simulator (internal/sim) over
// its simulated network; both call the same methods.
//
// Invariants and limits:
//   - A session touched on a member that does not lead is in at least one
//     place until a later report on the same link was written: the touched
//     set, a report in flight (between Next and Sent or Failed), or the
//     last report handed to the link to the leader (kept as prev).
//   - A report that failed goes back to the touched set, with the last
//     report handed to the same link before it (a write that returned may
//     still be lost with the connection, which only a later write reveals).
//     Only that last report is put back: when two writes on one connection
//     are lost (the leader's end went away while the writes were still
//     accepted, as across a partition, where they wait in the connection
//     until the heal), the older one is forgotten. That happens around
//     leadership changes, where the new leader's Tracker.ResetAll gives
//     every session its full timeout and makes the loss moot, and when a
//     member is cut off from a leader that stays: it loses what it reported
//     before it noticed the leader gone (lead 0, after which touches wait
//     in the touched set), so such a session's last touch on the leader is
//     earlier than it was, by at most that time.
//   - A report is for the leader its round names; the previous report is
//     kept only while the link goes to that same leader (a former leader's
//     tracker is reset before it leads again, so what it lost is moot).
//
// Touch may be called from any goroutine (the server's connection readers
// call it while the sender runs a round). Next, Sent and Failed must be
// called by one sender, one round at a time: Sent and Failed refer to the
// last report Next returned on the link.
type LivenessReports struct {
	mu      sync.Mutex
	touched map[int64]struct{}
	link    uint64  // the leader the last report was handed to
	prev    []int64 // that report, kept until the link fails or moves
}

// LivenessReport is one round's report: IDs, sorted, for member To.
type LivenessReport struct {
	To  uint64
	IDs []int64
	// NewLink: To is not the leader the last report went to; a sender
	// holding a connection to another member closes it first.
	NewLink bool
}

// NewLivenessReports returns an empty touched set.
func NewLivenessReports() *LivenessReports {
	return &LivenessReports{touched: map[int64]struct{}{}}
}

// Touch records traffic of session id on this member: a leader touches
// its tracker at once; any other member keeps id for its next report.
func (l *LivenessReports) Touch(id int64, isLeader bool, tracker *session.Tracker) {
	if isLeader {
		tracker.Touch(id)
		return
	}
	l.mu.Lock()
	l.touched[id] = struct{}{}
	l.mu.Unlock()
}

// Next is one round: it takes the sessions touched since the last round.
// On the leader they are touched in tracker (this member became leader
// after they were recorded) and there is nothing to send. Otherwise it
// returns the report for leader lead, true, unless nothing was touched or
// no leader is known (lead 0), when the sessions stay for a later round.
// The caller sends the report and then calls Sent or Failed.
func (l *LivenessReports) Next(isLeader bool, lead uint64, tracker *session.Tracker) (LivenessReport, bool) {
	l.mu.Lock()
	if len(l.touched) == 0 || (!isLeader && lead == 0) {
		l.mu.Unlock()
		return LivenessReport{}, false
	}
	ids := make([]int64, 0, len(l.touched))
	for id := range l.touched {
		ids = append(ids, id)
	}
	clear(l.touched)
	r := LivenessReport{To: lead, IDs: ids}
	if !isLeader && lead != l.link {
		l.link, l.prev, r.NewLink = lead, nil, true
	}
	l.mu.Unlock() // the tracker is not called under l.mu (a leaf)
	slices.Sort(ids)
	if isLeader {
		for _, id := range ids {
			tracker.Touch(id)
		}
		return LivenessReport{}, false
	}
	return r, true
}

// Sent records that r was handed to the link to r.To (a write returned).
func (l *LivenessReports) Sent(r LivenessReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.To == l.link {
		l.prev = r.IDs
	}
}

// Failed records that r could not be sent (no address for the leader, a
// dial or write failed): its sessions, and those of the report handed to
// the same link before it, are kept for the next round. The link is over;
// the sender closes its connection.
func (l *LivenessReports) Failed(r LivenessReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range r.IDs {
		l.touched[id] = struct{}{}
	}
	if r.To == l.link {
		for _, id := range l.prev {
			l.touched[id] = struct{}{}
		}
		l.prev = nil
	}
}

// pending returns the sessions waiting for the next round, sorted (tests).
func (l *LivenessReports) pending() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.touched))
	for id := range l.touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ReceiveLiveness applies a liveness report of member from on the member
// that receives it: its sessions are touched in that member's tracker,
// unless from is not a member of the configuration it applied (fromMember
// false: a removed member keeps no session alive). Reports go to the
// member their sender takes for the leader; one that reaches a member that
// no longer leads touches its tracker harmlessly, as a member resets its
// tracker before it acts as leader (sessionLeader.leaderChange). It
// reports whether the report was applied (false: from is no member, and
// nothing was touched).
func ReceiveLiveness(tracker *session.Tracker, fromMember bool, ids []int64) bool {
	if !fromMember {
		return false
	}
	for _, id := range ids {
		tracker.Touch(id)
	}
	return true
}
