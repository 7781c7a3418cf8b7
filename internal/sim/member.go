package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// member is one zkraft member: zkraft's real consensus.Core (raft RawNode,
// Ready handling, apply, conf changes, snapshots) on a simulated disk and
// network, applying through zkraft's replicated state machine. Its durable
// state is its disk; everything else is lost in a crash.
type member struct {
	w           *world
	idx         int
	id          uint64
	up, paused  bool
	removed     bool // removed from the ensemble: stopped for good
	outside     bool // added by a reconfig whose entry no member applied yet
	incarnation int
	backlog     []arrival // what arrived while paused

	disk      *disk
	confState *pb.ConfState // as of the last Ready handled
	core      *consensus.Core
	// writing is the Ready whose write the simulated disk runs (from
	// BeginReady to FinishReady): meanwhile only peer messages reach the
	// Core (StepWhileWriting), as Node's loop blocked in the write.
	writing *consensus.ReadyWrite
	idle    []func() // what waits for the write to end (Node's queue)
	tickDue bool     // a tick came during the write (the ticker keeps one)
	hold    bool     // idle runs: no Ready before all of it ran
	// queuedProps counts proposals in idle: while any wait, a proposal is
	// not forwarded (it would overtake them), as Node.forward.
	queuedProps int
	inStep      bool // StepWhileWriting runs
	// crashMidWrite: crash at a random point of the next write that
	// overlaps (the disk keeps a prefix of its entries, or nothing).
	crashMidWrite bool
	rep           *server.Replica
	tracker       *session.Tracker
	sl            *server.SessionLeader // the server's leader-side session logic
	applied       uint64
	lead          uint64 // the leader the last leader change reported
	isLeader      bool   // sl's leader flag once its last leader change returned
	inLeader      bool   // sl.LeaderChange runs (inside the Core's HandleReady)
	ticks         uint64
	reqCount      uint64
	pending       map[uint64]func(server.Applied, bool) // by ReqID; false: failed before apply
	reads         []*pendingRead
	readCount     uint64
	conns         map[uint64]*mconn       // by connection id
	liveness      *server.LivenessReports // the server's liveness decisions: sessions touched since the last report
	lastSnap      uint64
	lastNoZxid    bool // the last applied entry was not a zkraft entry
}

// mconn is a client connection as a member sees it.
type mconn struct {
	id      uint64
	client  *client
	session int64
	active  bool             // its createSession or attach applied here
	ep      *server.Endpoint // the server's request handling, once active
	wakeDue bool             // a pump is scheduled for it (wakeWriters)
	notes   map[int32]string // by xid: the node a tracked write is about (checkers)
}

type pendingRead struct {
	conn  *mconn
	rctx  string
	index uint64 // 0 until the ReadState arrives
	serve func()
}

var silentRaft = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// startMembers bootstraps every member from the same initial snapshot on
// its disk: the nodes the workload uses exist and the voters are all
// members.
func (w *world) startMembers() {
	n := w.cfg.Members
	voters := make([]uint64, n)
	for i := range voters {
		voters[i] = uint64(i + 1)
	}
	seed := server.NewReplica(treeOptions, nopHooks{}, zerolog.Nop())
	var idx uint64
	propose := func(p server.Proposal) {
		idx++
		if err := seed.Apply(idx, 1, p.Encode()); err != nil {
			panic(fmt.Sprintf("sim: seed entry: %v", err))
		}
	}
	propose(server.Proposal{Type: server.ProposalCreateSession, SessionID: 1, Body: server.CreateSessionBody(1, 1<<30, nil)})
	for _, path := range []string{registerPath, lockPath} {
		propose(server.Proposal{SessionID: 1, Type: jute.OpCreate,
			Body: jute.Marshal(&jute.CreateRequest{Path: path, ACL: openACL})})
	}
	data, err := seed.Snapshot()
	if err != nil {
		panic(err)
	}
	for i := 0; i < n; i++ {
		m := &member{w: w, idx: i, id: uint64(i + 1), disk: newDisk(w, uint64(i+1))}
		cs := &pb.ConfState{Voters: slices.Clone(voters)}
		m.disk.snapshot = consensus.SeedMetadata(idx, 1, cs)
		if w.cfg.Seed%5 == 0 {
			// An older build's data: no conf index until the first conf
			// change (a version 1 base for the first change's steps).
			m.disk.snapshot = &pb.SnapshotMetadata{ConfState: cs, Index: proto.Uint64(idx), Term: proto.Uint64(1)}
		}
		m.disk.confState = cs
		m.disk.payloads[[2]uint64{1, idx}] = data
		w.members = append(w.members, m)
		m.restart()
	}
	w.chk.seedIndex = idx
	for _, m := range w.members {
		m.scheduleTick()
	}
}

