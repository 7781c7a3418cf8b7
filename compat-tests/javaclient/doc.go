// Package javaclient holds the compat suite that drives a server through
// the Apache ZooKeeper 3.8 Java client (Debian's /usr/share/java jars),
// compiled with javac by run.sh; this Go package only has the test that runs
// it against every zktest target.
//
// The suite (src/zkcompat) checks multi (results, atomic failure with
// per-op errors), create modes (create2 stat, ephemeral sequential,
// CONTAINER, TTL), setData/getData stats, one-shot and persistent
// (recursive) watches, removeWatches/removeAllWatches and NoWatcher,
// getEphemerals, getAllChildrenNumber, whoAmI, getConfig, error codes,
// session reattach by id and password, and digest auth with ACLs.
//
// Invariants:
//   - The suite prints one "PASS <check>" or "FAIL <check>: <reason>" line
//     per check and ends with exactly one "N passed, M failed" line; it
//     exits 0 only if M is 0.
//   - Every wait is bounded (10 s per event, 25 s per check, 80 s in all),
//     and "no event" is asserted only after a round trip on the watching
//     connection, never after a sleep.
//   - Each run works under a node named after the time it started, so it
//     needs no cleanup and can be rerun against the same server.
//
// Run: go test ./compat-tests/javaclient/ -count=1 -v, or by hand:
// compat-tests/javaclient/run.sh host:port.
package javaclient
