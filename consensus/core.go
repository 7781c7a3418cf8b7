package consensus

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/internal/mutation"
)

// Core is one raft member without goroutines or timers: it owns a
// raft.RawNode, raft's MemoryStorage (the in-memory mirror of the durable
// log), the durable Storage, the StateMachine, the applied index, conf
// change application, leader-change notification and the decision to take
// local snapshots. Its owner calls it from ONE goroutine at a time: Node
// does so from its loop goroutine, the deterministic simulator
// (internal/sim) from the simulation's goroutine. Methods documented as safe
// from any goroutine only read published values.
//
// Invariants (see the package documentation for the Ready order):
//   - Single goroutine: Tick, Step, Propose, ReadIndex,
//     ReportUnreachable, ReportSnapshot, HasReady, HandleReady,
//     BeginReady, ApplyDurable, StepWhileWriting, FinishReady,
//     RequestSnapshot, SnapshotJob, SnapshotDone, ChangeMembers,
//     StartMemberChange, CancelMemberChange and Close are never called
//     concurrently. Only ReadyWrite.Write may run on another goroutine,
//     and only while its Ready is between BeginReady and FinishReady
//     (ReadyWrite documents the protocol); between BeginReady and
//     FinishReady the owner calls nothing but ApplyDurable and
//     StepWhileWriting (and Close after a failure). Time is never read except through the injected clock
//     (CoreOptions.Now), used only to judge which peers are running.
//   - Persist before send: a Ready's messages leave (Transport.Send) only
//     after its snapshot, hard state and entries are durable (Storage.Write
//     returned: ReadyWrite.Write sends them then), except the leader's
//     appends and heartbeats (MsgApp, MsgHeartbeat), which leave first
//     (sendAppends), the leader's commit index told while it writes
//     (tellCommit) and a follower's forwarded proposal (Forward); none
//     vouches for this member's disk.
//   - Messages stepped while a write runs (StepWhileWriting) change raft
//     only in memory; what raft sends for them leaves with a later Ready.
//     Entries they commit are applied from the mirror only while raft's
//     log up to the mirror's last index is the mirror's (keepsMirror, and
//     the term and raft state of the write's start).
//   - Apply only durable committed entries, in order, never skipping one:
//     an entry reaches StateMachine.Apply only after it was written, and
//     only as the successor of the applied index; an Apply error is fatal
//     (HandleReady, ApplyDurable, StepWhileWriting or FinishReady returns
//     it, and the applied index stays below the entry).
//   - After HandleReady, BeginReady, ApplyDurable, StepWhileWriting,
//     FinishReady or SnapshotDone returned an error the Core must not
//     be used again, except Close.
type Core struct {
	cfg       Config
	lg        zerolog.Logger
	sm        StateMachine
	store     Storage
	mem       *raft.MemoryStorage // in-memory mirror of store, read by raft
	rn        *raft.RawNode
	transport Transport // nil: single member
	now       func() time.Time
	onReads   func([]raft.ReadState)

	applied appliedTracker

	// Published on the core's goroutine, read by any goroutine.
	lead      atomic.Uint64
	isLeader  atomic.Bool
	raftState atomic.Uint64 // raft.StateType
	term      atomic.Uint64
	vote      atomic.Uint64
	commit    atomic.Uint64
	snapIndex atomic.Uint64
	confState atomic.Pointer[pb.ConfState] // as of the applied index
	// raftConf is confState once raft was told it is applied (Advance):
	// only then does the leader accept the next conf change.
	raftConf   atomic.Pointer[pb.ConfState]
	activity   peerActivity  // when each peer was last heard from
	removed    atomic.Bool   // the applied conf state no longer lists this member
	batches    atomic.Uint64 // storage writes that carried log entries
	persisted  atomic.Uint64 // log entries written to storage
	snapsTaken atomic.Uint64 // local snapshots recorded (SnapshotJobs that succeeded)

	// snapMu orders a SnapshotJob recording a local snapshot against
	// a Ready recording one received from the leader (held from
	// BeginReady to FinishReady).
	snapMu sync.Mutex

	// Owned by the core's goroutine.
	hardState    *pb.HardState // latest hard state raft emitted
	hsDirty      bool          // hardState not yet written to storage
	notifiedLead uint64        // last leader passed to OnLeaderChange
	notifiedMe   bool          // last isLeader passed to OnLeaderChange
	// snapNow asks maybeSnapshot for a snapshot now (after a conf change,
	// or RequestSnapshot).
	snapNow      bool
	snapInflight bool         // a SnapshotJob was handed out and not Done
	job          *SnapshotJob // decided, not yet taken by SnapshotJob()
	confDirty    bool         // confState changed, raftConf not yet published
	promoteConf  *pb.ConfState
	promoteWait  int             // ticks before promoting again at promoteConf
	changes      []*MemberChange // membership changes; the first one runs
	sendBuf      []*pb.Message   // reused by sendAppends
	openApp      map[uint64]int  // sendAppends: per member, its append in sendBuf that the next may extend
	openMerged   map[uint64]int  // sendAppends: per member whose open append mergeAppend built, its entry bytes
	parallel     bool            // CoreOptions.ParallelApply
	// inlineApplyMax: without a Transport, HandleReady applies up to this many
	// durable entries before the write instead of during it (tests lower it).
	inlineApplyMax int
	inbox          Inbox         // CoreOptions.Inbox
	inboxBuf       []*pb.Message // reused by stepInbox
	// told is, per follower, the highest index tellCommit let it commit
	// (min of its match and the commit index), in term toldTerm.
	told     map[uint64]uint64
	toldTerm uint64
	// raftApplying is the last index raft handed out to apply (the last of
	// a Ready's CommittedEntries, or the snapshot index recovered or
	// restored). raft reads the entries after it from MemoryStorage in a
	// later Ready, so nothing at or above raftApplying+1 may be compacted,
	// even when applyMirrored raised the applied index past it.
	raftApplying uint64
	// propsStepped counts the proposals raft accepted (Propose); propsSent
	// is its value when the last BeginReady sent raft's messages, so every
	// MsgProp raft forwarded for them has left once they are equal.
	// Written on the core's goroutine, read by Forward from any.
	propsStepped, propsSent atomic.Uint64

	observers map[uint64]bool // learners by id: true for an observer (observers.go)
}