type nopHooks struct{}

func (nopHooks) Applied(server.Applied)          {}
func (nopHooks) SessionCreated(session.Session)  {}
func (nopHooks) SessionClosed(int64, bool)       {}
func (nopHooks) SessionTouched(int64)            {}
func (nopHooks) ExpiryRefused(s session.Session) {}

// restart starts the member from its disk: a new consensus.Core restores
// the recorded snapshot and replays the log, as zkraft's Start does.
func (m *member) restart() {
	if m.up || m.removed {
		return
	}
	m.incarnation++
	m.up, m.paused, m.backlog, m.disk.tear = true, false, nil, false
	m.writing, m.idle, m.tickDue, m.hold, m.queuedProps, m.crashMidWrite = nil, nil, false, false, 0, false
	m.tracker = session.NewTracker(clock{m.w}, trackerTickMs)
	m.rep = server.NewReplica(treeOptions, m, zerolog.Nop())
	m.sl = m.rep.NewSessionLeader(m.tracker, server.LeaderConfig{RetryAfter: expiryRetry}, leaderHooks{m})
	m.pending = map[uint64]func(server.Applied, bool){}
	m.reads, m.conns, m.liveness = nil, map[uint64]*mconn{}, server.NewLivenessReports()
	m.lead, m.isLeader, m.inLeader = 0, false, false
	m.applied, m.lastSnap, m.lastNoZxid = 0, m.disk.snapshot.GetIndex(), false
	cfg := consensus.Config{
		ID:             m.id,
		TickInterval:   raftTick,
		ElectionTicks:  electionTicks,
		HeartbeatTicks: 1,
		SnapshotEvery:  m.w.snapEvery,
		KeepEntries:    m.w.keepEntries,
		Transport:      simTransport{m},
		Logger:         zerolog.Nop(),
		OnLeaderChange: m.leaderChange,
		// Every member but the initial ones (whose disks hold the
		// initial snapshot) joins an existing group.
		Join: true,
	}
	m.w.current = m
	core, err := consensus.NewCore(cfg, stateMachine{m}, consensus.CoreOptions{
		Storage:      m.disk,
		Now:          clock{m.w}.Now,
		OnReadStates: m.readStates,
		RaftLogger:   silentRaft,
		// As Node: writes overlap the apply of durable entries and the
		// stepping of peer messages (process, finishWrite).
		ParallelApply: true,
	})
	if err != nil {
		m.w.fail("apply", "member %d restart: %v", m.id, err)
		m.up = false
		return
	}
	m.core = core
	m.confState = core.ConfState()
	m.applied = core.AppliedIndex()
	m.w.tracef("member %d started (applied %d)", m.id, m.applied)
	m.process()
}

// simTransport is the simulated network as the Core's consensus.Transport.
type simTransport struct{ m *member }

func (t simTransport) Send(msgs []*pb.Message) {
	for _, msg := range msgs {
		t.m.w.net.sendRaft(t.m.idx, msg)
	}
}
func (simTransport) Start(consensus.MessageHandler) error { return nil }
func (simTransport) Stop()                                {}

// stateMachine is the member's server.Replica as the Core's
// consensus.StateMachine, with the checkers' hooks.
type stateMachine struct{ m *member }

func (s stateMachine) Apply(index, term uint64, data []byte) error {
	m := s.m
	m.w.chk.durable(m, index, term)
	if m.inStep {
		m.w.pipe.stepApplies++
	}
	m.w.chk.applyTerm = term
	if err := m.rep.Apply(index, term, data); err != nil {
		return err
	}
	m.applied, m.lastNoZxid = index, false
	m.w.chk.applied(m, index)
	m.wakeWriters()
	return nil
}

// wakeWriters pumps, after an apply, each connection the server's writer
// would wake for: conn.notify wakes it for a notification the apply queued
// (pump otherwise runs only on the connection's own requests and their
// outcomes). Each pump is an event of its own, at once: not inside the
// Core's apply, as pump may propose.
func (m *member) wakeWriters() {
	for _, c := range m.sortedConns() {
		if c.ep == nil || c.wakeDue || !c.ep.Wake() {
			continue
		}
		c.wakeDue = true
		m.w.after(0, func() {
			c.wakeDue = false
			m.pump(c)
		})
	}
}

func (s stateMachine) Snapshot() ([]byte, error) {
	m := s.m
	data, err := m.rep.Snapshot()
	if err != nil {
		return nil, err
	}
	idx := m.core.AppliedIndex()
	m.lastSnap = idx
	m.w.chk.stateHash(m, idx, data, "snapshot")
	return data, nil
}

