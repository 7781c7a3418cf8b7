package consensus

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/internal/mutation"
)

// ReadyWrite is one raft.Ready between BeginReady and FinishReady: the
// write that makes it durable (Write), which its owner runs when it likes
// (Node: on a goroutine; the simulator: when its simulated disk completes
// it), and what the Core does meanwhile. The protocol, one Ready at a
// time, every call but Write on the Core's goroutine:
//
//  1. BeginReady takes the Ready, sends the leader's appends and
//     heartbeats, and prepares the write (Batch).
//  2. ApplyDurable applies the Ready's committed entries that were durable
//     before it. If Overlaps, it may run before or while Write runs;
//     otherwise it must return before Write is called.
//  3. Write, once, from any goroutine: makes the batch durable, then sends
//     the Ready's messages that vouch for it (a follower's append
//     acknowledgements, votes) without waiting for FinishReady.
//  4. Only if Overlaps, after ApplyDurable and until FinishReady:
//     StepWhileWriting for each peer message that arrives meanwhile.
//  5. FinishReady, once Write returned (with its error): mirror into
//     MemoryStorage, send the rest, restore a received snapshot, apply the
//     other committed entries, Advance.
//
// An error from any step is fatal: the Core must not be used again, except
// Close. A ReadyWrite whose Write never ran (a crash) is simply dropped
// with the Core.
type ReadyWrite struct {
	rd          raft.Ready
	batch       WriteBatch
	store       Storage
	hasSnap     bool
	overlaps    bool
	lastDurable uint64 // the mirror's last index, all durable, below rd.Entries
	durable     int    // rd.CommittedEntries[:durable] are applied by ApplyDurable
	msgs        []*pb.Message
	sendOnWrite bool
	transport   Transport

	// Stepping while writing (Core's goroutine).
	keep  bool // raft's log up to lastDurable is still the mirror's
	term  uint64
	state raft.StateType
}

// Batch returns what Write makes durable (read only; the simulator's disk
// tears it when the member crashes during the write). A received snapshot's
// payload is saved by Write before it.
func (w *ReadyWrite) Batch() *WriteBatch { return &w.batch }

// Overlaps reports whether Write may run while ApplyDurable and
// StepWhileWriting run (CoreOptions.ParallelApply, and the Ready has
// something to sync and no snapshot). Otherwise the owner calls
// ApplyDurable, then Write, then FinishReady, and steps nothing meanwhile.
func (w *ReadyWrite) Overlaps() bool { return w.overlaps }

// Write makes the Ready durable: a received snapshot's payload, then its
// metadata, the hard state and the entries in one Storage.Write (one
// fsync). Once that returned, it sends the messages that waited for it
// (persist before send), from the calling goroutine. Called once, from any
// goroutine; it touches only the Storage, the Transport and w.
func (w *ReadyWrite) Write() error {
	// Known wrong (mutation early-ack-before-write): the acknowledgements
	// leave when the write starts, before they are true.
	early := w.sendOnWrite && mutation.Enabled(mutation.EarlyAckBeforeWrite)
	if early {
		w.sendMsgs()
	}
	if w.hasSnap {
		md := w.rd.Snapshot.GetMetadata()
		if err := w.store.SaveSnapshot(md.GetTerm(), md.GetIndex(), w.rd.Snapshot.GetData()); err != nil {
			return fmt.Errorf("save received snapshot at index %d: %w", md.GetIndex(), err)
		}
	}
	if err := w.store.Write(&w.batch); err != nil {
		return err
	}
	if w.hasSnap {
		if err := w.store.PruneSnapshots(); err != nil {
			return err
		}
	}
	if w.sendOnWrite && !early {
		// Persist before send holds: the write returned.
		w.sendMsgs()
	}
	return nil
}

func (w *ReadyWrite) sendMsgs() {
	if w.transport != nil && len(w.msgs) > 0 {
		w.transport.Send(w.msgs)
	}
}