// CoreOptions are the seams a Core's owner injects.
type CoreOptions struct {
	// Storage is the durable raft state (required). The Core takes
	// ownership: Close closes it.
	Storage Storage
	// Now is the clock used to judge which peers are running (heard from
	// within an election timeout of TickInterval ticks). Nil: time.Now.
	Now func() time.Time
	// OnReadStates receives raft's answers to ReadIndex requests, on the
	// core's goroutine, after the Ready's committed entries were applied.
	OnReadStates func([]raft.ReadState)
	// RaftLogger replaces the raft logger built from Config.Logger.
	RaftLogger raft.Logger
	// ParallelApply lets a Ready's write overlap the apply of committed
	// entries that are durable already and the stepping of peer messages
	// (ReadyWrite.Overlaps): HandleReady then writes on a goroutine it
	// waits for, the simulator completes the write after a simulated
	// latency. StateMachine.Apply then runs concurrently with
	// Storage.Write (never with another Core method). False: they run one
	// after the other, apply first. On a single member (no Transport)
	// HandleReady overlaps them only for a long apply (inlineApplyMax);
	// the simulator always applies first.
	ParallelApply bool
	// Inbox, with ParallelApply, hands HandleReady the peer messages that
	// arrive while a Ready's write runs: it steps them then, and applies
	// the entries they commit that are durable already (StepWhileWriting),
	// so a quorum's acknowledgement is applied and answered without
	// waiting for this member's next write. Nil: messages wait for the
	// owner to Step them between Readys.
	Inbox Inbox
}

// Inbox holds peer messages waiting for the Core (Node's queue).
type Inbox interface {
	// Wake is signalled (capacity one, never closed) once a message is
	// queued; it may also fire with none waiting.
	Wake() <-chan struct{}
	// TakeSteps removes the queued peer messages, in arrival order, and
	// appends them to buf. Other queued work stays queued.
	TakeSteps(buf []*pb.Message) []*pb.Message
}

