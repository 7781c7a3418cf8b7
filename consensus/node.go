package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// StateMachine is implemented by the caller (zkraft's server). All three
// methods are called from the node's single apply goroutine, never
// concurrently with each other.
type StateMachine interface {
	// Apply is called once for every committed EntryNormal with non-empty
	// Data, in log order. index is the raft index (used as zxid). It must be
	// deterministic. Called only after the entry is durably stored (fsync'd)
	// on this member.
	//
	// A non-nil error means this member cannot apply the entry (it cannot
	// decode it, or does not know its kind) and must have left its state
	// as it was. It is fatal: the node logs it, stops without applying
	// anything after index-1 and without telling raft the entry was
	// handled, and Err returns it. Skipping the entry instead would let
	// this replica silently diverge from the others.
	Apply(index uint64, term uint64, data []byte) error
	// Snapshot serializes the state as of the last applied index.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a snapshot taken at index.
	Restore(index uint64, data []byte) error
}

// Node is one member of a raft group: it owns the raft instance, its
// durable storage and the loop goroutine that drives both. Methods are safe
// for concurrent use.
type Node struct {
	cfg       Config
	lg        zerolog.Logger
	sm        StateMachine
	store     *diskStore
	mem       *raft.MemoryStorage // in-memory mirror of store, read by raft
	rn        raft.Node
	transport Transport

	applied appliedTracker
	reads   readRegistry
	snaps   snapshotter // writes local snapshots off the loop

	// Published by the loop, read by any goroutine.
	lead      atomic.Uint64
	isLeader  atomic.Bool
	raftState atomic.Uint64 // raft.StateType
	term      atomic.Uint64
	snapIndex atomic.Uint64
	confState atomic.Pointer[pb.ConfState] // as of the applied index
	// raftConf is confState once raft was told it is applied (Advance):
	// only then does the leader accept the next conf change.
	raftConf  atomic.Pointer[pb.ConfState]
	confMu    sync.Mutex
	confC     chan struct{} // closed and replaced when raftConf changes
	activity  peerActivity  // when each peer was last heard from
	removed   atomic.Bool   // the applied conf state no longer lists this member
	batches   atomic.Uint64 // bbolt writes that carried log entries
	persisted atomic.Uint64 // log entries written to bbolt

	// Owned by the loop goroutine.
	hardState    *pb.HardState // latest hard state raft emitted
	hsDirty      bool          // hardState not yet written to bbolt
	notifiedLead uint64        // last leader passed to OnLeaderChange
	notifiedMe   bool          // last isLeader passed to OnLeaderChange
	// snapAfterConfChange asks maybeSnapshot for a snapshot now.
	snapAfterConfChange bool
	confDirty           bool          // confState changed, raftConf not yet published
	promoteConf         *pb.ConfState // conf state of the last promotion proposal
	promoteWait         int           // ticks before promoting again at promoteConf

	stopOnce sync.Once
	stopc    chan struct{} // closed by Stop
	done     chan struct{} // closed when the loop and cleanup finished
	fatal    error         // set before done is closed, read after
	closeErr error         // set before done is closed, read after
}

// Start opens or creates the storage in cfg.DataDir, restores the latest
// snapshot into sm, and starts the raft loop. Raft then re-delivers every
// committed entry after the snapshot through sm.Apply. Empty storage
// bootstraps a new group from cfg.Peers (unless cfg.Join).
func Start(cfg Config, sm StateMachine) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	if sm == nil {
		return nil, errors.New("consensus: nil StateMachine")
	}
	n := &Node{
		cfg:       cfg,
		lg:        cfg.Logger.With().Str("component", "consensus").Uint64("node_id", cfg.ID).Logger(),
		sm:        sm,
		transport: cfg.Transport,
		mem:       raft.NewMemoryStorage(),
		stopc:     make(chan struct{}),
		done:      make(chan struct{}),
	}
	n.reads.init()
	n.snaps.init()
	if n.store, err = openDiskStore(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	st, err := n.recover()
	if err != nil {
		_ = n.store.close()
		return nil, fmt.Errorf("consensus: %w", err)
	}

	rc := RaftConfig(cfg.ID, cfg.ElectionTicks, cfg.HeartbeatTicks, n.mem, st.snapshot.GetIndex(), newRaftLogger(n.lg))
	if st.empty() && !cfg.Join {
		peers := make([]raft.Peer, len(cfg.Peers))
		for i, p := range cfg.Peers {
			peers[i] = raft.Peer{ID: p.ID, Context: []byte(p.Addr)}
		}
		n.lg.Info().Int("peers", len(peers)).Msg("bootstrapping new raft group")
		n.rn = raft.StartNode(rc, peers)
	} else {
		n.lg.Info().
			Uint64("snapshot_index", st.snapshot.GetIndex()).
			Uint64("commit", st.hardState.GetCommit()).
			Uint64("term", st.hardState.GetTerm()).
			Int("entries", len(st.entries)).
			Msg("restarting raft node")
		n.rn = raft.RestartNode(rc)
	}
	if n.transport != nil {
		if err := n.transport.Start(n); err != nil {
			n.rn.Stop()
			_ = n.store.close()
			return nil, fmt.Errorf("consensus: start transport: %w", err)
		}
	}
	n.startSnapshotter()
	go n.run()
	return n, nil
}

