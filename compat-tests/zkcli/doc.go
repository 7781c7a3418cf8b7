// Package zkcli holds the compat suite that drives a server through
// ZooKeeper 3.8's shell, /usr/share/zookeeper/bin/zkCli.sh, from a Python
// driver (suite.py, zkcli_session.py and the shared ../pylib/suitekit.py;
// standard library only); this Go package only has the test that runs it
// against every zktest target (zktest.RunSuite).
//
// The driver keeps two interactive zkCli sessions (commands on stdin) and
// checks the printed output of create -s/-e/-c/-t, ls (-s, -R, -w), get -s,
// set (-s, -v), stat, delete, deleteall, sync, getEphemerals,
// getAllChildrenNumber, addWatch and the event lines it prints,
// removewatches, setquota/listquota/delquota (the server keeps the
// zookeeper_stats node current), addauth, setAcl, getAcl, whoami, config,
// reconfig (disabled) and the error messages; a few commands run one-shot
// (zkCli.sh -server ADDR cmd args) to check the exit status.
//
// Invariants:
//   - Every command is followed by a marker command (ls of a missing path)
//     whose "Node does not exist" line ends the command's output; watch
//     notifications are split off the output and must arrive in order.
//   - Only zxids, times and session ids are normalized before comparing.
//   - Every wait is bounded (20 s per command, 15-20 s per event, 80 s for
//     the suite); the suite prints one PASS/FAIL line per check and exactly
//     one closing "N passed, M failed" line, and exits 0 only if M is 0.
//
// Run: go test ./compat-tests/zkcli/ -count=1 -v, or by hand:
// /usr/bin/python3 compat-tests/zkcli/suite.py host:port.
package zkcli