// NewCore loads the durable state from opts.Storage, restores the latest
// snapshot into sm and creates the raft instance: a new group from
// cfg.Peers if the storage is empty (unless cfg.Join), a restart otherwise.
// cfg.DataDir is not used. On error the storage is left open.
func NewCore(cfg Config, sm StateMachine, opts CoreOptions) (*Core, error) {
	cfg, err := cfg.coreDefaults()
	if err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	if sm == nil {
		return nil, errors.New("consensus: nil StateMachine")
	}
	if opts.Storage == nil {
		return nil, errors.New("consensus: nil Storage")
	}
	c := &Core{
		cfg:            cfg,
		lg:             cfg.Logger.With().Str("component", "consensus").Uint64("node_id", cfg.ID).Logger(),
		sm:             sm,
		store:          opts.Storage,
		mem:            raft.NewMemoryStorage(),
		transport:      cfg.Transport,
		now:            opts.Now,
		onReads:        opts.OnReadStates,
		parallel:       opts.ParallelApply,
		inlineApplyMax: inlineApplyMax,
		inbox:          opts.Inbox,
		openApp:        make(map[uint64]int),
		openMerged:     make(map[uint64]int),
		told:           make(map[uint64]uint64),
	}
	if c.transport == nil {
		c.inbox = nil // a single member receives no messages
	}
	if c.now == nil {
		c.now = time.Now
	}
	st, err := c.recover()
	if err == nil && st.empty() && !cfg.Join && hasObservers(cfg.Peers) {
		if err = c.bootstrapWithLearners(); err == nil {
			c.lg.Info().Int("peers", len(cfg.Peers)).Msg("bootstrapping new raft group with observers as learners")
			st, err = c.recover()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	rl := opts.RaftLogger
	if rl == nil {
		rl = newRaftLogger(c.lg)
	}
	rc := RaftConfig(cfg.ID, cfg.ElectionTicks, cfg.HeartbeatTicks, &raftStorage{MemoryStorage: c.mem, store: c.store}, st.Snapshot.GetIndex(), rl)
	if c.rn, err = raft.NewRawNode(rc); err != nil {
		return nil, fmt.Errorf("consensus: create raft node: %w", err)
	}
	if st.empty() && !cfg.Join {
		peers := make([]raft.Peer, len(cfg.Peers))
		for i, p := range cfg.Peers {
			peers[i] = raft.Peer{ID: p.ID, Context: []byte(p.Addr)}
		}
		c.lg.Info().Int("peers", len(peers)).Msg("bootstrapping new raft group")
		if err := c.rn.Bootstrap(peers); err != nil {
			return nil, fmt.Errorf("consensus: bootstrap raft group: %w", err)
		}
	} else {
		c.lg.Info().
			Uint64("snapshot_index", st.Snapshot.GetIndex()).
			Uint64("commit", st.HardState.GetCommit()).
			Uint64("term", st.HardState.GetTerm()).
			Int("entries", len(st.Entries)).
			Msg("restarting raft node")
	}
	c.publishRaft()
	return c, nil
}

// recover loads the durable state into the state machine and raft's
// in-memory storage.
func (c *Core) recover() (LoadedState, error) {
	st, err := c.store.Load()
	if err != nil {
		return st, err
	}
	removed, err := c.store.CleanSnapshots(st.Snapshot.GetIndex())
	if err != nil {
		return st, err
	}
	if len(removed) > 0 {
		c.lg.Warn().Strs("files", removed).Msg("removed unrecorded snapshot files")
	}
	cs := pb.EnsureConfState(nil)
	if md := st.Snapshot; md.GetIndex() > 0 {
		data, err := c.store.LoadSnapshot(md.GetTerm(), md.GetIndex())
		if err != nil {
			return st, fmt.Errorf("load snapshot at index %d: %w", md.GetIndex(), err)
		}
		if err := c.sm.Restore(md.GetIndex(), data); err != nil {
			return st, fmt.Errorf("restore state machine from snapshot at index %d: %w", md.GetIndex(), err)
		}
		if err := c.mem.ApplySnapshot(&pb.Snapshot{Metadata: md}); err != nil { // payload: see raftStorage
			return st, fmt.Errorf("load snapshot into raft storage: %w", err)
		}
		cs = snapshotConf(md)
		c.snapIndex.Store(md.GetIndex())
		c.applied.advance(md.GetIndex())
		c.raftApplying = md.GetIndex()
	}
	c.setConfState(cs)
	c.publishConf()
	if st.HardState != nil {
		if snap := st.Snapshot.GetIndex(); st.HardState.GetCommit() < snap {
			// The commit index is written lazily and a local snapshot is
			// recorded off the loop, so the durable commit index can be
			// behind the snapshot; a snapshot only holds committed entries.
			st.HardState.Commit = new(snap)
		}
		if err := c.mem.SetHardState(st.HardState); err != nil {
			return st, fmt.Errorf("load hard state: %w", err)
		}
		c.hardState = st.HardState
		c.term.Store(st.HardState.GetTerm())
	}
	if err := c.mem.Append(st.Entries); err != nil {
		return st, fmt.Errorf("load entries: %w", err)
	}
	return st, nil
}

// setConfState records the conf state as of the applied index. It is
// published by publishConf, after Advance.
func (c *Core) setConfState(cs *pb.ConfState) {
	c.confState.Store(cs)
	c.confDirty = true
	// A member that joins has an empty conf state until it is added.
	c.removed.Store(len(cs.GetVoters()) > 0 && !isMember(cs, c.cfg.ID) &&
		!slices.Contains(cs.GetVotersOutgoing(), c.cfg.ID))
}

// publishConf makes confState the conf state raft has applied (the one
// membership changes decide on). Called once raft was told (Advance).
func (c *Core) publishConf() {
	c.confDirty = false
	c.raftConf.Store(c.confState.Load())
}

// publishRaft publishes raft's hard and soft state for Status.
func (c *Core) publishRaft() {
	st := c.rn.BasicStatus()
	c.term.Store(st.GetTerm())
	c.vote.Store(st.GetVote())
	c.commit.Store(st.GetCommit())
}

// appliedConf returns the conf state raft has applied. Any goroutine.
func (c *Core) appliedConf() *pb.ConfState { return c.raftConf.Load() }

// ConfState returns the conf state as of the applied index. Any goroutine.
func (c *Core) ConfState() *pb.ConfState { return c.confState.Load() }

// Lead returns the leader this member knows, 0 if none. Any goroutine.
func (c *Core) Lead() uint64 { return c.lead.Load() }

// IsLeader reports whether this member is the leader. Any goroutine.
func (c *Core) IsLeader() bool { return c.isLeader.Load() }

// Term returns raft's current term as of the last Ready. Any goroutine.
func (c *Core) Term() uint64 { return c.term.Load() }

// AppliedIndex returns the applied index. Any goroutine.
func (c *Core) AppliedIndex() uint64 { return c.applied.get() }

// Removed reports whether this member applied its own removal. Any goroutine.
func (c *Core) Removed() bool { return c.removed.Load() }

// Tick advances raft's logical clock by one tick, on the leader proposes to
// promote a caught-up learner, and drives the running membership change.
func (c *Core) Tick() {
	c.rn.Tick()
	c.maybePromote()
	c.tickChanges()
}

// Step hands a message from a peer to raft. It records that the sender is
// running, and on the leader drops (returning nil) a forwarded conf change
// that checkConfChange refuses.
func (c *Core) Step(m *pb.Message) error {
	c.activity.record(m.GetFrom(), c.now())
	if err := c.checkForwarded(m); err != nil {
		c.lg.Warn().Err(err).Uint64("from", m.GetFrom()).Msg("dropping forwarded conf change")
		return nil
	}
	return c.rn.Step(m)
}

// Propose hands data to raft (raft.ErrProposalDropped when no leader is
// known or the leader sheds load).
func (c *Core) Propose(data []byte) error {
	if err := c.rn.Propose(data); err != nil {
		return err
	}
	// A follower's raft forwards it as a MsgProp in the next Ready: Forward
	// must not overtake it until BeginReady sent it (propsSent).
	c.propsStepped.Add(1)
	return nil
}

// ProposeBatch hands raft the entries datas in order as one proposal
// message, as Propose does each: raft appends (or forwards) them together,
// with one message and one self-acknowledgement for all where Propose makes
// one of each per entry. An error (raft.ErrProposalDropped) means none was
// accepted; raft refuses a batch whole where it would have taken its first
// entries one by one (the leader's uncommitted-size limit), so a caller
// that wants Propose's outcomes proposes them one by one then.
func (c *Core) ProposeBatch(datas [][]byte) error {
	ents := make([]pb.Entry, len(datas))
	ptrs := make([]*pb.Entry, len(datas))
	for i, d := range datas {
		ents[i].Data = d
		ptrs[i] = &ents[i]
	}
	if err := c.rn.Step(&pb.Message{Type: pb.MsgProp.Enum(), From: new(c.cfg.ID), Entries: ptrs}); err != nil {
		return err
	}
	c.propsStepped.Add(uint64(len(datas)))
	return nil
}

// ReadIndex asks raft for a read index; the answer carries rctx and reaches
// CoreOptions.OnReadStates. Raft drops it silently without a leader.
func (c *Core) ReadIndex(rctx []byte) { c.rn.ReadIndex(rctx) }

// ReportUnreachable tells raft the last message to id was not delivered.
func (c *Core) ReportUnreachable(id uint64) { c.rn.ReportUnreachable(id) }

// ReportSnapshot tells raft whether a MsgSnap to id was delivered.
func (c *Core) ReportSnapshot(id uint64, failed bool) {
	st := raft.SnapshotFinish
	if failed {
		st = raft.SnapshotFailure
	}
	c.rn.ReportSnapshot(id, st)
}

// HasReady reports whether HandleReady has work.
func (c *Core) HasReady() bool { return c.rn.HasReady() }

// sendAppends sends the leader's appends and heartbeats, and the proposals
// a follower's raft forwards, at once, before the Ready is persisted, so
// that the followers write in parallel with the leader (raft thesis 10.2.1,
// as etcd does), and returns the other messages, which wait for persist.
// Safe: they vouch for nothing about this member's disk, and raft counts
// the leader's own copy of the entries towards the commit only when Advance
// steps its self-acknowledgement, after persist. Acknowledgements
// (MsgAppResp) and votes vouch for this member's durable state and stay
// behind. Sending forwarded proposals now also keeps them ahead of those
// Forward sends directly afterwards (propsSent).
//
// A Ready's appends to one follower that continue each other are sent as
// one (mergeAppend): raft sends an append for every proposal it steps, and
// one carrying only the commit index whenever it advances, and a follower
// answers each, so a batch of n proposals cost each follower 2n messages
// and acknowledgements where one of each does (issue 11).
func (c *Core) sendAppends(msgs []*pb.Message) []*pb.Message {
	rest := msgs[:0]
	clear(c.openApp)
	clear(c.openMerged)
	for _, m := range msgs {
		switch t := m.GetType(); {
		case t == pb.MsgApp:
			if i, ok := c.openApp[m.GetTo()]; ok {
				size, owned := c.openMerged[m.GetTo()]
				if !owned {
					size = entryBytes(c.sendBuf[i])
				}
				if merged, size := mergeAppend(c.sendBuf[i], m, size, owned); merged != nil {
					c.sendBuf[i] = merged
					c.openMerged[m.GetTo()] = size
					continue
				}
			}
			delete(c.openMerged, m.GetTo())
			c.openApp[m.GetTo()] = len(c.sendBuf)
			c.sendBuf = append(c.sendBuf, m)
		case t == pb.MsgHeartbeat || t == pb.MsgProp:
			// Nothing merges across another message to the same member.
			delete(c.openApp, m.GetTo())
			c.sendBuf = append(c.sendBuf, m)
		default:
			delete(c.openApp, m.GetTo())
			rest = append(rest, m)
		}
	}
	c.send(c.sendBuf)
	clear(c.sendBuf)
	c.sendBuf = c.sendBuf[:0]
	return rest
}

// mergeAcks drops, from a Ready's messages that wait for its write, an
// acknowledgement (MsgAppResp, not a rejection) that a later one to the
// same member, of the same term and for at least its index, follows with
// no other message to that member between them: a follower answers every
// append it steps, and the leader takes from a run of acknowledgements
// only the highest index (the match index only grows; one at or above it
// also moves a probed follower to replicating). The order of what is kept
// is unchanged; msgs is reused.
func (c *Core) mergeAcks(msgs []*pb.Message) []*pb.Message {
	clear(c.openApp) // per member: its acknowledgement in out that the next may replace
	out := msgs[:0]
	for _, m := range msgs {
		to := m.GetTo()
		if m.GetType() != pb.MsgAppResp || m.GetReject() {
			delete(c.openApp, to)
			out = append(out, m)
			continue
		}
		if i, ok := c.openApp[to]; ok && out[i].GetTerm() == m.GetTerm() && out[i].GetIndex() <= m.GetIndex() {
			// Keep m in the earlier one's place: nothing to this member
			// came between them.
			out[i] = m
			continue
		}
		c.openApp[to] = len(out)
		out = append(out, m)
	}
	clear(msgs[len(out):])
	return out
}

// maxMergedAppend bounds the entry bytes of an append mergeAppend builds
// (raft's own bound per message).
const maxMergedAppend = maxSizePerMsg

// mergeAppend returns one append equivalent to a followed by b, two
// appends of the same term to the same member, or nil if b does not
// continue a: b must start where a's entries end (b.Index is a's last
// index, b.LogTerm that entry's term, or a's own position when a carries
// none), and the entries stay within maxMergedAppend. aSize is the entry
// data bytes of a; size is the result's. A follower that takes the result
// answers once, for b's last index, as it would answer b, and ends as after
// taking a then b (raft appends b's entries after a's, and commits up to
// the higher commit index, both bounded by the last entry it got) — except
// when a starts below the follower's commit index and ends at or above it:
// raft's follower then ignores the whole append (it answers with its
// commit index), where it would have ignored a and taken b. The leader
// cannot know that commit index; the follower's next answer to a
// heartbeat makes raft probe and send b's entries again, so the cost is a
// delay to that follower, and it needs messages reordered or duplicated
// (everything a leader sends carries a commit index at or below the
// follower's match). Raft's entries and messages are not modified: unless
// owned (a was built by mergeAppend, its entry slice is this package's),
// the result is new, with a new entry slice; an owned a is extended in
// place, so merging a run of n appends copies each entry about once.
func mergeAppend(a, b *pb.Message, aSize int, owned bool) (merged *pb.Message, size int) {
	if a.GetTerm() != b.GetTerm() || a.GetFrom() != b.GetFrom() {
		return nil, 0
	}
	last, lastTerm := a.GetIndex(), a.GetLogTerm()
	if n := len(a.GetEntries()); n > 0 {
		last, lastTerm = a.GetEntries()[n-1].GetIndex(), a.GetEntries()[n-1].GetTerm()
	}
	if b.GetIndex() != last || b.GetLogTerm() != lastTerm {
		return nil, 0
	}
	size = aSize + entryBytes(b)
	if size > maxMergedAppend && len(a.GetEntries()) > 0 && len(b.GetEntries()) > 0 {
		return nil, 0
	}
	if owned {
		a.Entries = append(a.Entries, b.GetEntries()...)
		a.Commit = new(max(a.GetCommit(), b.GetCommit()))
		return a, size
	}
	ents := make([]*pb.Entry, 0, len(a.GetEntries())+len(b.GetEntries()))
	ents = append(append(ents, a.GetEntries()...), b.GetEntries()...)
	return &pb.Message{Type: pb.MsgApp.Enum(), From: new(a.GetFrom()), To: new(a.GetTo()), Term: new(a.GetTerm()),
		Index: new(a.GetIndex()), LogTerm: new(a.GetLogTerm()), Commit: new(max(a.GetCommit(), b.GetCommit())),
		Entries: ents}, size
}

// entryBytes is the entry data bytes of m.
func entryBytes(m *pb.Message) int {
	size := 0
	for _, e := range m.GetEntries() {
		size += len(e.GetData())
	}
	return size
}

func (c *Core) send(msgs []*pb.Message) {
	if c.transport != nil && len(msgs) > 0 {
		c.transport.Send(msgs)
	}
}

// tellCommit, on the leader while it writes (StepWhileWriting), tells the
// followers it replicates to that the commit index advanced to commit, so
// that they apply (and answer their clients) without waiting for the
// leader's next Ready, which raft's own message carrying it waits for. The
// message is an empty MsgApp at the follower's match index, or commit if
// lower, with that entry's term in the leader's log (from the mirror, or
// writing, the entries of the write running): raft's follower then
// commits up to that index and answers with what the leader knows
// already. It vouches for nothing on the leader's disk: the commit index
// is a quorum's (which may be the followers' without the leader's write),
// and raft sends its appends before its write too. A leader's log is only
// appended to in its term, so the terms it reads are its log's.
//
// A follower is told whenever the index it may commit, min(match,
// commit), rose past what it was told (told): also when the commit index
// stays and its own acknowledgement raised its match, the follower that
// acknowledged after the quorum did (in a group of 3, the slower of the
// two followers, which serves a third of the clients). raft answers that
// acknowledgement with the commit index too, but only in the next Ready,
// after this write.
func (c *Core) tellCommit(commit, term uint64, writing []*pb.Entry) {
	if n := len(writing); n > 0 && mutation.Enabled(mutation.TellUncommitted) {
		// Known wrong: what the leader writes is not committed yet.
		commit = max(commit, writing[n-1].GetIndex())
	}
	if c.transport == nil {
		return
	}
	if term != c.toldTerm {
		clear(c.told)
		c.toldTerm = term
	}
	c.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == c.cfg.ID || pr.State != tracker.StateReplicate || pr.Match == 0 {
			return
		}
		idx := min(pr.Match, commit)
		if idx <= c.told[id] {
			return
		}
		t, err := c.mem.Term(idx)
		if err != nil {
			if len(writing) == 0 || idx < writing[0].GetIndex() || idx > writing[len(writing)-1].GetIndex() {
				return // compacted: raft's next append tells it
			}
			t = writing[idx-writing[0].GetIndex()].GetTerm()
		}
		c.told[id] = idx
		c.sendBuf = append(c.sendBuf, &pb.Message{Type: pb.MsgApp.Enum(), From: new(c.cfg.ID), To: new(id),
			Term: new(term), Index: new(idx), LogTerm: new(t), Commit: new(commit)})
	})
	c.send(c.sendBuf)
	clear(c.sendBuf)
	c.sendBuf = c.sendBuf[:0]
}

