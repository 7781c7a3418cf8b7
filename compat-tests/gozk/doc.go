// Package gozk is the integration suite that drives a server through the
// go-zookeeper client (github.com/go-zookeeper/zk) and, for what that client
// cannot send, through zktest's raw jute client.
//
// Every test runs once per target (zktest.Targets: zkraft and Apache
// ZooKeeper 3.8) as subtests named after the target. A test is right when it
// passes against Apache; zkraft is judged by the same test.
//
// Invariants:
//   - Ordinary tests share one server per target (started lazily, stopped in
//     TestMain) and work under their own path prefix, derived from the test
//     name and removed first if present, so tests do not see each other.
//   - Tests that restart, expire, need a fresh tree or special settings get
//     a dedicated server.
//   - No sleep is used as a timing assertion: waits are bounded polls or
//     waits for events, and "no event arrived" is proven by a later reply on
//     the same connection (the server sends a change's notification before
//     the reply to any later request of the watching connection).
//
// Run with `go test ./compat-tests/gozk/ -v`; ZKRAFT_TARGETS=apache limits
// the run to the reference server.
package gozk