func (s stateMachine) Restore(index uint64, data []byte) error {
	m := s.m
	if err := m.rep.Restore(index, data); err != nil {
		return err
	}
	m.applied, m.lastSnap, m.lastNoZxid = index, index, false
	m.w.chk.restored(m)
	// Connections saw the old state; as the server, close them.
	for _, c := range m.sortedConns() {
		m.closeConn(c)
	}
	return nil
}

// inEnsemble: the member is a voter as far as the run knows (not removed,
// and its addition, if any, applied somewhere).
func (m *member) inEnsemble() bool { return !m.removed && !m.outside }

// remove stops a member the ensemble removed; it never comes back.
func (m *member) remove() {
	if m.removed {
		return
	}
	m.w.tracef("member %d removed from the ensemble, stopping", m.id)
	if m.up {
		m.crash()
	}
	m.removed = true
}

func (m *member) crash() { m.crashIn(false) }

// crashIn crashes the member; midCore says the crash interrupted a Core
// call (the simulated disk failed a write the Core made while it applied a
// Ready), which may leave the conf state it applied ahead of its applied
// index (noteVoters). Any other crash falls between two steps of the
// ReadyWrite protocol, where they agree.
func (m *member) crashIn(midCore bool) {
	m.w.tracef("member %d crashed", m.id)
	if m.writing != nil {
		m.w.pipe.crashWrites++
		m.disk.crashDuring(m.writing.Batch())
		m.writing, m.idle = nil, nil
	}
	if m.core != nil {
		m.w.noteVoters(m, m.core.ConfState(), midCore) // what it applied counts after it is gone
	}
	dropped := m.backlog
	m.up, m.paused, m.core, m.backlog = false, false, nil, nil
	for _, a := range dropped {
		a.drop()
	}
	for _, c := range m.sortedConns() {
		c.client.connLost(c.id)
	}
}

func (m *member) pause() {
	m.w.tracef("member %d paused", m.id)
	m.paused = true
}

func (m *member) resume() {
	if !m.up || !m.paused {
		return
	}
	m.w.tracef("member %d resumed (%d messages waiting)", m.id, len(m.backlog))
	m.paused = false
	b := m.backlog
	m.backlog = nil
	for _, a := range b {
		m.deliver(a.fn, a.lost) // paused or crashed again meanwhile: kept or dropped
	}
}

// arrival is a message that reached a paused member: fn handles it; lost,
// if set, is told when it is dropped instead.
type arrival struct {
	fn, lost func()
}

func (a arrival) drop() {
	if a.lost != nil {
		a.lost()
	}
}

// deliver runs fn (a message's handling) now, later if paused, never if
// down: then lost (if set) is called instead, now or when the member
// crashes while paused.
func (m *member) deliver(fn, lost func()) {
	a := arrival{fn: fn, lost: lost}
	switch {
	case !m.up:
		a.drop()
	case m.paused:
		m.backlog = append(m.backlog, a)
	default:
		fn()
	}
}

func (m *member) scheduleTick() {
	inc := m.incarnation
	m.w.after(raftTick, func() {
		defer m.scheduleTick()
		if !m.up || m.paused || m.incarnation != inc {
			return
		}
		m.w.current = m
		if m.writing != nil {
			m.tickDue = true
		} else {
			m.core.Tick()
			m.process()
		}
		// Expiry decisions and liveness reports run every tick here, the
		// container and TTL round every containerTicks.
		if m.up {
			m.expiryRound()
		}
		m.ticks++
		if m.up && m.ticks%containerTicks == 0 {
			m.containerRound()
		}
		if m.up {
			m.reportLiveness()
		}
	})
}

func (m *member) step(msg *pb.Message) {
	if !m.up || m.core == nil {
		return
	}
	m.w.current = m
	if m.writing != nil {
		// Node's Core takes peer messages from its queue (the Inbox)
		// while it writes.
		m.w.pipe.steps++
		m.inStep = true
		err := m.core.StepWhileWriting(m.writing, msg)
		m.inStep = false
		if err != nil {
			m.coreFailed(err)
		}
		return
	}
	_ = m.core.Step(msg) // errors are stale or foreign messages, as on a real network
	m.process()
}

// whenIdle runs fn now, or once the running write ended (Node's loop runs
// queued work between Readys).
func (m *member) whenIdle(fn func()) {
	if m.writing != nil || m.hold {
		m.w.pipe.queuedDuring++
		m.idle = append(m.idle, fn)
		return
	}
	fn()
}

