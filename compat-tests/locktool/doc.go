// Package locktool tests `zkraft lock` and `zkraft elect` as clients of a
// real server (zkraft and Apache ZooKeeper 3.8, zktest.Targets) alongside
// the recipes whose node layouts they share: Curator 5's InterProcessMutex
// and LeaderLatch (peer/LockPeer.java, compiled with javac against the
// Debian jars by peer/peer.sh) and kazoo's Lock (peer/kazoo_peer.py).
//
// Invariants:
//   - Holders of every kind append "begin WHO TOKEN" / "end WHO TOKEN" lines
//     to one shared file (O_APPEND, one write per line); the test requires
//     that sections never overlap, that tokens (the czxid of the holder's
//     lock node) strictly increase, and that no lock node is left.
//   - Session loss is made deterministic: the lock node is deleted from
//     another session, or the client's connection runs through a
//     faultproxy that blackholes it until the server expires the session,
//     or resets it so that the client comes back to the same session.
//   - Every process runs in its own process group, bounded by procTimeout,
//     and is killed and reaped in its test's cleanup.
//
// Run with `go test ./compat-tests/locktool/ -count=1`; ZKRAFT_TARGETS=zkraft
// limits the run to zkraft.
package locktool
