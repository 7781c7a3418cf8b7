// Package patroni runs Patroni (Debian's patroni 3.0.x, which reaches
// ZooKeeper through kazoo) with PostgreSQL 15 on a 3-member ensemble, the way
// a PostgreSQL high-availability deployment uses ZooKeeper: the leader key
// /service/<scope>/leader is an ephemeral znode held by the primary's
// session, members publish themselves under /service/<scope>/members.
//
// TestPatroniFailover starts the ensemble and two Patroni nodes, waits for a
// primary and a replica streaming from it, writes a row (and waits until the
// replica has it), kills -9 the primary's Patroni and its postmaster
// (process groups), checks that the replica is promoted and has the row,
// restarts the old node's Patroni and checks it rejoins as a streaming
// replica (pg_rewind if needed). Then it kills -9 the ensemble's leader
// and, if the primary's session (found with the four-letter word cons) was
// on another member, that member too, one at a time: each time it checks,
// for 1.5 ttl and once more after a sync, that the leader key stays the same
// znode (same data, same ephemeralOwner: the primary's session survived the
// move to another member), that the primary kept its timeline (no demotion,
// no failover), and, once the member is restarted, that the replica still
// streams and the primary takes writes.
//
// Patroni and PostgreSQL run as the unprivileged user postgres when the test
// runs as root (PostgreSQL refuses root). Every wait is bounded, every
// process started is stopped (Patroni by SIGTERM, then SIGKILL of its
// process group and of the postmaster's group, which Patroni detaches with
// setsid), and the cleanup fails the test if any process of a node's
// directory is left. Patroni's output (which includes PostgreSQL's) goes to
// patroni.log in each node's directory; its tail is logged on failure.
// TestKillAllFindsDetachedProcesses checks that cleanup on stand-in
// processes (no Patroni needed, under a second).
// Missing packages fail the test with an install hint; nothing is skipped.
//
// The test targets zkraft; ZKRAFT_TARGETS=apache runs it against Apache
// ZooKeeper 3.8 to validate the test itself. About 45-65 s:
//
//	go test -count=1 -v -timeout 300s ./compat-tests/patroni/
package patroni