// writeLatency is how long the simulated disk takes for one write: mostly
// an fsync's few milliseconds, sometimes a slow one.
func (m *member) writeLatency() time.Duration {
	if m.w.chance(0.05) {
		return m.w.between(5*time.Millisecond, 40*time.Millisecond)
	}
	return m.w.between(100*time.Microsecond, 4*time.Millisecond)
}

// process handles the Core's Readys with the real consensus code, as
// Node's loop: BeginReady, then ApplyDurable and the write; a write that
// overlaps (ReadyWrite.Overlaps) takes simulated time on the disk, during
// which peer messages are stepped (step) and everything else waits
// (whenIdle); finishWrite continues. Then it runs the snapshot jobs the
// Core decided inline (a tight-log run right after each Ready:
// snapshotBeforeNextReady), and serves the reads that became ready.
func (m *member) process() {
	m.w.current = m
	if m.writing != nil || m.hold {
		return // finishWrite, or the idle work's end, processes
	}
	for m.up && m.core != nil && m.core.HasReady() {
		inc := m.incarnation
		rw, err := m.core.BeginReady()
		if err != nil {
			m.coreFailed(err)
			return
		}
		if rw.Overlaps() {
			m.writing = rw
			if err := m.core.ApplyDurable(rw); err != nil {
				m.coreFailed(err)
				return
			}
			if m.incarnation != inc || !m.up {
				return
			}
			lat := m.writeLatency()
			m.w.after(lat, func() {
				if m.incarnation == inc {
					m.deliver(func() { m.finishWrite(rw, inc) }, nil)
				}
			})
			if m.crashMidWrite {
				m.crashMidWrite = false
				m.w.after(m.w.between(0, lat), func() {
					if m.incarnation == inc && m.writing == rw {
						m.crash()
						m.w.after(m.w.between(300*time.Millisecond, 3*time.Second), m.restart)
					}
				})
			}
			return
		}
		if err = m.core.ApplyDurable(rw); err == nil {
			err = m.core.FinishReady(rw, rw.Write())
		}
		if err != nil {
			m.coreFailed(err)
			return
		}
		if !m.readyFinished(inc) {
			return
		}
	}
	if !m.up || m.core == nil {
		return
	}
	m.runSnapshots()
	m.serveReads()
	m.maybeSnapshot()
}

// readyFinished runs what follows a finished Ready: the tight log's
// snapshot job, then, if the member is still up in incarnation inc,
// afterReady. It reports whether it was.
func (m *member) readyFinished(inc int) bool {
	m.snapshotBeforeNextReady()
	if m.incarnation != inc || !m.up {
		return false
	}
	m.afterReady()
	return true
}

// finishWrite completes the write of rw (the disk takes it now, and it
// sends the acknowledgements), finishes the Ready, runs what waited for
// it, and handles the next Readys.
func (m *member) finishWrite(rw *consensus.ReadyWrite, inc int) {
	if m.incarnation != inc || m.writing != rw {
		return
	}
	m.w.current = m
	werr := rw.Write()
	m.writing = nil
	if err := m.core.FinishReady(rw, werr); err != nil {
		m.coreFailed(err)
		return
	}
	if !m.readyFinished(inc) {
		return
	}
	m.hold = true
	if m.tickDue {
		m.tickDue = false
		m.core.Tick()
	}
	for len(m.idle) > 0 && m.up && m.incarnation == inc {
		fn := m.idle[0]
		m.idle = m.idle[1:]
		fn()
	}
	m.hold = false
	if m.up && m.incarnation == inc {
		m.process()
	}
}

// coreFailed handles an error from the Core: a crash the disk simulated
// (the member restarts later), or a fatal error of the real code, which is
// a failure of the run.
func (m *member) coreFailed(err error) {
	if errors.Is(err, errCrashed) {
		m.crashIn(true)
		m.w.after(m.w.between(300*time.Millisecond, 3*time.Second), m.restart)
		return
	}
	m.w.fail("apply", "member %d: %v", m.id, err)
	m.crashIn(true)
}

