// Package check holds pure checkers over recorded histories of a ZooKeeper
// ensemble: the deterministic simulator (cmd/zksim) and the fault tests
// against real processes (compat-tests/ensemble) record what clients and
// members saw, and hand it to these functions after the run.
//
// Every checker is a pure function of its input: no clocks, no randomness,
// no dependence on map iteration order, so the same history always gives the
// same verdict and the same explanation (a simulator seed replays
// bit-for-bit). Times are opaque int64 instants on one clock chosen by the
// caller (simulated nanoseconds, or wall-clock nanoseconds in a real-process
// test); only their order matters.
//
// A checker returns nil when the history satisfies its invariant, a
// *Violation naming the checker and explaining the first violation when it
// does not, and any other error when its input is malformed (for example an
// interval that ends before it starts).
//
// The invariants checked:
//
//   - Linearizable: every znode, seen as a versioned register (create,
//     conditional setData, getData, conditional delete), behaves as a single
//     copy updated atomically at one instant between each operation's
//     invocation and its response. Reads the caller marks linearizable
//     (a sync on the session before the read) take part; plain reads do not,
//     because ZooKeeper serves them from the member the client is connected
//     to. Operations with an unknown outcome (timeout, connection loss) may
//     have taken effect at any instant after their invocation, or not at all.
//   - SessionReads: plain reads are sequentially consistent per client: a
//     client never reads a value that was never written, and never sees an
//     older state of a znode than one it saw or wrote before (monotonic reads,
//     read-your-writes).
//   - LockSafety: at most one holder of each lock at any instant, where a
//     holder's interval ends at the earlier of its release and the loss of its
//     session; fencing tokens strictly increase in acquisition order.
//   - FencedCounter: a resource guarded by fencing tokens never accepted a
//     write carrying a token below the highest it had seen, and no
//     acknowledged increment was overwritten (lost update).
//   - NoLostWrites: every acknowledged create or setData is visible in the
//     final state of the tree, or superseded there by a later write or delete.
//   - ReplicasAgree: members at an equal applied index have equal state
//     digests (or snapshot bytes).
//   - SessionZxids: the zxids a session sees in replies never go backwards.
//   - SessionsNotExpired: a session whose client keeps being answered
//     within its timeout is never expired.
//   - EphemeralLifetimes: no ephemeral znode outlives its session by more
//     than the timeout plus a detection bound.
package check