// keepsMirror reports whether stepping m leaves raft's log at or below
// lastDurable as the MemoryStorage mirror holds it (see StepWhileWriting).
func (c *Core) keepsMirror(m *pb.Message, lastDurable uint64) bool {
	switch m.GetType() {
	case pb.MsgSnap:
		return false
	case pb.MsgApp:
		for _, e := range m.GetEntries() {
			idx := e.GetIndex()
			if idx > lastDurable {
				break
			}
			if t, err := c.mem.Term(idx); err != nil || t != e.GetTerm() {
				return false
			}
		}
	}
	return true
}

// applyMirrored applies the committed entries after the applied index up to
// hi from the MemoryStorage mirror (durable), stopping before the first
// that is not an EntryNormal (conf changes are applied from a Ready). The
// next Ready hands them over again; applyCommitted skips them.
func (c *Core) applyMirrored(hi uint64) error {
	applied := c.applied.get()
	if hi <= applied {
		return nil
	}
	ents, err := c.mem.Entries(applied+1, hi+1, math.MaxUint64)
	if err != nil {
		return nil // compacted or unavailable: the next Ready applies them
	}
	n := 0
	for n < len(ents) && ents[n].GetType() == pb.EntryNormal {
		n++
	}
	return c.applyCommitted(ents[:n])
}