// afterReady notes what the Ready changed: entries applied that were not
// zkraft entries, and membership changes.
func (m *member) afterReady() {
	if a := m.core.AppliedIndex(); a > m.applied {
		m.applied, m.lastNoZxid = a, true
	}
	cs := m.core.ConfState()
	if cs == m.confState {
		return
	}
	old := m.confState
	m.confState = cs
	m.w.noteVoters(m, cs, false)
	m.w.tracef("member %d applied conf state: voters %v learners %v", m.id, cs.GetVoters(), cs.GetLearners())
	for _, id := range old.GetVoters() {
		// A removed member stops once its removal is applied by any
		// member (the leader stops replicating to it, so it may never
		// apply the entry itself; zkraft's peers then refuse it).
		if !slices.Contains(cs.GetVoters(), id) && int(id) <= len(m.w.members) {
			m.w.after(0, m.w.members[id-1].remove)
		}
	}
	for _, id := range cs.GetVoters() {
		if !slices.Contains(old.GetVoters(), id) && int(id) <= len(m.w.members) {
			m.w.members[id-1].outside = false
		}
	}
}

// snapshotBeforeNextReady runs, in runs with a tight log, the snapshot job
// a Ready decided right after it, before the next Ready: as Node's
// snapshotter goroutine may, while raft has not handed out yet the entries
// the Core applied ahead of it (from the mirror, during the write).
func (m *member) snapshotBeforeNextReady() {
	if m.w.tightLog && m.up {
		m.runSnapshots()
	}
}

// runSnapshots runs the local snapshots the Core decided, inline.
func (m *member) runSnapshots() {
	for m.core != nil {
		job := m.core.SnapshotJob()
		if job == nil {
			return
		}
		if err := m.core.SnapshotDone(job.Run()); err != nil {
			m.coreFailed(err)
			return
		}
	}
}

// maybeSnapshot sometimes asks for a snapshot right after an entry that is
// not a zkraft entry (a new leader's empty entry), where the snapshot's
// zxid and raft index differ.
func (m *member) maybeSnapshot() {
	if !(m.lastNoZxid && m.applied >= m.lastSnap+20 && m.w.chance(0.3)) {
		return
	}
	if err := m.core.RequestSnapshot(); err != nil {
		m.coreFailed(err)
		return
	}
	m.runSnapshots()
}

// readStates matches raft's answers to pending reads.
func (m *member) readStates(rs []raft.ReadState) {
	for _, s := range rs {
		for _, r := range m.reads {
			if r.rctx == string(s.RequestCtx) {
				r.index = s.Index
			}
		}
	}
}

// leaderChange is the Core's OnLeaderChange: the server's own
// (server.SessionLeader: failing proposals in flight when the leader moved,
// the tracker reset, the term, the leader flag, in the server's order).
func (m *member) leaderChange(isLeader bool, lead, term uint64) {
	m.inLeader = true
	became := m.sl.LeaderChange(isLeader, lead, term)
	m.inLeader = false
	m.lead, m.isLeader = lead, m.sl.IsLeader()
	if became {
		m.w.chk.lastElection = m.w.now
		m.w.chk.electedAt[term] = m.w.now
		m.w.tracef("member %d leader in term %d", m.id, term)
	}
}

// leaderHooks are the member's server.LeaderHooks.
type leaderHooks struct{ m *member }

func (h leaderHooks) LeaderMoved() { h.m.failPending() }

// Interleave runs an expiry round between the two steps of a leader change,
// as the server's expiry loop can on its own goroutine: its proposals reach
// the Core once the Ready that reported the change is handled.
func (h leaderHooks) Interleave() { h.m.sl.ExpiryRound(clock{h.m.w}.Now()) }

// Propose submits a leader decision, without handling the Ready it makes
// (the caller's round, or the leader change's Ready, does): a round never
// runs inside another. Inside a leader change (the Core's HandleReady) it
// waits for that to end, as the server's proposals from its loops reach
// the raft goroutine after the Ready it handles.
func (h leaderHooks) Propose(p server.Proposal) bool {
	m := h.m
	switch p.Type {
	case server.ProposalExpireSession, server.ProposalExpireSessionDelayed:
		m.w.tracef("member %d proposes expiry of session %#x (term %d)", m.id, p.SessionID, m.sl.Term())
	case server.ProposalDeleteContainer, server.ProposalDeleteTTL:
		var req jute.PathRequest
		if err := jute.Unmarshal(p.Body, &req); err == nil {
			m.w.tracef("member %d proposes the removal of %s", m.id, req.Path)
		}
	}
	if !m.inLeader {
		m.submit(&p)
		return true
	}
	inc := m.incarnation
	m.w.after(0, func() {
		if m.up && m.incarnation == inc {
			m.submit(&p)
			m.process()
		}
	})
	return true
}

// failPending fails every proposal and read in flight, as the server does
// when the leader changes: their connections are closed.
func (m *member) failPending() {
	for _, id := range slices.Sorted(maps.Keys(m.pending)) {
		fn := m.pending[id]
		delete(m.pending, id)
		fn(server.Applied{}, false)
	}
	reads := m.reads
	m.reads = nil
	for _, r := range reads {
		if m.conns[r.conn.id] == r.conn {
			m.closeConn(r.conn)
		}
	}
}

