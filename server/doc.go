// Package server is a zkraft member: it accepts ZooKeeper client
// connections, turns their writes into raft proposals, applies committed
// entries to the replicated state (the znode tree and the session table),
// answers in order and delivers watch events.
//
// The one write path, for standalone and ensembles alike:
//
//	connection reader: decode -> validate -> propose (entry carries time, session, auth ids)
//	consensus: commit on a quorum, fsync (group commit), apply on every member
//	stateMachine.Apply: deterministic; queues watch events on watching connections
//	the proposing member's waiter: hands the result to the connection's writer
//	connection writer: writes queued events, then the reply, strictly in request order
//
// Goroutines: one accept loop; per connection one reader and one writer; the
// consensus apply goroutine calls stateMachine.Apply; on the leader, an
// expiry loop (sessions) and a container loop (empty containers, expired TTL
// nodes) propose their decisions through the log.
//
// Invariants:
//   - Replies leave a connection in the order its requests arrived; ping
//     replies may overtake (clients match xid -2 apart).
//   - A read runs only after every earlier request of its connection was
//     answered, so it sees the session's own writes (FIFO client order).
//   - Apply queues an entry's events while holding the state write lock and
//     reads take the read lock, so an event is on its way before any reply
//     that shows its change.
//   - Nothing is acknowledged before raft committed it and it was fsync'd.
//
// Deliberate differences from Apache ZooKeeper 3.8.0 are listed in the
// README ("Differences from ZooKeeper").
package server
