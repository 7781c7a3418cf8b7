// Package cmt holds the compat suite that drives a server through cli_mt,
// the ZooKeeper 3.8 C client shell (/usr/lib/zookeeper/bin/cli_mt from
// Debian's zookeeper-bin), from a Python driver (suite.py, climt.py and the
// shared ../pylib/suitekit.py; standard library only); this Go package only
// has the test that runs it against every zktest target (zktest.RunSuite).
//
// Two interactive cli_mt sessions (commands on stdin) and a few batch runs
// (cli_mt ADDR cmd:...) check the printed output of create (+e, +s, +es, +c,
// +t=ttl), create2, get, set, ls, ls2, delete, sync, config, reconfig
// (disabled), addauth, the error codes, and the watch events that cli_mt's
// get and ls always leave.
//
// Invariants:
//   - cli_mt answers asynchronously, in server order, so every command is
//     followed by a marker (get of a missing path) whose rc = -101 reply ends
//     the command's output. Watch events are part of that output: a change's
//     event must come before the reply to any later request.
//   - Only times and zxids are normalized; child lists are compared sorted
//     (the server's order is not specified); ephemeralOwner is compared with
//     the session id cli_mt printed.
//   - exists/wexists are not used: in this multi-threaded build they call
//     the synchronous API and print nothing.
//   - Every wait is bounded (20 s per command or event, 80 s for the suite);
//     the suite prints one PASS/FAIL line per check and exactly one closing
//     "N passed, M failed" line, and exits 0 only if M is 0.
//
// Run: go test ./compat-tests/cmt/ -count=1 -v, or by hand:
// /usr/bin/python3 compat-tests/cmt/suite.py host:port.
package cmt
