// Package consensus replicates opaque byte entries with raft
// (go.etcd.io/raft/v3) and stores them in a write-ahead log beside bbolt. It knows nothing about
// ZooKeeper: the caller supplies a StateMachine that applies entries and
// serializes/restores its state as snapshots.
//
// # Core and Node
//
// Core (core.go) is the whole raft member without goroutines, timers or
// files: a raft.RawNode, raft's MemoryStorage, the durable Storage, the
// StateMachine, the applied index, conf change application, leader-change
// notification and the decision to snapshot. Its invariants:
//
//   - Single goroutine: its owner calls it from one goroutine at a time;
//     the Core starts none and reads time only through an injected clock
//     (CoreOptions.Now, to judge which peers are running).
//   - Persist before send: a Ready's messages are handed to the Transport
//     only after its snapshot, hard state and entries are durable, except
//     the leader's appends and heartbeats, which go first so that followers
//     write in parallel with the leader (raft counts the leader's own copy
//     only after its write, when Advance steps its self-acknowledgement;
//     a Ready's appends to one follower that continue each other leave as
//     one, which the follower answers once: Core.sendAppends).
//     Two more messages vouch for nothing on the sender's disk and leave
//     at once: a leader's empty MsgApp telling a follower the commit index
//     (a quorum's) while it writes (Core.tellCommit), and a follower's
//     forwarded proposal (Node.forward).
//   - Apply only durable committed entries: an entry reaches
//     StateMachine.Apply only after Storage.Write holding it returned.
//   - Never skip an entry: entries are applied in index order, each the
//     successor of the applied index; an Apply error is fatal and leaves
//     the applied index just below the entry.
//
// Its seams are interfaces the production code implements too: Storage
// (WAL, bbolt and snapshot files: storage.go, wal.go, snapfile.go), Transport (TCP,
// transport_tcp.go), the clock, and the SnapshotJob it hands out so that
// its owner decides where serialization runs. The deterministic simulator
// (internal/sim) drives the same Core with a simulated disk, network and
// clock; there is no simulation branch in this package.
//
// # Goroutine model
//
// Node is a Core plus one loop goroutine per Node that owns it (started by
// Start). The loop ticks the Core, runs the work other goroutines queued
// (proposals, peer messages, read requests, reports), then handles every
// resulting raft.Ready completely (persist, send, apply, decide a
// snapshot, Advance), so all StateMachine methods and OnLeaderChange run on
// that goroutine, one at a time. Everything queued while the loop was
// writing is handed to raft before the next Ready, also when raft has a
// Ready pending already (bounded per wake-up), so concurrent proposals
// share one fsync (group commit) and the next batch is written in the Ready
// that applies the last: Core.HandleReady (CoreOptions.ParallelApply) writes
// on a goroutine it starts and waits for while it applies committed entries
// that were durable already (a member without a Transport applies up to
// inlineApplyMax of them first and then writes itself). That goroutine hands the Ready's messages
// (a follower's acknowledgements) to the Transport as soon as the write
// returned, not after the apply. While it waits, the Core steps the peer
// messages queued meanwhile (CoreOptions.Inbox, Node's queue) and applies
// the entries a quorum's acknowledgement committed that its mirror holds
// (Core.StepWhileWriting), so a reply does not wait for the next write. A
// follower that knows its leader forwards a proposal to it from Propose's
// caller (Node.forward, Core.Forward), not with the next Ready.
// HandleReady is a wrapper: the Core's Ready handling is split into
// BeginReady, ApplyDurable, ReadyWrite.Write, StepWhileWriting and
// FinishReady (ReadyWrite), so that the deterministic simulator drives the
// same code with the write completed by its simulated disk instead of a
// goroutine. Propose,
// ReadIndex, WaitApplied, Status and the MessageHandler methods may be
// called from any goroutine; MessageHandler.Step only queues and never
// blocks the transport's reader. The Transport's own goroutines call the
// MessageHandler methods. A second goroutine, the snapshotter, runs the
// Core's SnapshotJobs.
//
// # Ready order
//
// Each Ready is handled in the order raft's documentation requires:
//
//  1. A snapshot received from the leader is written to
//     <DataDir>/snap/<term>-<index>.snap and fsync'd (file and directory)
//     (Storage.SaveSnapshot).
//  2. In one Storage.Write: the snapshot's metadata (bbolt, one Update)
//     and then the HardState and the new Entries (replacing any stored
//     entries at or after the first new index) as one WAL record with one
//     write and one fdatasync; without a snapshot, only the WAL record.
//     See diskStore (storage.go) for why a crash between the two steps is
//     safe.
//  3. The same is mirrored into raft.MemoryStorage, which raft reads.
//  4. Messages are handed to the Transport.
//  5. The snapshot is restored into the StateMachine, then committed
//     entries are applied: EntryNormal with data through StateMachine.Apply,
//     conf changes through raft's ApplyConfChange with the resulting
//     ConfState persisted. The applied index is then published, releasing
//     WaitApplied and ReadIndex callers.
//  6. If SnapshotEvery entries were applied since the last snapshot (in a
//     group of members, between half of that and all of it, a different
//     number per member and snapshot: snapshotThreshold) and no snapshot is
//     being written, the StateMachine is frozen at the applied index
//     (SnapshotFreezer, copy-on-write; or Snapshot) and the snapshot is
//     handed out as a SnapshotJob; Node runs it on the snapshotter
//     goroutine, which serializes it straight into the snapshot
//     file (Storage.SaveSnapshotFrom: streamed, never whole in memory;
//     fsync'd), records its metadata in bbolt and then deletes the
//     WAL segments holding only entries below index-KeepEntries, compacts
//     MemoryStorage and keeps
//     only the newest two snapshot files, all off the loop (snapshotter.go).
//     A snapshot is also taken right after a conf change once the log has
//     been compacted, so a joining member is sent a snapshot whose ConfState
//     includes it.
//  7. Advance.
//
// AsynchronousStorageWrites is not used.
//
// # Durability invariant
//
// Nothing is applied, sent or acknowledged before the state it depends on
// is fsync'd: entries reach StateMachine.Apply only after the WAL record
// holding them was fdatasync'd, and messages (votes, append
// acknowledgements) leave only after the HardState and entries they vouch
// for are durable. bbolt's NoSync is never set. The one relaxation raft
// permits is used: a HardState that only advances the commit index
// (Ready.MustSync false) is not written on its own but with the next write,
// because a lost commit index is re-learned from the log and the leader.
// A recorded snapshot may be ahead of the durable commit index; Start raises
// the commit index to the snapshot's.
//
// Any storage error is fatal: it is logged, the loop stops without calling
// Advance, Done is closed, Err returns the cause, and later calls return
// ErrStopped. Nothing continues after a failed persist. An error from
// StateMachine.Apply (an entry this member cannot read) is fatal the same
// way: the applied index stays just below the entry, which is never skipped,
// and a restart stops at it again.
//
// # Restart
//
// The state machine lives in memory only. Start reopens bbolt and the WAL
// (syncing both, so that nothing a crashed process left only in the page
// cache is relied on; cutting a write torn by a crash off the last
// segment's tail (zeroing its bytes in a preallocated segment, so that
// the zeros after the last record stay), logged at error level if it was
// a complete record that does not verify (not one whose last sectors are
// zeros, as a torn write over a preallocated segment leaves it); refusing
// any other damage with ErrCorruptLog; and
// upgrading a data directory whose log is still in bbolt, rebuilding the
// WAL from bbolt every time), loads the hard state and the recorded
// snapshot (its file's CRC32C is verified; a corrupt file makes Start fail
// rather than skip it), calls
// StateMachine.Restore, loads the entries after the snapshot into
// MemoryStorage and restarts raft with Applied at the snapshot index, so raft
// re-delivers, and the node re-applies, every committed entry after it.
// Entries kept behind the snapshot (KeepEntries) are not reloaded after a
// restart; a follower that needs them receives the snapshot instead.
//
// # Membership and transport
//
// A nil Config.Transport means a single member. TCPTransport (one
// persistent connection per peer, raftpb.Message frames of bounded size with
// larger messages such as snapshots in chunks, bounded per-peer queues that
// drop and report the peer unreachable when full, reconnect with backoff,
// per-peer counters) connects a group. AddMember, RemoveMember
// and ChangeMembers change membership one change at a time through
// ConfChangeV2, computed from raft's own ConfState; the new member's address
// travels in the conf change so every transport learns it. A new member is a
// learner until the leader sees it caught up and promotes it, except an
// observer (Peer.Observer), which stays a learner (observers.go); each change is
// proposed only after raft applied the previous one (waiters are woken after
// Advance); a change that leaves no voter, or fewer than a majority of
// running voters, is refused (see membership.go). Each step carries the
// conf state it was planned against, and the log index of the conf change
// that made it (its conf index, which snapshots' metadata carries), and is
// applied only on top of that very point of the membership's history: on
// any other conf state, or on the same voters and learners reached again
// by later conf changes, every member applies it as no change (the same
// decision everywhere, from the entry and the replicated conf state only),
// and the change fails with ErrMembershipChanged, as it does when it finds
// before a step that another change moved the membership, or when the conf
// state its caller computed the target from is not the applied one
// (confbase.go); learners it added that were not all promoted are removed
// again first. A
// conf change without one (older logs, bootstrap, the leader's promotions)
// applies as it always did. The decisions are the
// Core's (Core.ChangeMembers and MemberChange in memberchange.go, driven by
// Tick and HandleReady): Node's methods queue a change to the loop and wait
// for its outcome, and the deterministic simulator calls the Core directly.
//
// # On-disk format
//
// See schema.go (files, bbolt buckets and keys), wal.go and wal_record.go
// (WAL segments and records) and snapfile.go (snapshot files).
//
// WAL segments are preallocated: a segment is zero-filled (real zeros,
// fdatasync'd) to the rotation size (64 MiB; a new log's first segment to
// 4 MiB, and it rotates when they run out) before its header is written,
// and each record is written over the zeros at the end of the last record,
// so the fdatasync every Storage.Write waits for flushes data without
// changing the file's size (no ext4 journal commit). The next segment is
// zero-filled ahead, off the write path, by a goroutine the WAL owns
// (started when the last segment is half full, stopped and waited for by
// Close) in wal/spare.wal.tmp; rotate writes its header, syncs it and
// renames it into place, or creates a segment without preallocation if it
// is not ready. In the last segment, zeros after the last record are the
// clean end of the log; a closed segment is cut to its last record by the
// rotation that closes it, so anything after it is damage.
package consensus