// restoreSnapshot hands a snapshot received from the leader to the state
// machine. It is durable on disk already.
func (c *Core) restoreSnapshot(s *pb.Snapshot) error {
	md := s.GetMetadata()
	if err := c.sm.Restore(md.GetIndex(), s.GetData()); err != nil {
		return fmt.Errorf("restore state machine from snapshot at index %d: %w", md.GetIndex(), err)
	}
	c.setConfState(snapshotConf(md))
	c.snapIndex.Store(md.GetIndex())
	c.applied.advance(md.GetIndex())
	c.raftApplying = max(c.raftApplying, md.GetIndex())
	c.lg.Info().Uint64("index", md.GetIndex()).Uint64("term", md.GetTerm()).Msg("restored snapshot from leader")
	return nil
}

// applyCommitted applies committed entries in order. Entries at or below the
// applied index (already covered by a snapshot) are skipped.
func (c *Core) applyCommitted(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	applied := c.applied.get()
	confChanged := false
	for _, e := range ents {
		idx := e.GetIndex()
		if idx <= applied {
			continue
		}
		if idx != applied+1 {
			return fmt.Errorf("committed entry %d does not follow applied index %d", idx, applied)
		}
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) > 0 {
				if err := c.sm.Apply(idx, e.GetTerm(), e.GetData()); err != nil {
					// Fatal: the applied index stays below idx and the
					// caller returns before Advance.
					c.applied.advance(applied)
					return fmt.Errorf("state machine cannot apply entry %d (term %d): %w", idx, e.GetTerm(), err)
				}
			}
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			cc, err := decodeConfChange(e)
			if err != nil {
				return fmt.Errorf("conf change at index %d: %w", idx, err)
			}
			if err := c.applyConfChange(idx, cc); err != nil {
				c.applied.advance(applied) // fatal, as for an Apply error
				return err
			}
			confChanged = true
		default:
			return fmt.Errorf("unknown entry type %v at index %d", e.GetType(), idx)
		}
		applied = idx
	}
	if confChanged {
		// A snapshot from before this change does not list new members,
		// and raft on a new member refuses such a snapshot. Once the log
		// has been compacted a new member can only join through a
		// snapshot, so take a fresh one at the end of this Ready.
		c.snapNow = c.snapNow || c.snapIndex.Load() > 0
		if err := c.writeWithHardState(&WriteBatch{ConfState: c.confState.Load()}); err != nil {
			return err
		}
	}
	c.applied.advance(applied)
	return nil
}

