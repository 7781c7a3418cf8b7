// Package znode is zkraft's in-memory ZooKeeper data tree and the
// deterministic apply of write requests (ZooKeeper 3.8 semantics: DataTree
// plus the checks of PrepRequestProcessor).
//
// Who calls it: the server's state machine applies committed log entries with
// Tree.Apply and Tree.DeleteEphemerals (DeleteEphemeralsKeeping for an expiry
// with lock-delay) on its apply goroutine while holding a write lock;
// connections call the read methods (Exists, GetData, ...) under a read lock. A Tree is not safe for concurrent use otherwise: reads never
// mutate it, so any number of reads may run together, but never together
// with Apply, DeleteEphemerals or another mutation. Freeze is a read in
// this sense (it serializes itself with other Freeze calls); the Frozen it
// returns is written on another goroutine while the tree goes on being
// written: the tree copies a frozen node's meta before changing it
// (copy-on-write, frozen.go).
//
// Invariants (verified by Tree.Check, which every test runs in its cleanup):
//   - Apply is a pure function of (tree state, TxnContext, Write). It never
//     reads a clock or a random source; zxid and time come from the
//     TxnContext the proposer stamped into the replicated entry. Every
//     observable order (ephemeral deletion, snapshots, digests, expiry
//     candidates, children lists) is sorted, never map order nor the node
//     index's slot order (nodeindex.go: seeded per tree) nor a child set's
//     (children.go: keyed by node address, so different on every member).
//   - A failed write changes nothing. A multi is applied op by op against the
//     state produced by the earlier ops and rolled back entirely (sequence
//     counters included) through an undo log on the first failure.
//   - Every node's parent exists; a node's numChildren is the size of its
//     children set; a parent's pzxid is at least each child's czxid; the
//     stored child-creation counter C is at least the number of children the
//     parent got through creates; ephemerals have no children; the ephemeral,
//     container and TTL indexes list exactly the nodes of those kinds.
//   - The visible cversion is 2*C - numChildren (ZooKeeper's DataNode.copyStat);
//     the sequential suffix is C before the create, formatted %010d.
//   - Containers and TTL nodes report ephemeralOwner 0; their kind is kept in
//     a separate field, never encoded into the owner.
//   - Nodes with equal ACLs share one immutable aclList, and the tree's
//     table of them holds exactly the lists its nodes hold, each counting
//     its nodes (acllist.go): deleted ACLs do not accumulate.
//   - WriteSnapshot produces the same bytes for equal trees; ReadSnapshot
//     validates everything (checksum, structure, Check) and never panics on
//     corrupt input.
//   - Quotas (quota.go): every path P with a limits node
//     /zookeeper/quota<P>/zookeeper_limits (P outside /zookeeper) is kept
//     in an index derived from the tree (rebuilt by ReadSnapshot, restored
//     by a multi's rollback, never stored). A node counts in the longest
//     such P that is its path or an ancestor; after every write, the stats
//     node /zookeeper/quota<P>/zookeeper_stats, if it exists, holds
//     "count=N,bytes=B" for the nodes counting in P and their data bytes.
//     Its data changes through the undo log, with no version, mzxid or
//     event, as in ZooKeeper. Quotas are not enforced (-125 never happens).
//
// Building with -tags invariants makes Apply and DeleteEphemerals* run Check
// after every write and panic on a violation (slow; for tests and soaks).
//
// Caveats:
//   - Flags 4 (CONTAINER) on opcode 1 or 15 makes a plain persistent node, as
//     ZooKeeper 3.8 ends up doing once applied; only opcode 19 makes containers.
//   - Opcode 21 with a non-TTL mode is BadArguments whatever the ttl.
//   - An ephemeral create with session id 0 is BadArguments (0 means "not
//     ephemeral" in a Stat).
//   - Quotas differ from ZooKeeper only off zkCli's paths: nested quotas
//     split usage between them (ZooKeeper's go stale), a client's setData
//     on a stats node is overwritten at once, and limits nodes directly
//     under /zookeeper/quota or for paths inside /zookeeper are ignored.
//   - The "auth" ACL scheme expands to the caller's ids of the providers
//     that authenticate: digest, and x509 and sasl when their Options are on
//     (ip ids never count).
//
// The package depends on the standard library and zkraft's jute types only.
package znode