func (m *member) serveReads() {
	var keep []*pendingRead
	var ready []*pendingRead
	for _, r := range m.reads {
		if r.index != 0 && m.applied >= r.index {
			ready = append(ready, r)
		} else {
			keep = append(keep, r)
		}
	}
	m.reads = keep
	for _, r := range ready {
		r.serve()
	}
}

// expiryRound is one round of the server's expiry loop on this member.
func (m *member) expiryRound() {
	m.sl.ExpiryRound(clock{m.w}.Now())
	m.process()
}

// containerRound is one round of the server's container loop on this
// member.
func (m *member) containerRound() {
	m.sl.ContainerRound(clock{m.w}.Now())
	m.process()
}

// reportLiveness is one round of the server's liveness reports
// (server.LivenessReports), delivered over the simulated network: a report
// the network does not take (a cut link, a lost message) counts as a
// failed write, and the leader applies what arrives as the server's
// liveness receiver does.
func (m *member) reportLiveness() {
	r, ok := m.liveness.Next(m.isLeader, m.lead, m.tracker)
	if !ok {
		return
	}
	from := m.id
	if int(r.To) > len(m.w.members) || !m.w.net.send(m.idx, int(r.To)-1, func() {
		l := m.w.members[r.To-1]
		server.ReceiveLiveness(l.tracker, l.acceptsLiveness(from), r.IDs)
	}, nil) {
		m.liveness.Failed(r)
		return
	}
	m.liveness.Sent(r)
}

// acceptsLiveness reports whether liveness reports from member id count
// on m: as the server's, only from a member of the configuration m applied.
func (m *member) acceptsLiveness(id uint64) bool { return consensus.InConfState(m.confState, id) }

// stamp gives p its proposer, request id and, unless it carries its
// decision's, the time, as the server's propose does.
func (m *member) stamp(p *server.Proposal) {
	m.reqCount++
	p.Proposer = m.id
	p.ReqID = uint64(m.incarnation)<<40 | m.reqCount
	if p.TimeMs == 0 {
		p.TimeMs = clock{m.w}.Now().UnixMilli()
	}
}

// submit stamps p (unless stamped) and hands it to the Core, without
// handling the Ready; false if the Core refused it.
func (m *member) submit(p *server.Proposal) bool {
	if p.ReqID == 0 {
		m.stamp(p)
	}
	if p.Type == server.ProposalExpireSession {
		m.w.chk.expiryAt[reqKey{p.Proposer, p.ReqID}] = m.w.now
	}
	if p.Type == server.ProposalDeleteContainer || p.Type == server.ProposalDeleteTTL {
		var req jute.PathRequest
		if err := jute.Unmarshal(p.Body, &req); err == nil {
			m.w.chk.noteWrite(reqKey{p.Proposer, p.ReqID}, p.Type, req.Path, p.TimeMs, nil)
		}
	}
	if !m.up || m.core == nil {
		return false
	}
	data := p.Encode()
	if m.queuedProps == 0 && m.core.Forward(data) {
		m.w.pipe.forwards++
		return true // a follower forwards it itself (Node.forward)
	}
	if m.writing == nil && !m.hold {
		return m.core.Propose(data) == nil
	}
	// Node queues it for its loop, busy with a write.
	m.w.pipe.queuedDuring++
	m.queuedProps++
	id := p.ReqID
	m.idle = append(m.idle, func() {
		m.queuedProps--
		if m.core.Propose(data) != nil {
			if fn, ok := m.pending[id]; ok {
				delete(m.pending, id)
				fn(server.Applied{}, false)
			}
		}
	})
	return true
}

// propose proposes p; done runs with the applied result, or with false if
// the proposal failed before it applied here.
func (m *member) propose(p *server.Proposal, done func(server.Applied, bool)) {
	if !m.submit(p) {
		if done != nil {
			done(server.Applied{}, false)
		}
		return
	}
	if done != nil {
		m.pending[p.ReqID] = done
	}
	m.process()
}

func (m *member) sortedConns() []*mconn {
	ids := make([]uint64, 0, len(m.conns))
	for id := range m.conns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*mconn, len(ids))
	for i, id := range ids {
		out[i] = m.conns[id]
	}
	return out
}

func (m *member) closeConn(c *mconn) {
	delete(m.conns, c.id)
	if c.ep != nil {
		c.ep.Close() // its watches go, as when the server's connection ends
	}
	cl, id := c.client, c.id
	m.w.after(m.w.between(100*time.Microsecond, 2*time.Millisecond), func() { cl.connLost(id) })
}