// HandleReady takes one raft.Ready and handles it completely in the
// documented order (ReadyWrite): send the leader's appends, persist
// (applying the committed entries that were durable already meanwhile,
// and with an Inbox stepping the peer messages that arrive meanwhile),
// mirror into MemoryStorage, send, restore a received snapshot, apply the
// other committed entries, deliver read states, notify a leader change,
// decide a local snapshot (taken with SnapshotJob), Advance. With
// CoreOptions.ParallelApply the write runs on a goroutine HandleReady
// waits for, when there is something to do meanwhile: on a member with a
// Transport, always (its acknowledgements leave when the write is durable,
// not after the apply); on a single member (none), only when more than
// inlineApplyMax entries are to be applied, since otherwise applying them
// first on this goroutine starts the write sooner than handing it to
// another one (overlapsApply). Any error is fatal: raft is not advanced
// and the Core must not be used again.
func (c *Core) HandleReady() error {
	w, err := c.BeginReady()
	if err != nil {
		return err
	}
	var aerr, werr error
	if w.overlaps && (c.inbox != nil || c.overlapsApply(w.durable)) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			werr = w.Write()
		}()
		aerr = c.ApplyDurable(w)
		if aerr == nil && c.inbox != nil {
			aerr = c.stepInbox(w, done)
		}
		<-done
	} else if aerr = c.ApplyDurable(w); aerr == nil {
		werr = w.Write()
	}
	if aerr != nil {
		c.unlockSnap(w)
		return errors.Join(aerr, werr)
	}
	return c.FinishReady(w, werr)
}

// inlineApplyMax is how many durable entries HandleReady applies on the
// goroutine of a single member's Core (one without a Transport) before its
// write instead of while the write runs on another goroutine. Measured on
// the 2-CPU benchmark machine (issue 11): a goroutine started for the write
// began to run 8-28 µs after the go statement, while applying a batch of
// 5-6 entries took 8-10 µs (about 1.6 µs an entry), so 16 such entries take
// about as long as the slowest start; standalone setData, create and lock
// gained 3-6% in alternating runs, and a longer apply (pipelined writes
// batch 30 and more) still overlaps. It counts entries, not their cost: a
// few expensive ones (a session close that deletes many ephemerals, a
// large multi) delay the write by their whole apply.
const inlineApplyMax = 16

// overlapsApply reports whether a write without an Inbox runs on its own
// goroutine while the Core applies n durable entries (HandleReady): always
// on a member with a Transport, otherwise for more than inlineApplyMax.
func (c *Core) overlapsApply(n int) bool {
	return n > 0 && (c.transport != nil || n > c.inlineApplyMax)
}

// stepInbox runs on the Core's goroutine while w's write runs (until
// written is closed): it steps the peer messages the Inbox queued
// meanwhile (StepWhileWriting).
func (c *Core) stepInbox(w *ReadyWrite, written <-chan struct{}) error {
	for {
		select {
		case <-written:
			return nil
		case <-c.inbox.Wake():
		}
		c.inboxBuf = c.inbox.TakeSteps(c.inboxBuf[:0])
		if len(c.inboxBuf) == 0 {
			continue
		}
		err := c.StepWhileWriting(w, c.inboxBuf...)
		clear(c.inboxBuf)
		if err != nil {
			return err
		}
	}
}