// recover loads the durable state into the state machine and raft's
// in-memory storage.
func (n *Node) recover() (loadedState, error) {
	st, err := n.store.load()
	if err != nil {
		return st, err
	}
	removed, err := cleanSnapDir(n.store.snapDir, st.snapshot.GetIndex())
	if err != nil {
		return st, err
	}
	if len(removed) > 0 {
		n.lg.Warn().Strs("files", removed).Msg("removed unrecorded snapshot files")
	}
	cs := pb.EnsureConfState(nil)
	if md := st.snapshot; md.GetIndex() > 0 {
		data, err := readSnapFile(n.store.snapDir, md.GetTerm(), md.GetIndex())
		if err != nil {
			return st, fmt.Errorf("load snapshot at index %d: %w", md.GetIndex(), err)
		}
		if err := n.sm.Restore(md.GetIndex(), data); err != nil {
			return st, fmt.Errorf("restore state machine from snapshot at index %d: %w", md.GetIndex(), err)
		}
		if err := n.mem.ApplySnapshot(&pb.Snapshot{Metadata: md, Data: data}); err != nil {
			return st, fmt.Errorf("load snapshot into raft storage: %w", err)
		}
		cs = pb.EnsureConfState(md.GetConfState())
		n.snapIndex.Store(md.GetIndex())
		n.applied.advance(md.GetIndex())
	}
	n.setConfState(cs)
	n.publishConf()
	if st.hardState != nil {
		if snap := st.snapshot.GetIndex(); st.hardState.GetCommit() < snap {
			// The commit index is written lazily and a local snapshot is
			// recorded off the loop, so the durable commit index can be
			// behind the snapshot; a snapshot only holds committed entries.
			st.hardState.Commit = new(snap)
		}
		if err := n.mem.SetHardState(st.hardState); err != nil {
			return st, fmt.Errorf("load hard state: %w", err)
		}
		n.hardState = st.hardState
		n.term.Store(st.hardState.GetTerm())
	}
	if err := n.mem.Append(st.entries); err != nil {
		return st, fmt.Errorf("load entries: %w", err)
	}
	return st, nil
}

// setConfState records the conf state as of the applied index. It is
// published to confWatch callers by publishConf, after Advance.
func (n *Node) setConfState(cs *pb.ConfState) {
	n.confState.Store(cs)
	n.confDirty = true
	// A member that joins has an empty conf state until it is added.
	n.removed.Store(len(cs.GetVoters()) > 0 && !isMember(cs, n.cfg.ID) &&
		!slices.Contains(cs.GetVotersOutgoing(), n.cfg.ID))
}

// Removed reports whether this member has applied its own removal from the
// group (it then takes no part in the group any more: no leader talks to
// it, and its state stops advancing).
func (n *Node) Removed() bool { return n.removed.Load() }

// IsMember reports whether id is a voter or learner in the conf state this
// member has applied.
func (n *Node) IsMember(id uint64) bool {
	cs := n.confState.Load()
	return isMember(cs, id) || slices.Contains(cs.GetVotersOutgoing(), id)
}

// publishConf makes confState the conf state raft has applied and wakes
// confWatch callers. Called on the loop once raft was told (Advance).
func (n *Node) publishConf() {
	n.confDirty = false
	n.raftConf.Store(n.confState.Load())
	n.confMu.Lock()
	defer n.confMu.Unlock()
	if n.confC != nil {
		close(n.confC)
	}
	n.confC = make(chan struct{})
}

// appliedConf returns the conf state raft has applied on this member.
func (n *Node) appliedConf() *pb.ConfState { return n.raftConf.Load() }

// confWatch returns a channel closed at the next change of appliedConf.
func (n *Node) confWatch() <-chan struct{} {
	n.confMu.Lock()
	defer n.confMu.Unlock()
	return n.confC
}

// run is the loop goroutine: it ticks raft and handles each Ready.
func (n *Node) run() {
	defer n.shutdown()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			n.rn.Tick()
			n.maybePromote()
		case rd := <-n.rn.Ready():
			if err := n.handleReady(rd); err != nil {
				n.fatal = err
				n.lg.Error().Err(err).Msg("fatal error, stopping raft node")
				return
			}
			n.maybeCampaign()
		case err := <-n.snaps.doneC:
			if err = n.snapshotDone(err); err != nil {
				n.fatal = err
				n.lg.Error().Err(err).Msg("fatal snapshot error, stopping raft node")
				return
			}
		case <-n.stopc:
			return
		}
	}
}

