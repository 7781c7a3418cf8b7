// Package kazoo runs the kazoo 2.8 compatibility suite (suite.py) against
// every test target: Debian's python3-kazoo, driven by /usr/bin/python3 (the
// python3 first on PATH may be another build without kazoo).
//
// suite.py takes the server address, runs named checks (CRUD and error
// classes, transactions, watches, state listeners, real session expiry, and
// the recipes: Lock, ReadLock/WriteLock, Semaphore, Election, Barrier,
// DoubleBarrier, Counter, Party, Queue, LockingQueue, TreeCache), prints
// "PASS <name>" or "FAIL <name>: <reason>" per check and ends with
// "N passed, M failed" (that bookkeeping is ../pylib/suitekit.py's Report).
//
// Invariants:
//   - Each target gets its own server (tickTime 500 ms, so expired sessions
//     go away quickly) started and stopped by zktest.
//   - The suite runs under a context timeout (zktest.RunSuite); the test
//     fails unless the process exits 0 and its last stdout line is
//     "N passed, 0 failed" with N > 0, as many PASS lines and no FAIL line.
//     Every line of output is streamed into the test log.
//   - The suite itself bounds every wait and each check (a watchdog fails a
//     check that overruns), so a hang is reported as a failed check.
//
// Run with `go test ./compat-tests/kazoo/ -count=1 -v`; ZKRAFT_TARGETS=apache
// limits the run to the reference server. KAZOO_SUITE_ONLY=name,name runs a
// subset of checks and KAZOO_SUITE_LOG=DEBUG turns on kazoo's logging (both
// are read by suite.py from the inherited environment).
package kazoo
