// Package curator runs the Apache Curator 5.4 compatibility suite (Java,
// compiled with javac against Debian's Curator and ZooKeeper jars) against
// every target of zktest.Targets.
//
// The suite lives in src/ (main class CuratorSuite, taking HOST:PORT) and is
// driven by run.sh, which compiles it and runs it. It prints "PASS name" or
// "FAIL name: reason" per check and ends with "N passed, M failed".
//
// Invariants:
//   - The Java sources are compiled once per test process (run.sh
//     --build-only into a temporary CURATOR_BUILD_DIR) and reused for every
//     target.
//   - Each target gets a fresh server with a short tick (500 ms, so sessions
//     may be 1-10 s) and a 500 ms container/TTL check interval; the suite run
//     is bounded by a context timeout (zktest.RunSuite).
//   - A target passes only if the suite exits 0 and its last stdout line is
//     "N passed, 0 failed" with N > 0, as many PASS lines and no FAIL line.
//
// Run with `go test ./compat-tests/curator/ -count=1 -v`; ZKRAFT_TARGETS=apache
// limits the run to the reference server.
package curator