// decodeConfChange decodes the conf change a raft entry of type
// EntryConfChange or EntryConfChangeV2 carries.
func decodeConfChange(e *pb.Entry) (pb.ConfChangeI, error) {
	if e.GetType() == pb.EntryConfChange {
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return nil, fmt.Errorf("decode conf change: %w", err)
		}
		return &cc, nil
	}
	var cc pb.ConfChangeV2
	if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
		return nil, fmt.Errorf("decode conf change v2: %w", err)
	}
	return &cc, nil
}

// applyConfChange applies cc, the conf change at index idx, to raft and
// tells the transport about peers. A step whose base (confbase.go) is not
// the conf state applied now is applied as no change: raft's configuration,
// the transport's peers and the observers stay as they are. The decision
// reads only the entry and the replicated conf state. A context with a base
// this build cannot read is an error (fatal, as any unreadable entry).
func (c *Core) applyConfChange(idx uint64, cc pb.ConfChangeI) error {
	v2 := cc.AsV2()
	base, peer, err := parseStepContext(v2.GetContext())
	if err != nil {
		return fmt.Errorf("conf change at index %d: %w", idx, err)
	}
	if cur := c.confState.Load(); base != nil && (!sameConf(base, cur) || !sameHistory(base, cur)) {
		if len(cur.GetVotersOutgoing()) == 0 {
			// Outside a joint configuration (zkraft never enters one)
			// raft takes the cancelled change as no change; inside one
			// it must not be called at all.
			c.rn.ApplyConfChange(cancelled(v2)) // returns cur again
		}
		c.lg.Warn().Uint64("index", idx).Str("change", pb.ConfChangesToString(v2.GetChanges())).
			Uints64("base_voters", base.GetVoters()).Uints64("base_learners", base.GetLearners()).
			Uints64("voters", cur.GetVoters()).Uints64("learners", cur.GetLearners()).
			Func(func(e *zerolog.Event) {
				if bi, ok := confIndexOf(base); ok {
					e.Uint64("base_conf_index", bi)
				}
				if ci, ok := confIndexOf(cur); ok {
					e.Uint64("conf_index", ci)
				}
			}).
			Msg("conf change planned against another membership or point of its history: applied as no change")
		return nil
	}
	cs := withConfIndex(c.rn.ApplyConfChange(cc), idx)
	c.setConfState(cs)
	pu, _ := c.transport.(PeerUpdater)
	for _, ch := range v2.GetChanges() {
		id := ch.GetNodeId()
		if id == 0 {
			continue // no change (markHistory's, or raft's cancelled form)
		}
		addr, observer := parseContext(peer)
		c.noteObserver(ch.GetType(), id, observer)
		switch ch.GetType() {
		case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
			if pu != nil && id != c.cfg.ID && addr != "" {
				pu.AddPeer(Peer{ID: id, Addr: addr})
			}
		case pb.ConfChangeRemoveNode:
			if pu != nil && id != c.cfg.ID {
				pu.RemovePeer(id)
			}
			if id == c.cfg.ID {
				c.lg.Warn().Msg("this member was removed from the group")
				if c.cfg.OnRemoved != nil {
					c.cfg.OnRemoved()
				}
			}
		}
	}
	c.lg.Info().Str("change", pb.ConfChangesToString(v2.GetChanges())).
		Uints64("voters", cs.GetVoters()).Msg("applied conf change")
	return nil
}

