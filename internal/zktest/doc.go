// Package zktest starts and stops ZooKeeper-compatible servers for tests, and
// offers a raw jute client for requests that go-zookeeper cannot send.
//
// Two targets exist: zkraft (this repository's cmd/zkraft) and Apache
// ZooKeeper 3.8 (the reference, from Debian's zookeeper package). A test that
// passes against Apache proves the test is right; zkraft is then judged by the
// same test. Targets() reads ZKRAFT_TARGETS (a comma list, default both).
//
// Invariants:
//   - Every server listens on 127.0.0.1 on a port chosen at run time, keeps
//     its data in a temporary directory, and is reaped: Start registers a
//     cleanup that stops the process (SIGTERM, then SIGKILL after 5 s) and
//     waits for it, so no test leaves a process behind.
//   - Start returns only once the server answers the four-letter word srvr
//     with a "Mode:" line, or fails the test after a bounded wait (30 s).
//   - A missing prerequisite (java, the ZooKeeper jars, a zkraft build
//     failure) fails the test with a message saying how to fix it; nothing
//     is ever skipped.
//   - The process output goes to a file in the server's directory; its tail
//     is logged when the owning test fails.
//
// StartCluster runs an ensemble the same way: each Member has its own
// directory (zoo.cfg with server.N lines, dataDir/myid, server.log), three
// free ports (client, peer, election) and the same reaping; StartCluster
// returns only once exactly one member reports "Mode: leader" and every
// other one "Mode: follower" (bounded, 30 s). Pause/Resume (SIGSTOP/SIGCONT)
// simulate a partitioned member; AddMember starts one with --join that
// waits for a reconfig.
//
// The zkraft binary is $ZKRAFT_BIN if set, otherwise it is built once per
// test process with `go build` into a per-user cache directory (the only
// process-wide state of this package).
package zktest