// ReplicaHooks.

func (m *member) Applied(a server.Applied) {
	m.w.chk.appliedResult(m, a)
	if a.Proposer != m.id {
		return
	}
	if fn, ok := m.pending[a.ReqID]; ok {
		delete(m.pending, a.ReqID)
		fn(a, true)
	}
}

func (m *member) SessionCreated(s session.Session) { m.tracker.Track(s.ID, s.TimeoutMs) }

func (m *member) SessionClosed(id int64, expired bool) {
	m.tracker.Remove(id)
	for _, c := range m.sortedConns() {
		if c.session == id && expired {
			m.closeConn(c)
		}
	}
}

func (m *member) SessionTouched(id int64) { m.tracker.Touch(id) }

func (m *member) ExpiryRefused(s session.Session) {
	m.w.tracef("member %d refused the expiry of session %#x (fence)", m.id, s.ID)
	m.tracker.Remove(s.ID)
	m.tracker.Track(s.ID, s.TimeoutMs)
}

// treeOptions are the members' write options: TTL nodes allowed, as
// extendedTypesEnabled=true in zoo.cfg.
var treeOptions = znode.Options{ExtendedTypesEnabled: true}

// The members' session timeout bounds: minSessionTimeout and
// maxSessionTimeout of tickTime 2000 (2 and 20 ticks).
const (
	minSessionTimeoutMs = 4000
	maxSessionTimeoutMs = 40000
)

// juteMaxBuffer is the members' jute.maxbuffer, the server's default.
const juteMaxBuffer = jute.DefaultMaxBuffer

var openACL = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}

// requests from clients

type reqKind int

const (
	reqConnect reqKind = iota // new session
	reqAttach
	reqFrames // request frames, pipelined
)

// request is a client's message to its member: a connect or attach, or
// ZooKeeper request frames (length prefix, header, body), several when the
// client pipelines them. paths are annotations for the checkers (the node
// each tracked write is about, by frame), not read by the member's request
// handling.
type request struct {
	kind    reqKind
	connID  uint64
	session int64
	xid     uint64   // connect, attach
	frames  [][]byte // a connect or attach: its ConnectRequest frame
	paths   []string
}

type response struct {
	// withQuorum: the answering member was in touch with the running
	// leader (the simulator's view), so the session's liveness counts.
	withQuorum bool
	connID     uint64
	xid        uint64 // connect, attach
	// wire: reply frames (length prefix, reply header, body) of the
	// server's request handling; the fields below are decoded from them by
	// the client.
	wire     []byte
	connect  bool // wire is a ConnectResponse frame
	err      int32
	zxid     int64
	data     []byte
	stat     jute.Stat
	children []string
	path     string
}

// inTouchWithLeader is what the simulator knows and a member cannot: the
// member's leader is the running leader and the links between them work, so
// the liveness this member records reaches the leader.
func (m *member) inTouchWithLeader() bool {
	if m.lead == 0 || int(m.lead) > len(m.w.members) {
		return false
	}
	l := m.w.members[m.lead-1]
	if !l.up || l.paused || !l.isLeader {
		return false
	}
	// A deposed leader that has not heard of its successor yet still
	// believes it leads, but has no quorum: its members are not in touch.
	for _, o := range m.w.members {
		if o != l && o.up && o.isLeader && o.sl.Term() > l.sl.Term() {
			return false
		}
	}
	return l == m || (!m.w.net.cut[m.idx][l.idx] && !m.w.net.cut[l.idx][m.idx])
}

