package session

import (
	"slices"
	"sync"
	"time"
)

// Tracker is the expiry bookkeeping of ZooKeeper's SessionTracker: for each
// session it knows when the session expires unless it is touched again.
//
// Only the raft leader acts on Expired: it marks each expired session
// closing (SetClosing) and proposes a closeSession entry; the session leaves
// the Table only when that entry is applied. Other members may keep a
// Tracker too and Touch it for their own clients' packets, but their
// expiries mean nothing until those touches reach the leader.
//
// Deadlines are rounded up to the next multiple of tickMs, as ZooKeeper's
// ExpiryQueue does: a session with timeout T touched at time t expires at
// the first multiple of tickMs strictly greater than t+T, so between T and
// T+tick after the touch.
// Sessions therefore share a few deadline buckets, and Expired and
// NextDeadline cost O(buckets + result), not O(sessions).
//
// Times are measured from the clock's reading at NewTracker with
// time.Time.Sub, so with SystemClock they use Go's monotonic clock: a jump of
// the wall clock neither expires nor prolongs sessions (ZooKeeper also uses
// elapsed time). Multiples of the tick are counted from that first reading.
//
// A session marked closing stays tracked (Len, IsClosing) but is not in any
// bucket: Expired and NextDeadline ignore it and Touch refuses it, until
// Remove or ResetAll forgets it. If a closeSession proposal is lost (raft
// may drop proposals), the leader must propose it again: the Tracker will
// not report the session a second time, but Closing lists the candidates.
//
// Tracker is safe for concurrent use.
type Tracker struct {
	clock  Clock
	tickMs int64
	base   time.Time // clock reading at NewTracker; deadlines are ms since base

	mu       sync.Mutex
	sessions map[int64]*tracked
	// buckets maps a deadline (ms) to the ids of the sessions, not closing,
	// that expire then. Empty buckets are deleted.
	buckets map[int64]map[int64]struct{}
}

type tracked struct {
	timeoutMs  int32
	deadlineMs int64 // ms since Tracker.base; meaningful only when !closing
	closing    bool
}

// NewTracker returns an empty Tracker that reads clock and rounds deadlines
// to multiples of tickMs (values < 1 mean 1, i.e. no rounding).
func NewTracker(clock Clock, tickMs int64) *Tracker {
	if tickMs < 1 {
		tickMs = 1
	}
	return &Tracker{
		clock:    clock,
		base:     clock.Now(),
		tickMs:   tickMs,
		sessions: make(map[int64]*tracked),
		buckets:  make(map[int64]map[int64]struct{}),
	}
}

// Track adds session id with the given timeout and a fresh deadline, or, if
// it is already tracked, sets its timeout and gives it a fresh deadline. A
// session already marked closing stays closing (and gets no deadline).
func (tr *Tracker) Track(id int64, timeoutMs int32) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	if !ok {
		s = &tracked{}
		tr.sessions[id] = s
	}
	s.timeoutMs = timeoutMs
	if !s.closing {
		tr.schedule(id, s, tr.clock.Now())
	}
}

// Touch gives session id a fresh deadline, now plus its timeout. It returns
// false, and changes nothing, if the session is unknown or closing.
func (tr *Tracker) Touch(id int64) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	if !ok || s.closing {
		return false
	}
	tr.schedule(id, s, tr.clock.Now())
	return true
}

// Remove forgets session id (its closeSession entry was applied). Removing
// an unknown id does nothing.
func (tr *Tracker) Remove(id int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	if !ok {
		return
	}
	if !s.closing {
		tr.unschedule(id, s)
	}
	delete(tr.sessions, id)
}

// SetClosing marks session id closing: its closeSession was proposed, so
// Expired must not return it again and Touch must not revive it. Unknown ids
// are ignored.
func (tr *Tracker) SetClosing(id int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	if !ok || s.closing {
		return
	}
	tr.unschedule(id, s)
	s.closing = true
}

// IsClosing reports whether session id is tracked and marked closing.
func (tr *Tracker) IsClosing(id int64) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	return ok && s.closing
}

