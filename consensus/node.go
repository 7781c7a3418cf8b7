package consensus

import (
	"context"
	"errors"
	"fmt"
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

// Node is one member of a raft group: a Core plus the loop goroutine that
// owns it, a ticker, and a queue through which other goroutines reach the
// Core. Methods are safe for concurrent use.
type Node struct {
	cfg       Config
	lg        zerolog.Logger
	core      *Core
	store     *diskStore // the Core's Storage
	transport Transport

	reads readRegistry
	snaps snapshotter // runs the Core's SnapshotJobs off the loop
	q     opQueue     // work for the loop from other goroutines

	// Owned by the loop goroutine.
	held []proposal // proposals waiting for a leader
	// batch, heldBatch and batchData are runQueued's, retryHeld's and
	// runProposals' scratch.
	batch, heldBatch []*proposal
	batchData        [][]byte
	// stopping: the loop is exiting; stepProposal fails what it is given
	// (loop goroutine only).
	stopping bool

	// queuedProposals counts proposals queued for the loop or held; while
	// any are, forward does not overtake them.
	queuedProposals atomic.Int64

	stopOnce sync.Once
	stopc    chan struct{} // closed by Stop
	done     chan struct{} // closed when the loop and cleanup finished
	fatal    error         // set before done is closed, read after
	closeErr error         // set before done is closed, read after
}

// maxQueuedSteps bounds the peer messages waiting for the loop; beyond it
// Step drops them (raft tolerates lost messages) rather than grow without
// bound or block the transport's reader.
const maxQueuedSteps = 8192

// proposal is a Propose or ProposeAsync waiting for the loop.
type proposal struct {
	ctx context.Context
	// deadline, if not zero, fails the proposal with
	// context.DeadlineExceeded if the loop reaches it at or after then, as
	// a ctx with that deadline would (ProposeAsync: checked, not timed).
	deadline time.Time
	data     []byte     // the entry
	errC     chan error // capacity 1; nil for ProposeAsync's proposals
	// done, for ProposeAsync, receives the outcome on the loop goroutine
	// instead of errC.
	done ProposeDone
}

// ProposeDone receives the outcome of a ProposeAsync (ProposeAsync says
// when and where). An interface, so that a caller's own record of the
// proposal can take it without a closure per proposal.
type ProposeDone interface {
	ProposeDone(err error)
}

// DoneFunc is a func as a ProposeDone.
type DoneFunc func(err error)

// ProposeDone implements ProposeDone.
func (f DoneFunc) ProposeDone(err error) { f(err) }

// expired is the error p's caller gave up with (its ctx ended, or its
// deadline passed), or nil.
func (p *proposal) expired() error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if !p.deadline.IsZero() && !time.Now().Before(p.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// finish hands the outcome of p (nil: raft accepted it) to its caller.
func (n *Node) finish(p *proposal, err error) {
	if p.done != nil {
		p.done.ProposeDone(n.mapErr(err))
		return
	}
	p.errC <- err
}

// opQueue hands work to the loop: every op queued while the loop was busy
// runs in its next iteration, before the Readys they cause are handled, so
// concurrent proposals share one fsync (group commit). Peer messages are
// queued as such: the Core also takes them while a write runs (Inbox).
type opQueue struct {
	mu       sync.Mutex
	ops      []queuedOp
	steps    int // queued peer messages
	wake     chan struct{}
	stepWake chan struct{} // signalled when a peer message is queued
}

// queuedOp is a function for the loop, a peer message to step (msg set),
// or a proposal for stepProposal (isProp), failed at shutdown if never run.
// The proposal is held by value: a queued write allocates nothing of its
// own here.
type queuedOp struct {
	fn     func(*Node)
	msg    *pb.Message
	isProp bool
	prop   proposal
}

// pushProposal queues p for stepProposal.
func (q *opQueue) pushProposal(p proposal) {
	q.mu.Lock()
	q.ops = append(q.ops, queuedOp{isProp: true, prop: p})
	q.mu.Unlock()
	signal(q.wake)
}

// push queues op.
func (q *opQueue) push(op func(*Node)) {
	q.mu.Lock()
	q.ops = append(q.ops, queuedOp{fn: op})
	q.mu.Unlock()
	signal(q.wake)
}

// pushStep queues a peer message; it is dropped, reporting false, when
// maxQueuedSteps are queued already.
func (q *opQueue) pushStep(m *pb.Message) bool {
	q.mu.Lock()
	if q.steps >= maxQueuedSteps {
		q.mu.Unlock()
		return false
	}
	q.steps++
	q.ops = append(q.ops, queuedOp{msg: m})
	q.mu.Unlock()
	signal(q.wake)
	signal(q.stepWake)
	return true
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// take returns the queued ops, reusing buf.
func (q *opQueue) take(buf []queuedOp) []queuedOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	buf = append(buf[:0], q.ops...)
	clear(q.ops)
	q.ops = q.ops[:0]
	q.steps = 0
	return buf
}

// Wake implements Inbox.
func (q *opQueue) Wake() <-chan struct{} { return q.stepWake }

// TakeSteps implements Inbox: it removes the queued peer messages and
// keeps the other ops queued, in order.
func (q *opQueue) TakeSteps(buf []*pb.Message) []*pb.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.steps == 0 {
		return buf
	}
	rest := q.ops[:0]
	for _, op := range q.ops {
		if op.msg != nil {
			buf = append(buf, op.msg)
		} else {
			rest = append(rest, op)
		}
	}
	clear(q.ops[len(rest):])
	q.ops = rest
	q.steps = 0
	return buf
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
	n := &Node{
		cfg:       cfg,
		lg:        cfg.Logger.With().Str("component", "consensus").Uint64("node_id", cfg.ID).Logger(),
		transport: cfg.Transport,
		stopc:     make(chan struct{}),
		done:      make(chan struct{}),
	}
	n.q.wake = make(chan struct{}, 1)
	n.q.stepWake = make(chan struct{}, 1)
	n.reads.init()
	n.snaps.init()
	if err := checkNotSeeding(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	if n.store, err = openDiskStore(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	n.store.wal.torn.log(n.lg)
	var st Storage = n.store
	if testWrapStorage != nil {
		st = testWrapStorage(st)
	}
	var inbox Inbox = &n.q
	if testNoInbox {
		inbox = nil
	}
	n.core, err = NewCore(cfg, sm, CoreOptions{Storage: st, OnReadStates: n.reads.deliver, ParallelApply: true, Inbox: inbox})
	if err != nil {
		_ = n.store.Close()
		return nil, err
	}
	if testInlineApplyMax != nil {
		n.core.inlineApplyMax = *testInlineApplyMax
	}
	if n.transport != nil {
		if err := n.transport.Start(n); err != nil {
			_ = n.store.Close()
			return nil, fmt.Errorf("consensus: start transport: %w", err)
		}
	}
	n.startSnapshotter()
	go n.run()
	return n, nil
}

// Removed reports whether this member has applied its own removal from the
// group (it then takes no part in the group any more: no leader talks to
// it, and its state stops advancing).
func (n *Node) Removed() bool { return n.core.Removed() }

// IsMember reports whether id is a member (InConfState) of the conf state
// this member has applied.
func (n *Node) IsMember(id uint64) bool { return InConfState(n.core.ConfState(), id) }

// run is the loop goroutine: it ticks the Core, runs what other goroutines
// queued, and handles every Ready that results.
func (n *Node) run() {
	defer n.shutdown()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	var ops []queuedOp
	for {
		select {
		case <-ticker.C:
			n.core.Tick()
		case <-n.q.wake:
			ops = n.runQueued(ops)
		case err := <-n.snaps.doneC:
			if err = n.core.SnapshotDone(err); err != nil {
				n.fatal = err
				n.lg.Error().Err(err).Msg("fatal snapshot error, stopping raft node")
				return
			}
		case <-n.stopc:
			return
		}
		for early := 0; n.core.HasReady(); {
			if err := n.core.HandleReady(); err != nil {
				n.fatal = err
				n.lg.Error().Err(err).Msg("fatal error, stopping raft node")
				return
			}
			n.retryHeld()
			// Once a write is done, raft has more (on a single member, the
			// entries it committed by Advance): hand it the work queued
			// meanwhile first, so that the next Ready writes the new
			// proposals while it applies those (Core.ApplyDurable). Bounded,
			// so ticks and Stop are not held off under load.
			if early < maxEarlyRuns && n.core.HasReady() {
				select {
				case <-n.q.wake:
					ops = n.runQueued(ops)
					early++
				default:
				}
			}
		}
		if job := n.core.SnapshotJob(); job != nil {
			n.snaps.jobs <- job // capacity 1, and at most one job is in flight
		}
	}
}

// testWrapStorage, set only by tests, wraps the Storage Start hands the Core.
var testWrapStorage func(Storage) Storage

// testNoForward, set only by benchmarks, leaves forwarding proposals to
// raft (forward reports false).
var testNoForward bool

// testNoInbox, set only by benchmarks, starts the Core without an Inbox
// (peer messages wait for the next Ready), to measure what it saves.
var testNoInbox bool

// testInlineApplyMax, set only by tests, replaces the Core's
// inlineApplyMax (how many durable entries a member without a Transport
// applies before its write rather than during it).
var testInlineApplyMax *int

// maxEarlyRuns bounds how often one loop iteration runs queued work
// between two Readys before it returns to the ticker and Stop.
const maxEarlyRuns = 8

// runQueued runs the work other goroutines queued, reusing buf.
func (n *Node) runQueued(buf []queuedOp) []queuedOp {
	buf = n.q.take(buf)
	for i := 0; i < len(buf); i++ {
		op := &buf[i]
		switch {
		case op.msg != nil:
			if err := n.core.Step(op.msg); err != nil {
				n.lg.Debug().Err(err).Uint64("from", op.msg.GetFrom()).Str("type", op.msg.GetType().String()).Msg("step message")
			}
		case op.isProp:
			// Proposals queued back to back are stepped together, in
			// order (stepProposals).
			batch, j := n.batch[:0], i
			for ; j < len(buf) && buf[j].isProp; j++ {
				batch = append(batch, &buf[j].prop)
			}
			n.stepProposals(batch)
			clear(batch)
			n.batch = batch[:0]
			clear(buf[i : j-1])
			i = j - 1 // cleared below
		default:
			op.fn(n)
		}
		buf[i] = queuedOp{}
	}
	return buf
}

// shutdown runs on the loop goroutine when it exits, whatever the reason.
func (n *Node) shutdown() {
	n.stopping = true
	n.failUnproposed()
	if n.transport != nil {
		n.transport.Stop()
	}
	n.stopSnapshotter()
	n.closeErr = n.core.Close(n.fatal != nil)
	close(n.done)
}

// propose runs p on the loop once a leader is known (holding it until then)
// and waits for raft to accept or drop it.
func (n *Node) propose(ctx context.Context, p proposal) error {
	n.queue(p)
	select {
	case err := <-p.errC:
		return n.mapErr(err)
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// queue hands p to the loop. It stays counted in queuedProposals until it
// is handed to raft or fails (so a caller's direct forward never overtakes
// it, forward).
func (n *Node) queue(p proposal) {
	n.queuedProposals.Add(1)
	n.q.pushProposal(p)
}

// stepProposal runs on the loop: it hands p to raft, or holds it while no
// leader is known (raft would drop it) or while proposals queued before it
// are still held, so proposals reach raft in the order they were queued: a
// leader's heartbeat stepped in the same batch just before p must not let p
// overtake a proposal held since the leader was lost.
func (n *Node) stepProposal(p *proposal) { n.stepProposals([]*proposal{p}) }

// stepProposals is stepProposal for proposals queued one after the other,
// in that order: raft takes them as one batch (runProposals). Held ones are
// copied: ps points into the caller's scratch.
func (n *Node) stepProposals(ps []*proposal) {
	if n.stopping {
		for _, p := range ps {
			n.queuedProposals.Add(-1)
			n.finish(p, ErrStopped)
		}
		return
	}
	n.retryHeld()
	if n.core.Lead() == 0 || len(n.held) > 0 {
		for _, p := range ps {
			n.held = append(n.held, *p)
		}
		return
	}
	n.runProposals(ps)
}

// runProposals hands ps to raft in order (failing those whose caller gave
// up) and stops counting them. Consecutive proposals go as batches of at
// most maxBatchBytes of data (Core.ProposeBatch: one raft message and
// append for all): raft checks its uncommitted-size limit once a message
// and takes any message while nothing is uncommitted, so a batch may pass
// the limit by at most one batch, as one entry could before. If raft
// refuses a batch, its proposals go one by one, so each gets the outcome
// Propose would have given it. A proposal stops counting in
// queuedProposals only once raft took it, so a forward cannot overtake
// it. ps is the caller's scratch: it is reordered.
func (n *Node) runProposals(ps []*proposal) {
	live := ps[:0] // filters ps in place
	for _, p := range ps {
		if err := p.expired(); err != nil {
			n.queuedProposals.Add(-1)
			if p.done != nil {
				p.done.ProposeDone(err) // a ProposeAsync caller is not waiting for errC
			}
			continue // the caller gave up
		}
		live = append(live, p)
	}
	for len(live) > 0 {
		k, size := 1, len(live[0].data)
		for k < len(live) && size+len(live[k].data) <= maxBatchBytes {
			size += len(live[k].data)
			k++
		}
		n.proposeBatch(live[:k])
		live = live[k:]
	}
}

// maxBatchBytes bounds the data of the proposals runProposals steps into
// raft as one message (a variable for tests).
var maxBatchBytes = maxSizePerMsg

// proposeBatch steps batch into raft as one message, or one by one if raft
// refuses it as a whole, and finishes each proposal.
func (n *Node) proposeBatch(batch []*proposal) {
	if len(batch) > 1 {
		datas := n.batchData[:0]
		for _, p := range batch {
			datas = append(datas, p.data)
		}
		err := n.core.ProposeBatch(datas)
		clear(datas)
		n.batchData = datas[:0]
		if err == nil || !errors.Is(err, raft.ErrProposalDropped) {
			n.queuedProposals.Add(-int64(len(batch)))
			for _, p := range batch {
				n.finish(p, err)
			}
			return
		}
	}
	for _, p := range batch {
		err := n.core.Propose(p.data)
		n.queuedProposals.Add(-1)
		n.finish(p, err)
	}
}

// retryHeld steps the held proposals, in order, once a leader is known.
func (n *Node) retryHeld() {
	if len(n.held) == 0 || n.core.Lead() == 0 {
		return
	}
	held := n.held
	n.held = nil
	ps := n.heldBatch[:0]
	for i := range held {
		ps = append(ps, &held[i])
	}
	n.runProposals(ps)
	clear(ps)
	n.heldBatch = ps[:0]
}

// failUnproposed, on the loop as it exits, ends the proposals queued or
// held that never reached raft with ErrStopped, so that a ProposeAsync
// caller (whose done would otherwise never run) learns at once that its
// write will not be applied instead of waiting for its own timeout.
func (n *Node) failUnproposed() {
	for i := range n.held {
		n.queuedProposals.Add(-1)
		n.finish(&n.held[i], ErrStopped)
	}
	n.held = nil
	for _, op := range n.q.take(nil) {
		if op.isProp {
			n.stepProposal(&op.prop) // stopping: fails it
		}
	}
}

// Propose hands data to raft. It returns once raft accepted the proposal,
// not when it is committed: watch StateMachine.Apply for that. A proposal
// can still be lost (leader change); callers time out and retry. If the
// leader is lost while the call is in flight, it waits for a new leader
// until ctx is done. A follower that knows its leader forwards the
// proposal itself (forward) and returns once it is queued for the leader;
// otherwise raft forwards it. Errors:
// ErrEmptyProposal, ErrStopped, ErrNoLeader, ctx.Err(), or a wrapped
// raft.ErrProposalDropped when the leader sheds load.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	forwarded, err := n.forwardOrCheck(data)
	if err != nil {
		return err
	}
	if forwarded {
		return nil
	}
	return n.propose(ctx, proposal{ctx: ctx, data: data, errC: make(chan error, 1)})
}

// forwardOrCheck is the start of Propose and ProposeAsync: it refuses an
// empty proposal, a stopped node and an unknown leader, then forwards data
// itself where it may (forward), reporting whether it did.
func (n *Node) forwardOrCheck(data []byte) (forwarded bool, err error) {
	if len(data) == 0 {
		return false, ErrEmptyProposal
	}
	select {
	case <-n.done:
		return false, ErrStopped
	default:
	}
	lead := n.core.Lead()
	if lead == 0 {
		return false, ErrNoLeader
	}
	return n.forward(lead, data), nil
}

// forward hands data, on a follower that knows its leader, to the
// Transport as the MsgProp raft would forward, from the caller's goroutine
// (Core.Forward decides: raft's copy would leave only with the next Ready,
// after the write running meanwhile). It reports false where raft must
// decide: on a leader, on a single member, while proposals wait for a
// leader (held) or for the loop, and while raft has not sent the ones it
// accepted and forwards (Core.Forward). Proposals of one caller keep their order (one connection to the
// leader, sent in call order); across a leader change they may be lost or
// overtaken, as raft's forwarded ones may be (the server's per-connection
// order check refuses an overtaking write).
func (n *Node) forward(lead uint64, data []byte) bool {
	if testNoForward || lead == n.cfg.ID || n.queuedProposals.Load() > 0 {
		return false
	}
	return n.core.Forward(data)
}

// ProposeAsync is Propose without waiting: it queues data for the loop and
// returns at once, so that one caller can have many proposals queued for
// the same raft write (Propose waits for the loop, which runs queued
// proposals only between two Readys, so a caller that proposes, waits and
// proposes again adds at most one entry to each log write). Proposals are
// handed to raft in the order of the ProposeAsync calls that queued them
// (held ones too, while no leader is known; a follower forwards them itself
// only while none of them waits for the loop, as Propose). done runs once,
// on the loop goroutine (or, for a proposal forwarded at once, on the
// caller's before ProposeAsync returns), with nil when raft accepted the
// proposal or with Propose's errors (ctx.Err() if ctx ended before the loop
// reached it, context.DeadlineExceeded if the loop reached it at or after a
// non-zero deadline: a ctx with that deadline without its timer); it must
// not block.
// If the node stops first, done runs with ErrStopped (the loop fails what
// it queued or held as it exits). An error returned by
// ProposeAsync itself (ErrEmptyProposal, ErrStopped, ErrNoLeader) means done
// will not be called.
func (n *Node) ProposeAsync(ctx context.Context, deadline time.Time, data []byte, done ProposeDone) error {
	forwarded, err := n.forwardOrCheck(data)
	if err != nil {
		return err
	}
	if forwarded {
		done.ProposeDone(nil)
		return nil
	}
	n.queue(proposal{ctx: ctx, deadline: deadline, data: data, done: done})
	return nil
}

// WaitApplied blocks until this member has applied index, ctx is done, or
// the node stops.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.core.applied.wait(ctx, index, n.done)
}

// AppliedIndex returns the index of the last entry applied to the state
// machine (or restored from a snapshot).
func (n *Node) AppliedIndex() uint64 { return n.core.AppliedIndex() }

// IsLeader reports whether this member currently believes it is the leader.
func (n *Node) IsLeader() bool { return n.core.IsLeader() }

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

// Step implements MessageHandler. It queues m for the loop and never
// blocks: the transport calls it from the reader of the connection m came
// on, and that peer's later messages wait behind it. The loop records that
// the sender is running, and on the leader drops a forwarded conf change
// that checkConfChange refuses (Core.Step).
//
// A proposal a follower forwarded (MsgProp) is dropped with ErrNoLeader
// while no leader is known: a member resuming from a pause with proposals
// forwarded to it while it was leader must not hold them for a leader whose
// heartbeats are queued behind them (issue 9); the proposer times out and
// its client retries. Otherwise, and for every other message, Step returns
// nil once m is queued (raft itself drops what it cannot take). When
// maxQueuedSteps messages wait already, m is dropped.
func (n *Node) Step(_ context.Context, m *pb.Message) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	if m.GetType() == pb.MsgProp && n.core.Lead() == 0 {
		return ErrNoLeader
	}
	if !n.q.pushStep(m) {
		return errStepQueueFull
	}
	return nil
}

// errStepQueueFull is returned by Step for a message dropped because too
// many wait for the loop.
var errStepQueueFull = errors.New("consensus: too many peer messages queued, message dropped")

// ReportUnreachable implements MessageHandler.
func (n *Node) ReportUnreachable(id uint64) {
	n.q.push(func(n *Node) { n.core.ReportUnreachable(id) })
}

// ReportSnapshot implements MessageHandler.
func (n *Node) ReportSnapshot(id uint64, failed bool) {
	n.q.push(func(n *Node) { n.core.ReportSnapshot(id, failed) })
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