// BeginReady takes one raft.Ready, publishes its soft state, sends the
// leader's appends and heartbeats (sendAppends), and prepares the write
// (ReadyWrite). The hard state it carries counts as written from here on
// for writeWithHardState's purpose only once FinishReady ran.
func (c *Core) BeginReady() (*ReadyWrite, error) {
	// Every proposal raft accepted so far is in rd.Messages if raft
	// forwards it (the core's goroutine steps no other meanwhile).
	stepped := c.propsStepped.Load()
	rd := c.rn.Ready()
	if rd.SoftState != nil {
		c.lead.Store(rd.SoftState.Lead)
		c.isLeader.Store(rd.SoftState.RaftState == raft.StateLeader)
		c.raftState.Store(uint64(rd.SoftState.RaftState))
	}
	if n := len(rd.CommittedEntries); n > 0 {
		c.raftApplying = max(c.raftApplying, rd.CommittedEntries[n-1].GetIndex())
	}
	w := &ReadyWrite{rd: rd, store: c.store, transport: c.transport, hasSnap: !raft.IsEmptySnap(rd.Snapshot)}

	// Known wrong (mutation ack-before-durable): the messages, among them
	// append acknowledgements and votes, leave before what they vouch for
	// is durable.
	if mutation.Enabled(mutation.AckBeforeDurable) {
		c.send(rd.Messages)
	} else {
		w.msgs = c.mergeAcks(c.sendAppends(rd.Messages))
		w.sendOnWrite = !w.hasSnap
	}
	c.propsSent.Store(stepped)
	if w.hasSnap {
		// Ordered against a SnapshotJob recording a local snapshot; held
		// until FinishReady restored it.
		c.snapMu.Lock()
	}

	// Committed entries that an earlier Ready made durable are applied
	// while this Ready's write runs (pipelining; see ApplyDurable).
	lastDurable, err := c.mem.LastIndex()
	if err != nil {
		c.unlockSnap(w)
		return nil, fmt.Errorf("read last raft index: %w", err)
	}
	if len(rd.Entries) > 0 {
		// This Ready's entries replace what the disk holds from their first
		// index on (a follower's log conflicting with the leader's): raft
		// may hand them over as committed already, but the copy on disk
		// is the old one until this write completes.
		lastDurable = min(lastDurable, rd.Entries[0].GetIndex()-1)
	}
	w.lastDurable = lastDurable
	if !w.hasSnap {
		ents := rd.CommittedEntries
		for w.durable < len(ents) && ents[w.durable].GetIndex() <= lastDurable && ents[w.durable].GetType() == pb.EntryNormal {
			w.durable++
		}
		w.overlaps = c.parallel && (len(rd.Entries) > 0 || rd.MustSync)
	}

	// The batch: snapshot metadata, hard state and entries. A HardState
	// that only moves the commit index (rd.MustSync false, no entries) is
	// not written on its own: raft allows losing it, and it rides along
	// with the next write. This keeps one fsync per Ready on the
	// sequential-propose path.
	if w.hasSnap {
		md := rd.Snapshot.GetMetadata()
		w.batch.Snapshot = md
		w.batch.DropAllEntries = true
		w.batch.ConfState = md.GetConfState()
	}
	if rd.HardState != nil {
		c.hardState = rd.HardState
		c.hsDirty = true
		c.term.Store(rd.HardState.GetTerm())
	}
	w.batch.Entries = rd.Entries
	if c.hsDirty && (rd.MustSync || !w.batch.Empty()) {
		w.batch.HardState = c.hardState
	}

	if w.overlaps {
		// StepWhileWriting applies from the mirror only while raft stays
		// in this term and state.
		st := c.rn.BasicStatus()
		w.term, w.state, w.keep = st.GetTerm(), st.RaftState, true
	}
	return w, nil
}

func (c *Core) unlockSnap(w *ReadyWrite) {
	if w.hasSnap {
		c.snapMu.Unlock()
	}
}

// ApplyDurable applies w's committed entries that were durable before its
// Ready, up to the first conf change: while the write runs when
// w.Overlaps, otherwise before it. So the entries a write made durable are
// applied while the next batch is written instead of before it. They are
// committed and durable here: raft never overwrites a committed entry, and
// the MemoryStorage mirror holds only durable ones.
func (c *Core) ApplyDurable(w *ReadyWrite) error {
	return c.applyCommitted(w.rd.CommittedEntries[:w.durable])
}

// StepWhileWriting steps peer messages that arrived while w's write runs
// (w.Overlaps; after ApplyDurable, before FinishReady), in order, then
// applies the entries they commit, up to the mirror's last index (all durable) and
// before the first conf change, so that a quorum's acknowledgement is
// applied (and the clients answered) while the next batch is written. raft
// takes messages between Ready and Advance (raft.Node does the same); what
// they make it send waits for the next Ready, but for the leader's commit
// index (tellCommit), which leaves before this member applies. An error is
// fatal (an Apply error).
//
// Applying from the mirror is safe only while raft's log up to lastDurable
// is the mirror's: so only as long as this member's raft state and term
// are those of the start of the write (a leader never rewrites its own
// log; a follower's log changes at a new term or a snapshot), and no
// stepped MsgSnap or MsgApp could have replaced a mirrored entry (an
// entry at or below lastDurable whose term differs from the mirror's).
// Once that fails, the rest waits for the next Ready, as without it.
func (c *Core) StepWhileWriting(w *ReadyWrite, msgs ...*pb.Message) error {
	for _, m := range msgs {
		w.keep = w.keep && c.keepsMirror(m, w.lastDurable)
		if err := c.Step(m); err != nil {
			c.lg.Debug().Err(err).Uint64("from", m.GetFrom()).Str("type", m.GetType().String()).Msg("step message")
		}
	}
	if !w.keep {
		return nil
	}
	st := c.rn.BasicStatus()
	if st.GetTerm() != w.term || st.RaftState != w.state {
		w.keep = false
		return nil
	}
	if w.state == raft.StateLeader {
		// The followers first: they apply and answer their clients (two
		// thirds of a 3-member group's) meanwhile, instead of after this
		// member's apply (issue 11).
		c.tellCommit(st.GetCommit(), w.term, w.rd.Entries)
	}
	if err := c.applyMirrored(min(st.GetCommit(), w.lastDurable)); err != nil {
		return err
	}
	if mutation.Enabled(mutation.ApplyUnwritten) {
		// Known wrong: the committed entries this write still writes are
		// applied before they are durable here.
		n := 0
		for n < len(w.rd.Entries) && w.rd.Entries[n].GetIndex() <= st.GetCommit() && w.rd.Entries[n].GetType() == pb.EntryNormal {
			n++
		}
		if err := c.applyCommitted(w.rd.Entries[:n]); err != nil {
			return err
		}
	}
	return nil
}

