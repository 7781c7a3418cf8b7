// Package fourletter checks zkraft's operator interfaces against Apache
// ZooKeeper 3.8: the four-letter words on the client port, the AdminServer's
// JSON commands, the whitelist, and zktop (Debian's curses monitor, which
// parses stat) running against the server.
//
// How the comparison works: one reference Apache ZooKeeper 3.8 (Debian's,
// started with the Jetty jars on its class path so its AdminServer runs) and
// each target of zktest.Targets get the same workload (a session that creates
// /a and the ephemeral /e and watches /a, / and /nonexist), then answer every
// four-letter word and every AdminServer command. The outputs are reduced to
// their SHAPE (numbers, hex ids, addresses, dates and paths replaced by
// placeholders; line order kept where ZooKeeper's order is fixed, sorted where
// it is not; JSON reduced to keys and value types) and compared with the
// reference's. Values that the workload fixes (node, watch, ephemeral and
// session counts, watched paths, Mode) must be equal too. The apache target
// is compared with a second Apache instance, which proves that the checks
// compare shapes and not incidental values.
//
// Deliberate differences (each check allows exactly these):
//
//	| command             | Apache ZooKeeper 3.8                  | zkraft                                | why                                      |
//	|---------------------|---------------------------------------|---------------------------------------|------------------------------------------|
//	| mntr / monitor      | ~500 zk_* keys                        | the ~40 tools read, + zk_raft_*       | the rest are ZooKeeper pipeline internals |
//	| envi / environment  | java.* keys                           | go.* keys and os.tmpdir               | a Go process has no JVM                   |
//	| system_properties   | JVM system properties                 | process facts (go.*, os.*, user.*)    | same; environment variables not exposed   |
//	| gtmk, stmk, hash    | enabled by whitelist "*"              | refused ("not in the whitelist")      | no ZooKeeper tracing or digest log        |
//	| dump connections    | NIO expiry buckets, incl. empty ones  | one bucket per expiry time            | no NIO connection expiry queue            |
//	| command list        | ZooKeeper's commands                  | + locks (lock directories, issue 12)  | zkraft's own; lcks 4lw only if listed     |
//	| command list        | ZooKeeper's commands                  | + snapshot (backups, issue 13)        | ZooKeeper 3.9's command, not in 3.8       |
//
// Run with `go test ./compat-tests/fourletter/ -count=1 -v`; ZKRAFT_TARGETS
// picks the targets compared with the reference (the reference Apache always
// runs). zktop is driven under tmux (Debian packages zktop and tmux).
package fourletter
