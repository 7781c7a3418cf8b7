// Package locks checks that the AdminServer's locks command (server/locks.go)
// recognises the locks of real client libraries: kazoo's Lock, ReadLock and
// WriteLock (kazoo_locks.py, Debian's python3-kazoo under /usr/bin/python3)
// and Curator's InterProcessMutex and InterProcessReadWriteLock
// (CuratorLocks.java, compiled against Debian's jars). Each program takes
// its locks, with contenders waiting, prints the session id of every role,
// and holds everything until the test, having checked the holders and the
// waiters in order, tells it to release. Missing python3-kazoo, Java or the
// jars fail the test with an install hint; nothing is skipped.
//
// Run with `go test ./compat-tests/locks/ -count=1 -v`.
package locks
