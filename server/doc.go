// Package server is a zkraft member: it accepts ZooKeeper client
// connections, turns their writes into raft proposals, applies committed
// entries to the replicated state (the znode tree and the session table),
// answers in order and delivers watch events.
//
// The one write path, for standalone and ensembles alike:
//
//	connection reader: decode -> validate -> queue (requestQueue) -> propose (entry carries time, session, auth ids)
//	consensus: commit on a quorum, fsync (group commit), apply on every member
//	stateMachine.Apply: deterministic; queues watch events on watching connections
//	the proposing member's waiter: hands the result to the connection's writer
//	connection writer: writes queued events, then the reply, strictly in request order
//
// # The per-connection request queue
//
// requestQueue (requestqueue.go, with replyQueue in replyqueue.go) is one
// connection's requests in arrival order and every decision on them, as
// goroutine-free code: the item answered next (the oldest), whether it is
// ready (its write applied, its sync's barrier applied), whether it gets an
// answer at all, a read's reply built only on its turn (after every earlier
// request of the connection was answered), a write proposed only once no
// read, sync or refusal before it is unanswered (mayPropose), and which
// queued events and ping replies are written before each reply. Two
// drivers share it: conn.go's reader (arrive, push; it waits in waitReads
// and, when the queue is full, for a pop) and writer (front, pop, turn; it
// waits until the front item is ready (item.complete), and writes), and Endpoint
// (replica.go), which drives the same calls step by step on one goroutine
// for the deterministic simulator (Receive, Next, Applied/Synced/Failed,
// Replies). The read-overtakes-write mutation (requestQueue.arrive) builds a
// read at arrival instead, for the simulator's fifo checker to catch; only
// Endpoint honours it (buildsEarly), as conn.go's reader would build on the
// writer's encoder. The write-overtakes-read mutation (mayPropose) lets a
// write be proposed before the reads and syncs ahead of it were answered.
//
// # Goroutines and what each owns
//
//   - consensus loop (started by consensus.Start, stopped by Node.Stop from
//     Server.Stop): calls stateMachine.Apply, Snapshot and Restore, the
//     applyHooks (applied, sessionCreated, sessionClosed, configChanged,
//     stateReplaced) and onLeaderChange, one at a time. It owns the write
//     side of stateMachine (tree, sessions, order, lastZxid). Nothing it
//     calls may block on a client or call Node.Stop; onLeaderChange starts
//     publishInitialConfig on its own goroutine because that proposes.
//   - acceptLoop, one per client listener (Start; listenSecure for TLS):
//     registers connections (addConn) and starts their reader. Tracked by
//     Server.wg; ends when Stop closes the listener.
//   - per connection, the reader (conn.serve, after serveTLS's handshake for
//     TLS) owns the read side of the socket, conn.ep (its write sequence) and the
//     proposals of its requests; it starts the writer (conn.writeLoop,
//     startWriter) before it handles the connection's first request other
//     than closeSession, so before anything is queued for it; a closeSession
//     that comes first is answered by the reader itself, which then runs the
//     writer's loop (awaitLastReply) and owns the writer's state as long as
//     no writer was started; it also owns the connection's auth ids (digest, x509,
//     and sasl from its DIGEST-MD5 exchange, conn.saslServer) and checks
//     enforce.auth before each request. The writer owns the socket's write
//     side, conn.enc, conn.bw, replyZxid and the reply queue's written zxid, and answers
//     the request queue's items (conn.replies) in order. The queue's ring is
//     single-producer (reader) single-consumer (writer), with no lock; only
//     the reader grows it (requestQueue.grow).
//     Both end on conn.close (closes done and the socket): the reader's
//     deferred dropConn unregisters the connection and its watches. Stop
//     closes every registered connection.
//   - short-lived helpers bounded by a timeout, not tracked by Server.wg:
//     serveTLS's handshake canceller, handleSync's ReadIndex, handleReconfig's
//     reconfigure, publishInitialConfig.
//   - expiryLoop and containerLoop (Start, Server.wg, end on stopC): each
//     calls one step of the sessionLeader (leader.go) with time.Now:
//     expiryRound and containerRound act only while this member is leader
//     and propose their decisions; apply re-checks them. expiryRound also
//     proposes the removal of ephemerals a lock-delay kept
//     (zkraft.lockDelayMs), once due by the replicated state's deadline
//     (decideDelayedDeletions). The sessionLeader starts no goroutine; its
//     leaderChange runs on the consensus loop (onLeaderChange).
//   - ensembles only, livenessSender, livenessReceiver (and one reader per
//     accepted liveness connection, which ends with its connection, when
//     idle for livenessIdlePeriods report periods, or on stopC) and
//     servingMonitor (Start, Server.wg, end on stopC or when Stop closes
//     the election-port listener). The
//     sender's decisions (what a report holds, for which leader, what is
//     kept when it may be lost) are LivenessReports' (liveness.go), which
//     starts no goroutine; the simulator calls it too.
//   - AdminServer and Prometheus endpoint: one http.Server.Serve goroutine
//     each (operability.start), ended by operability.stop from Stop. The
//     AdminServer also serves the web view (/ui, ui.go) and the locks
//     command (locks.go); their handlers take stateMachine.mu (read) and
//     Server.connMu one after the other, never nested.
//
// # Network
//
// Every port the server opens (client, secure client, election/liveness,
// peer through consensus.TCPTransport, AdminServer, metrics) and every
// connection it dials (peers, the leader's liveness port) goes through
// Config.Network (internal/netseam; the operating system's network when
// nil), with TLS layered on top. Tests run whole ensembles on
// internal/memnet, which can cut links between members. The client ports
// are opened with netseam.ListenClients: no TCP keep-alive on client
// connections, as in ZooKeeper (sessions have pings and a timeout).
//
// # Lock order
//
// Mutexes of this package, outermost first. A goroutine holding one may take
// only those listed after it on its line; every other mutex is a leaf,
// held only for a few map or slice operations and never while calling out.
//
//	Server.reconfigMu  -> stateMachine.mu (read), Server.memberMu, Server.waitMu
//	                      (held for a whole reconfig, while it waits for applies;
//	                      never taken on the consensus loop, so that wait ends)
//	stateMachine.mu    -> watchManager.mu -> replyQueue.mu (conn.replies)
//	                      (Apply queues events with the write lock held; reads
//	                      and setWatches register watches with the read lock held)
//	Server.connMu      -> none (conn.close under it takes no mutex)
//	Server.waitMu, LivenessReports.mu, Server.memberMu, replyQueue.mu,
//	serverStats.throttleMu, operability.mu: leaves
//
// requestQueue takes no mutex but replyQueue.mu, and builds a reply (a read
// takes stateMachine.mu's read side) with none held.
//
// The znode tree's locks are leaves too: Apply takes a copy-on-write
// freeze's mutex (znode frozen.go) under stateMachine.mu's write side, and
// the snapshot encoder takes it with no server mutex held; FreezeSnapshot
// takes the tree's freeze mutex under the read side.
//
// internal/lathist's Window.mu (the request latency windows) is a leaf: a
// connection's writer takes it once per window step when it records a
// reply's latency, and mntr and the metrics scrape when they read them.
//
// session.Tracker's and consensus.Node's own locks are leaves from this
// package's view: their methods are called with no server mutex held, except
// that Node methods may be called under reconfigMu. Server.stopOnce,
// conn.closeOnce and conn.logOnce (a leaf: taken under stateMachine.mu and
// watchManager.mu when a connection first logs) are sync.Once. No server mutex is held while a waiter
// callback or an apply hook runs. conn.close takes no mutex of this package
// but closes the socket (a TLS close may wait on the peer); it runs under
// connMu (Stop, stateReplaced, servingMonitor) and, when a client that does
// not read overflows its event queue, under stateMachine.mu and
// watchManager.mu (conn.push from watchManager.trigger).
//
// Invariants:
//   - Replies leave a connection in the order its requests arrived; ping
//     replies may overtake (clients match xid -2 apart).
//   - A read runs only after every earlier request of its connection was
//     answered, so it sees the session's own writes (FIFO client order);
//     a write is proposed only after every earlier read and sync of its
//     connection was answered (requestQueue, shared with Endpoint).
//   - Apply queues an entry's events while holding the state write lock and
//     reads take the read lock, so an event is on its way before any reply
//     that shows its change.
//   - Nothing is acknowledged before raft committed it and it was fsync'd.
//
// Deliberate differences from Apache ZooKeeper 3.8.0 are listed in the
// README ("Differences from ZooKeeper").
package server