// Expired returns, sorted, the ids of the sessions not marked closing whose
// deadline is at or before the clock's now. It does not change anything: the
// caller marks each one closing (SetClosing) once it has proposed its close.
func (tr *Tracker) Expired() []int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	nowMs := tr.sinceBase(tr.clock.Now())
	var ids []int64
	for deadline, bucket := range tr.buckets {
		if deadline > nowMs {
			continue
		}
		for id := range bucket {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Closing returns, sorted, the ids of the sessions marked closing, so that a
// leader can re-propose closes that were lost before they committed.
func (tr *Tracker) Closing() []int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var ids []int64
	for id, s := range tr.sessions {
		if s.closing {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// ResetAll forgets every tracked session, including closing marks, and
// tracks each of sessions with its full timeout from now. A new leader calls
// it with the Table's sessions, so that no session expires merely because
// the previous leader's touches were lost.
func (tr *Tracker) ResetAll(sessions []Session) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.sessions = make(map[int64]*tracked, len(sessions))
	tr.buckets = make(map[int64]map[int64]struct{})
	now := tr.clock.Now()
	for _, ss := range sessions {
		s := &tracked{timeoutMs: ss.TimeoutMs}
		tr.sessions[ss.ID] = s
		tr.schedule(ss.ID, s, now)
	}
}

// NextDeadline returns the earliest deadline of a session not marked
// closing, or false if there is none. The caller can sleep until then (or
// simply poll Expired every tick).
func (tr *Tracker) NextDeadline() (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var earliest int64
	found := false
	for deadline := range tr.buckets {
		if !found || deadline < earliest {
			earliest, found = deadline, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return tr.at(earliest), true
}

// Deadline returns the deadline of session id, or false if it is unknown or
// closing.
func (tr *Tracker) Deadline(id int64) (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.sessions[id]
	if !ok || s.closing {
		return time.Time{}, false
	}
	return tr.at(s.deadlineMs), true
}

// Len returns the number of tracked sessions, closing ones included.
func (tr *Tracker) Len() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.sessions)
}

// schedule moves s (not closing) to the bucket of now plus its timeout.
// The caller holds tr.mu.
func (tr *Tracker) schedule(id int64, s *tracked, now time.Time) {
	deadline := roundUp(tr.sinceBase(now)+int64(s.timeoutMs), tr.tickMs)
	if s.deadlineMs == deadline {
		if _, ok := tr.buckets[deadline][id]; ok {
			return
		}
	}
	tr.unschedule(id, s)
	s.deadlineMs = deadline
	bucket, ok := tr.buckets[deadline]
	if !ok {
		bucket = make(map[int64]struct{})
		tr.buckets[deadline] = bucket
	}
	bucket[id] = struct{}{}
}

// unschedule takes id out of its bucket, if it is in one. The caller holds
// tr.mu.
func (tr *Tracker) unschedule(id int64, s *tracked) {
	bucket, ok := tr.buckets[s.deadlineMs]
	if !ok {
		return
	}
	delete(bucket, id)
	if len(bucket) == 0 {
		delete(tr.buckets, s.deadlineMs)
	}
}

// sinceBase returns the whole milliseconds from tr.base to t, rounded down.
func (tr *Tracker) sinceBase(t time.Time) int64 {
	d := t.Sub(tr.base)
	ms := int64(d / time.Millisecond)
	if d < 0 && d%time.Millisecond != 0 {
		ms--
	}
	return ms
}

// at converts milliseconds since tr.base back to a time.
func (tr *Tracker) at(ms int64) time.Time {
	return tr.base.Add(time.Duration(ms) * time.Millisecond)
}

// roundUp returns the smallest multiple of tick strictly greater than ms
// (ZooKeeper's ExpiryQueue.roundToNextInterval), with floor division so
// that times before the base round the same way.
func roundUp(ms, tick int64) int64 {
	q := ms / tick
	if ms%tick != 0 && ms < 0 {
		q--
	}
	return (q + 1) * tick
}