// shutdown runs on the loop goroutine when it exits, whatever the reason.
func (n *Node) shutdown() {
	if n.transport != nil {
		n.transport.Stop()
	}
	n.rn.Stop()
	n.stopSnapshotter()
	var errs []error
	if n.fatal == nil && n.hsDirty {
		// Best effort: keep the latest commit index. Losing it is harmless
		// (raft re-learns it), so this is not needed for safety.
		if err := n.store.write(&writeBatch{hardState: n.hardState}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := n.store.close(); err != nil {
		errs = append(errs, err)
	}
	n.closeErr = errors.Join(errs...)
	n.lead.Store(0)
	n.isLeader.Store(false)
	close(n.done)
}

// maybeCampaign makes a sole voter elect itself at once instead of waiting
// for an election timeout.
func (n *Node) maybeCampaign() {
	// Only from follower: a candidate's own vote is delivered on Advance,
	// and campaigning again would only bump the term.
	if n.lead.Load() != 0 || raft.StateType(n.raftState.Load()) != raft.StateFollower {
		return
	}
	cs := n.confState.Load()
	if len(cs.GetVoters()) != 1 || cs.GetVoters()[0] != n.cfg.ID || len(cs.GetVotersOutgoing()) != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.TickInterval)
	defer cancel()
	if err := n.rn.Campaign(ctx); err != nil {
		n.lg.Warn().Err(err).Msg("campaign as sole voter")
	}
}

// Propose hands data to raft. It returns once raft accepted the proposal,
// not when it is committed: watch StateMachine.Apply for that. A proposal
// can still be lost (leader change); callers time out and retry. If the
// leader is lost while the call is in flight, it waits for a new leader
// until ctx is done. On a follower raft forwards the proposal. Errors:
// ErrEmptyProposal, ErrStopped, ErrNoLeader, ctx.Err(), or a wrapped
// raft.ErrProposalDropped when the leader sheds load.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return ErrEmptyProposal
	}
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	if n.lead.Load() == 0 {
		return ErrNoLeader
	}
	return n.mapErr(n.rn.Propose(ctx, data))
}

// WaitApplied blocks until this member has applied index, ctx is done, or
// the node stops.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.applied.wait(ctx, index, n.done)
}

// AppliedIndex returns the index of the last entry applied to the state
// machine (or restored from a snapshot).
func (n *Node) AppliedIndex() uint64 { return n.applied.get() }

// IsLeader reports whether this member currently believes it is the leader.
func (n *Node) IsLeader() bool { return n.isLeader.Load() }

// Stop stops the loop, the transport and raft, and closes bbolt. It is
// idempotent and returns the error of closing storage, if any (the fatal
// error that may have stopped the node earlier is Err). It must not be
// called from StateMachine methods or OnLeaderChange.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { close(n.stopc) })
	<-n.done
	return n.closeErr
}

// Done is closed once the node has stopped, by Stop or by a fatal error.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns the fatal error that stopped the node, or nil.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.fatal
	default:
		return nil
	}
}

// Step implements MessageHandler. It records that the sender is running,
// and on the leader drops a forwarded conf change that checkConfChange
// refuses.
//
// It never waits long for a proposal a follower forwarded (MsgProp): raft
// takes proposals only while it knows a leader and otherwise blocks the
// caller, and the transport's connection from that follower carries its
// later messages behind the proposal. A member resuming from a pause with
// proposals forwarded to it while it was leader would wait for a leader
// whose heartbeats are queued behind them (issue 9). Such a proposal is
// dropped instead (ErrNoLeader, or ctx.Err() after one tick): the proposer
// times out and its client retries.
func (n *Node) Step(ctx context.Context, m *pb.Message) error {
	n.activity.record(m.GetFrom(), time.Now())
	if err := n.checkForwarded(m); err != nil {
		n.lg.Warn().Err(err).Uint64("from", m.GetFrom()).Msg("dropping forwarded conf change")
		return nil
	}
	if m.GetType() == pb.MsgProp {
		if n.lead.Load() == 0 {
			return ErrNoLeader
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.cfg.TickInterval)
		defer cancel()
	}
	return n.mapErr(n.rn.Step(ctx, m))
}

// ReportUnreachable implements MessageHandler.
func (n *Node) ReportUnreachable(id uint64) { n.rn.ReportUnreachable(id) }

// ReportSnapshot implements MessageHandler.
func (n *Node) ReportSnapshot(id uint64, failed bool) {
	st := raft.SnapshotFinish
	if failed {
		st = raft.SnapshotFailure
	}
	n.rn.ReportSnapshot(id, st)
}

var _ MessageHandler = (*Node)(nil)

// mapErr turns raft's stop error into ErrStopped.
func (n *Node) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrStopped):
		return ErrStopped
	case errors.Is(err, raft.ErrProposalDropped):
		return fmt.Errorf("consensus: propose: %w", err)
	default:
		return err
	}
}
