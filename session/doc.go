// Package session holds zkraft's ZooKeeper sessions: session ids and
// passwords, timeout negotiation, the replicated session Table and the
// leader-side expiry Tracker.
//
// The package depends on the standard library only (no raft, no bbolt, no
// network; deps_test.go enforces it). It does no I/O of its own and reads
// time only through an injected Clock.
//
// # Pieces
//
//   - Bounds, CheckBounds, NegotiateTimeout: ZooKeeper's timeout rules. The
//     range defaults to [2*tick, 20*tick]; a requested timeout is clamped
//     into it, 0 and negative values becoming the minimum.
//   - IDGenerator: ids laid out as ZooKeeper lays them out (server id in
//     bits 63..56, low 40 bits of a millisecond clock in 55..16, a counter
//     in 15..0). Never 0, never 0x8000000000000000 (the container marker),
//     never first byte 0xFF (the TTL marker), because ephemeral owners are
//     session ids. Distinct server ids make ids unique across the ensemble;
//     the clock read at construction makes them unique across restarts
//     (given fewer than 65536 ids per elapsed millisecond, as in ZooKeeper).
//   - NewPassword, VerifyPassword: 16 random bytes per session, compared in
//     constant time.
//   - Table: the replicated set of live sessions (id, timeout, password),
//     with a deterministic, checksummed snapshot encoding.
//   - Tracker: per-session deadlines, ZooKeeper's SessionTracker.
//
// # Invariants of the Table (replicated state)
//
//   - The Table is part of the state machine. It is mutated ONLY by applying
//     committed log entries, in log order: createSession -> Add,
//     closeSession (explicit close or expiry) -> Remove, and a replicated
//     timeout change -> SetTimeout. Nothing else (connection handling, the
//     Tracker, leadership changes, timers) may change it. Hence every member
//     holds the same Table at the same applied index, and WriteSnapshot
//     gives the same bytes on every member.
//   - Applying is deterministic: ids, passwords and negotiated timeouts are
//     chosen before proposing, by the member that accepted the connect
//     request (its IDGenerator, crypto/rand, NegotiateTimeout), and travel
//     inside the entry. Apply never generates an id, never draws randomness
//     and never reads a clock.
//   - Add never overwrites: a createSession whose id is already live must
//     fail (Add returns false and changes nothing).
//   - The Table holds no deadlines or touch times: liveness in time is local
//     bookkeeping (the Tracker), not replicated state.
//   - Passwords are replicated in the clear (log entries and snapshots hold
//     them) so that a client can reconnect to any member without a shared
//     secret; protect the data directory and never log them.
//
// # Expiry is decided by the leader and goes through the log
//
// A session expires when no packet from its client (request or ping) has
// arrived for its timeout T. Deadlines are rounded up to the next multiple
// of the tick, as in ZooKeeper, so expiry happens between T and T+tick
// after the last touch.
//
//   - Only the current raft leader acts on Tracker.Expired. For each id it
//     re-checks that it is still the leader, calls SetClosing (so the id is
//     not reported again and touches no longer revive it) and proposes a
//     closeSession entry. The session is gone only when that entry is
//     applied: then every member removes it from its Table (deleting its
//     ephemerals) and calls Tracker.Remove. An expiry that is not committed
//     did not happen.
//   - Followers never expire sessions. They touch their own Tracker for
//     their clients' packets and forward the touches to the leader.
//   - On becoming leader a member calls Tracker.ResetAll with Table.All(),
//     which restarts every session's timer at its full timeout, so no
//     session expires because the previous leader's touches were lost. On
//     losing leadership it stops acting on Expired.
//   - Raft may drop a proposal. A session marked closing whose closeSession
//     never commits stays in the Table; Tracker.Closing lists such sessions
//     so the leader can propose again (applying closeSession for an id that
//     is no longer in the Table must be a no-op).
//
// A session is usable by a client only while it is in the Table and not
// marked closing in the local Tracker.
//
// # Concurrency
//
// IDGenerator, Tracker and FakeClock are safe for concurrent use. Table is
// not: the apply loop writes it and readers must hold the same lock.
package session
