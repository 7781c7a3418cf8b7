// Package ensemble holds the tests of zkraft as a replicated ensemble: three
// or five member processes on loopback (zktest.StartCluster), driven with the
// go-zookeeper client and the raw jute client of internal/zktest.
//
// The tests check what an ensemble promises beyond a single server:
//   - every acknowledged write survives the crash of any one member, and all
//     members converge to identical trees (data and every Stat field);
//   - a minority partition (simulated with SIGSTOP) never serves clients,
//     while the majority goes on serving writes;
//   - session liveness reaches the leader from any member, a silent session
//     expires everywhere, a session moves between members with its id and
//     password, and a leader change does not expire live sessions;
//   - a session closed by a client attached to it on another member ends
//     the first client's connection too: kazoo (kazoo_session_holder.py)
//     sees its session LOST;
//   - a lock recipe keeps mutual exclusion, with strictly increasing fencing
//     tokens, across a leader crash: go-zookeeper's, and those of real
//     clients run as programs (kazoo_lock.py with kazoo's Lock, and
//     curatorlock/CuratorLock.java, run by curator_lock.sh, with Curator's
//     InterProcessMutex), eight sessions each, which print their progress
//     while the test kills and restarts the leader and end with PASS/FAIL
//     lines and "N passed, M failed";
//   - with a small snapCount, a follower that was stopped or frozen while
//     hundreds of writes were made catches up (same Zxid, same tree), a
//     client watching through it gets its events, and every member keeps a
//     raft log bounded by the snapshot interval;
//   - membership grows and shrinks with reconfig, and /zookeeper/config
//     lists the current members in ZooKeeper's format;
//   - under faults, for 3 and 5 members (faults_*_test.go): real network
//     partitions of the peer and election ports through the fault proxies
//     of internal/faultproxy (the leader isolated, a follower isolated, the
//     leader cut one way, every link delayed), SIGSTOP of the leader and of
//     followers past the election timeout, kill -9 of a majority; meanwhile
//     go-zookeeper clients run conditional sets and (synced) reads on a few
//     znodes, and internal/check must find their history linearizable,
//     every read in session order, and every acknowledged write in the
//     final state. A fenced counter
//     guarded by go-zookeeper's lock loses no update while holders pause
//     past their session (their proxy cut) and are fenced off by token;
//   - lock-delay (zkraft.lockDelayMs, lockdelay_test.go): a kazoo lock
//     holder (kazoo_lock_holder.py) frozen with SIGSTOP loses its session,
//     its ephemeral outside the lock paths goes at once, its lock node stays
//     (owned by the dead session) and a waiting kazoo contender gets the
//     lock only after the expiry plus the delay; a clean close releases at
//     once. Against Apache ZooKeeper the test expects no delay.
//
// The fault tests take about 90 s in all on 2 cores:
//
//	go test -count=1 -run 'TestFault|TestRegModel|TestFencedCounter' -timeout 600s ./compat-tests/ensemble/
//
// Every wait is bounded. The tests target zkraft; ZKRAFT_TARGETS=apache runs
// them against Apache ZooKeeper 3.8 to validate the tests themselves.
package ensemble