// handle serves one client request that arrived at the member.
func (m *member) handle(c *client, r *request) {
	reply := func(resp response) {
		resp.connID, resp.xid = r.connID, r.xid
		resp.withQuorum = m.inTouchWithLeader()
		m.w.after(c.fifo(&c.downAt), func() { c.receive(resp) })
	}
	if m.lead == 0 {
		return // no leader: the client's timeouts make it move on
	}
	conn := m.conns[r.connID]
	switch r.kind {
	case reqConnect, reqAttach:
		// The server's connect handshake (server.Replica.Connect and
		// Connected, the code conn.go's handshake calls).
		cn, err := m.rep.Connect(r.frames[0][4:], r.connID, server.ConnectConfig{
			MinSessionTimeoutMs: minSessionTimeoutMs, MaxSessionTimeoutMs: maxSessionTimeoutMs,
			// The simulator's id generator: the client's own numbering,
			// unique across the run and readable in traces.
			NewSessionID: func() int64 { return r.session },
			Rand:         m.w.passwords,
			Closing:      m.tracker.IsClosing,
		})
		conn = &mconn{id: r.connID, client: c, session: cn.SessionID, notes: map[int32]string{}}
		m.conns[r.connID] = conn
		if err != nil {
			m.w.tracef("member %d refused connection %d: %v", m.id, r.connID, err)
			m.closeConn(conn)
			return
		}
		if cn.Propose == nil {
			reply(response{wire: cn.Reply, connect: true})
			m.closeConn(conn)
			return
		}
		m.propose(cn.Propose, func(a server.Applied, ok bool) {
			if m.conns[conn.id] != conn {
				return
			}
			var frame []byte
			if ok {
				frame, ok = m.rep.Connected(cn, a)
			}
			if frame != nil {
				reply(response{wire: frame, connect: true})
			}
			if !ok {
				m.closeConn(conn)
				return
			}
			conn.active = true
			conn.ep = m.rep.NewEndpoint(conn.session, conn.id, nil, treeOptions, juteMaxBuffer, m.tracker.IsClosing)
		})
		return
	}
	if conn == nil || !conn.active {
		return
	}
	m.liveness.Touch(conn.session, m.isLeader, m.tracker)
	for i, f := range r.frames {
		// The server reads the length prefix itself.
		conn.ep.Receive(f[4:])
		if i < len(r.paths) && r.paths[i] != "" {
			conn.notes[int32(binary.BigEndian.Uint32(f[4:8]))] = r.paths[i]
		}
	}
	m.pump(conn)
}

// pump runs a connection's requests through the server's request handling
// (server.Endpoint, the code conn.go's reader and writer drive), as its
// goroutines do: the frames received are handled in order (a write waits
// for the reads and syncs before it to be answered), writes proposed, syncs
// given a ReadIndex barrier, and the replies that are due sent, in order,
// until nothing moves.
func (m *member) pump(conn *mconn) {
	for m.up && m.conns[conn.id] == conn {
		steps, handled, err := conn.ep.Next()
		if err != nil {
			m.w.fail("request", "member %d: %v", m.id, err)
			return
		}
		for _, st := range steps {
			if m.conns[conn.id] != conn {
				return
			}
			switch {
			case st.Close:
				m.closeConn(conn)
				return
			case st.Propose != nil:
				m.proposeStep(conn, st)
				if st.Op == jute.OpCloseSession && m.pending[st.Propose.ReqID] != nil {
					// As the server's handleClose, once the close is proposed:
					// the session's writes are refused from now on.
					m.tracker.SetClosing(conn.session)
				}
			case st.Sync:
				m.syncStep(conn, st)
			}
		}
		if m.conns[conn.id] != conn {
			return
		}
		wire, closed := conn.ep.Replies()
		if len(wire) > 0 {
			m.reply(conn, response{wire: wire})
		}
		if closed {
			m.closeConn(conn)
			return
		}
		if handled == 0 && len(wire) == 0 {
			return
		}
	}
}

// reply sends a response to the connection's client.
func (m *member) reply(conn *mconn, resp response) {
	resp.connID = conn.id
	resp.withQuorum = m.inTouchWithLeader()
	c := conn.client
	m.w.after(c.fifo(&c.downAt), func() { c.receive(resp) })
}

// proposeStep proposes a connection's write and reports its outcome to the
// connection's request handling.
func (m *member) proposeStep(conn *mconn, st server.Step) {
	p := st.Propose
	m.stamp(p)
	if path := conn.notes[st.Xid]; path != "" {
		delete(conn.notes, st.Xid)
		m.w.chk.noteWrite(reqKey{p.Proposer, p.ReqID}, p.Type, path, p.TimeMs, p.Body)
	}
	m.propose(p, func(a server.Applied, ok bool) {
		if m.conns[conn.id] != conn {
			return
		}
		if ok {
			conn.ep.Applied(st, a)
		} else {
			conn.ep.Failed(st)
		}
		m.pump(conn)
	})
}

// syncStep gives a connection's sync its ReadIndex barrier; the sync is
// answered once the barrier's index applied.
func (m *member) syncStep(conn *mconn, st server.Step) {
	m.readCount++
	rctx := fmt.Sprintf("%d/%d", m.incarnation, m.readCount)
	m.reads = append(m.reads, &pendingRead{conn: conn, rctx: rctx, serve: func() {
		if m.conns[conn.id] != conn {
			return
		}
		conn.ep.Synced(st)
		m.pump(conn)
	}})
	if m.up {
		m.whenIdle(func() {
			m.core.ReadIndex([]byte(rctx))
			m.process()
		})
	}
}
