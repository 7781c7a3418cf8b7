// Package fence is the protected resource's side of a zkraft lock: a guard
// that accepts an operation only when the caller's fencing token is at least
// the highest token it has seen for that resource, the analogue of Chubby's
// CheckSequencer.
//
// A lock alone cannot protect a resource: a holder that stalls (a GC pause,
// a stopped VM, a slow disk) may lose its session, and so its lock, while it
// still believes it holds it; when it resumes, its write arrives after the
// next holder's. The fix is a token that grows with every acquisition and a
// resource that refuses tokens older than one it has already accepted.
//
// # Tokens
//
// A token is the czxid of the holder's lock node, in decimal: `zkraft lock`
// exports it to the command it runs as ZKRAFT_LOCK_TOKEN (TokenFromEnv reads
// it), and a client library can read it from the Stat of its own lock node.
// Every lock recipe (Curator, kazoo, go-zookeeper, the ZooKeeper recipe)
// creates a new node per acquisition, and a zxid only grows, so a later
// holder of the same lock always has a larger token than an earlier one.
//
// # Guards
//
// FileGuard records, per resource name, the highest token it accepted in a
// file of its directory. Do(resource, token, op) takes the resource's guard
// lock, refuses a token lower than the recorded one with a *StaleTokenError
// (errors.Is(err, ErrStaleToken)), durably records a higher one (temp file,
// fsync, rename, fsync of the directory) and then runs op while still
// holding the guard lock, so no older holder's operation can run between
// the check and op. A token equal to the recorded one is accepted: the same
// holder may write many times.
//
// What FileGuard guarantees:
//   - In one process: safe for concurrent use; operations on one resource
//     run one at a time, each checked against every token recorded before.
//   - Across processes and restarts: the record survives a crash once Do
//     has called op (it is fsynced before op runs). Processes that open a
//     FileGuard on the same directory serialize on flock(2) of a per-resource
//     lock file, so their checks and operations do not interleave either.
//     flock is advisory (a process that writes the resource without the
//     guard is not stopped) and is not reliable on NFS or other network
//     file systems: keep the directory on a local file system of the host
//     that owns the resource.
//   - It does not make op atomic: if op fails halfway, the token stays
//     recorded, and op's own partial effects are op's to undo.
//
// # Resources stored in zkraft
//
// When the protected resource is itself a znode, no token is needed: the
// ZooKeeper-native form puts the lock check into the write, as one multi
// that checks the holder's lock node (still existing, at its version) and
// writes the resource. Once the holder's session expired its ephemeral lock
// node is gone, the check fails with NoNode and the write is not applied.
// CheckedWrite builds that multi's operations for go-zookeeper.
//
// ZNodeGuard is the token guard with its record in a znode instead of a
// file: each admitted write is one multi that sets the guard node to the
// token at the version it read, with the write; a concurrent writer makes
// the version check fail and the guard reads again. It serves writers that
// hold a token but not the lock node (a service writing for lock holders),
// across any number of hosts.
package fence