// maybeNotifyLeader calls OnLeaderChange when the leader or this member's
// leadership changed since the last call.
func (c *Core) maybeNotifyLeader() {
	lead, me := c.lead.Load(), c.isLeader.Load()
	if lead == c.notifiedLead && me == c.notifiedMe {
		return
	}
	c.notifiedLead, c.notifiedMe = lead, me
	c.lg.Info().Uint64("leader", lead).Bool("is_leader", me).Uint64("term", c.term.Load()).Msg("leader changed")
	if c.cfg.OnLeaderChange != nil {
		c.cfg.OnLeaderChange(me, lead, c.term.Load())
	}
}

// writeWithHardState writes w durably, with the hard state if it changed
// since it was last written.
func (c *Core) writeWithHardState(w *WriteBatch) error {
	if c.hsDirty {
		w.HardState = c.hardState
	}
	if err := c.store.Write(w); err != nil {
		return err
	}
	if w.HardState != nil {
		c.hsDirty = false
	}
	return nil
}

// maybeCampaign makes a sole voter elect itself at once instead of waiting
// for an election timeout.
func (c *Core) maybeCampaign() {
	// Only from follower: a candidate's own vote is delivered on Advance,
	// and campaigning again would only bump the term.
	if c.lead.Load() != 0 || raft.StateType(c.raftState.Load()) != raft.StateFollower {
		return
	}
	cs := c.confState.Load()
	if len(cs.GetVoters()) != 1 || cs.GetVoters()[0] != c.cfg.ID || len(cs.GetVotersOutgoing()) != 0 {
		return
	}
	if err := c.rn.Campaign(); err != nil {
		c.lg.Warn().Err(err).Msg("campaign as sole voter")
	}
}

// Close writes a hard state that only moved the commit index, if any (best
// effort: losing it is harmless, raft re-learns it), unless the Core failed,
// and closes the storage. Unfinished membership changes report ErrStopped.
// No SnapshotJob may be running.
func (c *Core) Close(failed bool) error {
	c.failChanges(ErrStopped)
	var errs []error
	if !failed && c.hsDirty {
		if err := c.store.Write(&WriteBatch{HardState: c.hardState}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.store.Close(); err != nil {
		errs = append(errs, err)
	}
	c.lead.Store(0)
	c.isLeader.Store(false)
	return errors.Join(errs...)
}