// FinishReady completes w once its Write returned writeErr (returned as
// is, fatal): mirror into raft's MemoryStorage, send the messages Write did
// not, restore a received snapshot, apply the other committed entries,
// deliver read states, notify a leader change, decide a local snapshot,
// Advance.
func (c *Core) FinishReady(w *ReadyWrite, writeErr error) error {
	defer c.unlockSnap(w)
	if writeErr != nil {
		return writeErr
	}
	rd := w.rd
	if w.batch.HardState != nil {
		c.hsDirty = false
	}
	if len(rd.Entries) > 0 {
		c.batches.Add(1)
		c.persisted.Add(uint64(len(rd.Entries)))
	}

	// Mirror into raft's in-memory storage, which raft reads from.
	if w.hasSnap {
		if err := c.mem.ApplySnapshot(withoutData(rd.Snapshot)); err != nil { // payload: see raftStorage
			return fmt.Errorf("apply snapshot to raft storage: %w", err)
		}
	}
	if rd.HardState != nil {
		if err := c.mem.SetHardState(rd.HardState); err != nil {
			return fmt.Errorf("set hard state: %w", err)
		}
	}
	if err := c.mem.Append(rd.Entries); err != nil {
		return fmt.Errorf("append entries to raft storage: %w", err)
	}

	// Send: only now is everything the messages promise durable (unless
	// Write sent them as soon as the write returned).
	if !w.sendOnWrite {
		c.send(w.msgs)
	}

	// Apply the snapshot and the committed entries ApplyDurable left.
	if w.hasSnap {
		if err := c.restoreSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := c.applyCommitted(rd.CommittedEntries[w.durable:]); err != nil {
		return err
	}
	if len(rd.ReadStates) > 0 && c.onReads != nil {
		c.onReads(rd.ReadStates)
	}
	c.maybeNotifyLeader()

	// Snapshot if due, then tell raft this Ready is done.
	if err := c.maybeSnapshot(); err != nil {
		return err
	}
	c.rn.Advance(rd)
	c.publishRaft()
	if c.confDirty {
		c.publishConf()
	}
	c.maybeCampaign()
	// Membership changes see the conf state raft was told is applied, and
	// their callers are woken only now.
	c.driveChanges()
	return nil
}

// Forward hands data, on a follower that knows its leader, to the
// Transport as the MsgProp raft would forward, at once: raft's copy would
// leave only with the next Ready, after the write running meanwhile, and a
// MsgProp vouches for nothing on this member's disk. It reports false where
// raft must decide: on a leader, on a single member, with no leader known.
// Safe from any goroutine (it reads published values; the Transport is
// safe for concurrent use). The caller keeps the order of its proposals:
// it must not forward while earlier proposals wait for the Core. Forward
// itself refuses while a proposal raft accepted may still wait in raft for
// the next Ready to be sent (propsSent): this one would overtake it.
func (c *Core) Forward(data []byte) bool {
	lead := c.lead.Load()
	if c.transport == nil || lead == 0 || lead == c.cfg.ID || c.isLeader.Load() ||
		c.propsSent.Load() != c.propsStepped.Load() {
		return false
	}
	c.transport.Send([]*pb.Message{{Type: pb.MsgProp.Enum(), From: new(c.cfg.ID), To: new(lead),
		Entries: []*pb.Entry{{Type: pb.EntryNormal.Enum(), Data: data}}}})
	return true
}
