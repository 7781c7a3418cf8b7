// Package differential replays the same scripted request sequences over raw
// jute against zkraft and against Apache ZooKeeper 3.8 and compares the
// replies field by field. It has no code of its own outside its test files;
// run it with `go test ./compat-tests/differential/ -count=1 -v`. It always
// starts both servers, whatever ZKRAFT_TARGETS says.
//
// Structure:
//   - script: a named list of steps; a step says which connection slot acts
//     and what it does (open or resume a session, send one or several
//     pipelined requests, write raw bytes, ping as a barrier, probe whether
//     the server closed the connection).
//   - runner: executes one script against one server and records, per step,
//     the frames it read (replies, notifications, "closed") as normalised
//     text lines.
//   - compare: the two transcripts are compared step by step; a mismatch
//     fails the test and prints the request and both sides, unless a narrow,
//     documented exception (exceptions_test.go) matches it exactly.
//
// Normalisation (the only things allowed to differ):
//   - zxids: each side labels a zxid by where it was first seen
//     (Z<script>.<step>.<k>), with "(new)" at that first sighting, or
//     "(new<max!)" if it was lower than a zxid seen before; 0 and -1 stay
//     literal. Equality and first-sighting order are thus still compared.
//   - ctime/mtime: ctime is "0" or "nz"; mtime is "0", "=ct" (required when
//     mzxid == czxid), ">=ct" or "<ct".
//   - session ids (and ephemeralOwner) and passwords: ordinals by first
//     sighting (S1, P1, ...); the password length is kept.
//   - lists the protocol leaves unordered (children, getEphemerals, the ids
//     of whoAmI, which ZooKeeper takes from a hash set) are sorted, and so is
//     an ACL list in a step marked unorderedACL (an "auth" ACL expanded for
//     a caller with several ids, also taken from that hash set); so are notifications within a step marked unordered (the
//     ephemerals a closeSession deletes come in no fixed order).
//
// Exceptions (exceptions_test.go; each applies only to the steps tagged with
// it and only to its exact shape; the run logs how often each was applied):
//   - lone-check: check (13) outside multi drops the connection on 3.8.0; never sent.
//   - exists-no-read: exists without READ: 3.8.0 gives the stat, zkraft -102 (as 3.8.4).
//   - early-reject-zxid: writes refused before the log: 3.8.0 replies with a new zxid, zkraft with the last.
//   - create2-in-multi: create2 in multi: 3.8.0 result type 1, zkraft type 15 (as 3.8.2+).
//   - createttl-in-multi-flags: createTTL flags 0 in multi: 3.8.0 creates, zkraft -8 (plus later listings).
//   - multiread-error-body: multiRead with a non-read op: 3.8.0 adds an empty body to its -5, zkraft none.
//   - checkwatches-per-connection: checkWatches: 3.8.0 looks at all connections, zkraft at the caller's.
//   - setwatches-null-list: null list in setWatches: 3.8.0 answers -5, zkraft reads it as empty.
//   - persistent-and-oneshot: 3.8.0 drops a persistent watch when a one-shot on the path fires; zkraft keeps it.
//   - client-createsession-opcode: opcode -10 from a client: 3.8.0 answers -5, zkraft closes.
//
// Invariants:
//   - Both sides execute the identical step list; requests whose content
//     depends on a side (a session id, a zxid) are built from that side's
//     own earlier observations.
//   - A side never waits on the other: events are collected by barriers
//     (a ping on the watching connection after the write's reply), which is
//     deterministic because a server queues a change's notifications on
//     every watching connection before replying to the write.
//   - The random part is generated once from a fixed, printed seed.
package differential
