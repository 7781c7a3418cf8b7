package consensus

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PeerStats is what the TCP transport saw of one peer since it started.
// Counters survive a change of the peer's address.
type PeerStats struct {
	ID   uint64
	Addr string
	// Sent counts messages written to the peer's connection.
	Sent uint64
	// Dropped counts messages never written: queue full, backing off after
	// a failure, dial or write failed, or still queued when the peer's
	// sender stopped. Raft was told (ReportUnreachable, ReportSnapshot).
	Dropped uint64
	// Received counts messages read from the peer's connections.
	Received uint64
	// Reconnects counts connections dialled after the first one.
	Reconnects uint64
	// LastError is the last dial or write error ("" if none), at
	// LastErrorTime.
	LastError     string
	LastErrorTime time.Time
	// LastContact is when the last message from the peer arrived (zero:
	// never).
	LastContact time.Time
	// Unreachable is true while writes or dials to the peer fail.
	Unreachable bool
}

// peerCounters is the live form of PeerStats. The atomics are updated by
// the peer's sender and the readers; mu guards the rest.
type peerCounters struct {
	sent, dropped, received, dials atomic.Uint64
	lastContact                    atomic.Int64 // unix nanoseconds, 0: never

	mu            sync.Mutex
	addr          string
	lastErr       string
	lastErrTime   time.Time
	failingSince  time.Time // first failure since the last success; zero when healthy
	unanswered    time.Time // first write since the last message received; zero when none
	lastWrite     time.Time // last successful write
	warnedFailing bool      // the unreachable warning was logged for this episode
	warnedSilent  bool      // the unanswered warning was logged for this episode
}

// counters returns id's counters, creating them.
func (t *TCPTransport) counters(id uint64) *peerCounters {
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	pc, ok := t.stats[id]
	if !ok {
		pc = &peerCounters{}
		t.stats[id] = pc
	}
	return pc
}

// PeerStats returns a snapshot of every known peer's counters, by id.
func (t *TCPTransport) PeerStats() []PeerStats {
	t.statsMu.Lock()
	ids := make([]uint64, 0, len(t.stats))
	for id := range t.stats {
		ids = append(ids, id)
	}
	t.statsMu.Unlock()
	slices.Sort(ids)
	out := make([]PeerStats, 0, len(ids))
	for _, id := range ids {
		pc := t.counters(id)
		st := PeerStats{
			ID: id, Sent: pc.sent.Load(), Dropped: pc.dropped.Load(), Received: pc.received.Load(),
			Reconnects: max(pc.dials.Load(), 1) - 1,
		}
		if ns := pc.lastContact.Load(); ns != 0 {
			st.LastContact = time.Unix(0, ns)
		}
		pc.mu.Lock()
		st.Addr, st.LastError, st.LastErrorTime = pc.addr, pc.lastErr, pc.lastErrTime
		st.Unreachable = !pc.failingSince.IsZero()
		pc.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// wrote records n messages written to the peer. After a pause in writing
// longer than quiet, the wait for an answer starts again.
func (pc *peerCounters) wrote(n int, now time.Time, quiet time.Duration) {
	pc.sent.Add(uint64(n))
	pc.mu.Lock()
	if pc.unanswered.IsZero() || now.Sub(pc.lastWrite) > quiet {
		pc.unanswered = now
	}
	pc.failingSince, pc.lastWrite = time.Time{}, now
	pc.mu.Unlock()
}

// failed records a dial or write error.
func (pc *peerCounters) failed(err error, now time.Time) {
	pc.mu.Lock()
	pc.lastErr, pc.lastErrTime = err.Error(), now
	if pc.failingSince.IsZero() {
		pc.failingSince = now
	}
	pc.mu.Unlock()
}

// heard records a message received from the peer.
func (pc *peerCounters) heard(now time.Time) {
	pc.received.Add(1)
	pc.lastContact.Store(now.UnixNano())
	pc.mu.Lock()
	pc.unanswered = time.Time{}
	pc.mu.Unlock()
}

// monitorLoop logs a warning when a peer has been unreachable, or has not
// answered while this member kept writing to it, for longer than
// cfg.WarnAfter, and an info line when it is back.
func (t *TCPTransport) monitorLoop() {
	tick := time.NewTicker(max(t.cfg.WarnAfter/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.stopc:
			return
		case now := <-tick.C:
			t.checkPeers(now)
		}
	}
}

func (t *TCPTransport) checkPeers(now time.Time) {
	t.mu.Lock()
	ids := make([]uint64, 0, len(t.peers))
	for id := range t.peers {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		pc := t.counters(id)
		pc.mu.Lock()
		failing := !pc.failingSince.IsZero() && now.Sub(pc.failingSince) > t.cfg.WarnAfter
		// Unanswered only while this member keeps writing: members that
		// stopped talking to each other (two followers) are not silent.
		silent := !pc.unanswered.IsZero() && now.Sub(pc.unanswered) > t.cfg.WarnAfter &&
			now.Sub(pc.lastWrite) < t.cfg.WarnAfter
		warnFailing, warnSilent := failing && !pc.warnedFailing, silent && !pc.warnedSilent
		recovered := (pc.warnedFailing && !failing) || (pc.warnedSilent && !silent)
		pc.warnedFailing, pc.warnedSilent = failing, silent
		since, unanswered, lastErr, addr := pc.failingSince, pc.unanswered, pc.lastErr, pc.addr
		pc.mu.Unlock()
		switch {
		case warnFailing:
			t.lg.Warn().Uint64("peer", id).Str("addr", addr).Dur("for", now.Sub(since)).
				Uint64("dropped", pc.dropped.Load()).Str("last_error", lastErr).
				Msg("peer unreachable for longer than the election timeout")
		case warnSilent:
			t.lg.Warn().Uint64("peer", id).Str("addr", addr).Dur("for", now.Sub(unanswered)).
				Uint64("sent", pc.sent.Load()).Time("last_contact", time.Unix(0, pc.lastContact.Load())).
				Msg("peer has not answered for longer than the election timeout")
		case recovered && !failing && !silent:
			t.lg.Info().Uint64("peer", id).Str("addr", addr).Msg("peer reachable again")
		}
	}
}
