package check

import (
	"fmt"
	"sort"
)

// SessionLife is what a run saw of one session.
type SessionLife struct {
	Session int64
	// Timeout is the negotiated session timeout, in the history's time unit.
	Timeout int64
	// Answered holds the invocation instants of the session's requests
	// (pings included) that a member answered without error, in any order.
	// Each proves the ensemble heard from the session at or after that
	// instant. Leave out answers from a member cut off from the quorum.
	Answered []int64
	// Closed is the instant the client's close was answered, or Never.
	Closed int64
	// Expired is the instant the session's expiry took effect (committed,
	// or the client was told SessionExpired), or Never.
	Expired int64
}

// lastHeard is the latest answered invocation at or before t, and whether
// there is one.
func (s *SessionLife) lastHeard(t int64) (int64, bool) {
	var last int64
	found := false
	for _, c := range s.Answered {
		if c <= t && (!found || c > last) {
			last, found = c, true
		}
	}
	return last, found
}

// SessionsNotExpired checks that no session was expired while its client
// kept being heard: an expiry at E needs a silence of Timeout before it,
// so every answered request invoked at c <= E must satisfy
// E - c >= Timeout - slack. slack absorbs how late the ensemble's view of a
// touch can be (periodic liveness reports, a member that answers for a
// while after it was cut off).
func SessionsNotExpired(sessions []SessionLife, slack int64) error {
	var first *Violation
	firstAt := Never
	for i := range sessions {
		s := &sessions[i]
		if s.Expired == Never {
			continue
		}
		if c, ok := s.lastHeard(s.Expired); ok && s.Expired-c < s.Timeout-slack && s.Expired < firstAt {
			first, firstAt = violationf(CheckerSessionLiveness,
				"session %#x expired at %d, only %d after its request invoked at %d was answered (timeout %d, slack %d)",
				s.Session, s.Expired, s.Expired-c, c, s.Timeout, slack), s.Expired
		}
	}
	if first == nil {
		return nil
	}
	return first
}

// EphemeralLife is what a run saw of one ephemeral znode.
type EphemeralLife struct {
	Path string
	// Owner is the session that created the znode; it must be listed in
	// the sessions passed to EphemeralLifetimes.
	Owner int64
	// Gone is the first instant the znode was seen absent (or deleted), or
	// Never when it was still present at the end.
	Gone int64
}

// EphemeralLifetimes checks that no ephemeral znode outlives its session by
// more than bound: its session ends at the earlier of its close and its
// last answered request plus the timeout (or its expiry, if earlier), and
// the znode must be gone by then plus bound; one still present at end
// (Gone Never) must have a session that had not ended bound before end.
// bound is the detection bound: how long expiry detection and the deletion
// may take, plus the lag of the reads that observed the znode. A new leader
// gives every session a fresh timeout, so under faults bound must also cover
// the time without a leader (or the check be limited to a calm stretch).
func EphemeralLifetimes(ephemerals []EphemeralLife, sessions []SessionLife, bound, end int64) error {
	byID := make(map[int64]*SessionLife, len(sessions))
	for i := range sessions {
		byID[sessions[i].Session] = &sessions[i]
	}
	type late struct {
		at int64
		v  *Violation
	}
	var found []late
	for _, e := range ephemerals {
		s, ok := byID[e.Owner]
		if !ok {
			return errorf("ephemeral %s: owner session %#x not listed", e.Path, e.Owner)
		}
		ended := min(s.Closed, s.Expired)
		how := "closed or expired"
		if c, ok := s.lastHeard(Never); ok && c <= Never-s.Timeout && c+s.Timeout < ended {
			ended = c + s.Timeout
			how = fmt.Sprintf("timed out (last answered request invoked at %d, timeout %d)", c, s.Timeout)
		}
		if ended == Never || ended > Never-bound {
			continue
		}
		deadline := ended + bound
		switch {
		case e.Gone == Never && end > deadline:
			found = append(found, late{deadline, violationf(CheckerEphemerals,
				"ephemeral %s of session %#x is still present at the end (%d); its session %s at %d, bound %d",
				e.Path, e.Owner, end, how, ended, bound)})
		case e.Gone != Never && e.Gone > deadline:
			found = append(found, late{deadline, violationf(CheckerEphemerals,
				"ephemeral %s of session %#x was gone only at %d; its session %s at %d, bound %d",
				e.Path, e.Owner, e.Gone, how, ended, bound)})
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].at < found[j].at })
	return found[0].v
}
