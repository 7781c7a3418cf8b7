package sim

import (
	"fmt"
	"io"
	"log"
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

// member is one zkraft member. Its durable state is storage (raft's log,
// hard state and snapshot, as fsynced by the Ready loop); everything else is
// lost in a crash.
type member struct {
	w           *world
	idx         int
	id          uint64
	up, paused  bool
	removed     bool // removed from the ensemble: stopped for good
	outside     bool // added by a reconfig whose entry no member applied yet
	incarnation int
	backlog     []func() // what arrived while paused

	storage    *raft.MemoryStorage
	confState  *pb.ConfState
	rn         *raft.RawNode
	rep        *server.Replica
	tracker    *session.Tracker
	applied    uint64
	lead       uint64
	isLeader   bool
	term       uint64 // term in which this member became leader
	reqCount   uint64
	pending    map[uint64]func(server.Applied, bool) // by ReqID; false: failed before apply
	reads      []*pendingRead
	readCount  uint64
	conns      map[uint64]*mconn // by connection id
	touched    map[int64]bool    // sessions touched since the last liveness report
	lastSnap   uint64
	lastNoZxid bool // the last applied entry was not a zkraft entry
	snapNow    bool // snapshot at the next chance (after a conf change)
	tornCrash  bool // crash in the middle of the next write of entries
}

// mconn is a client connection as a member sees it.
type mconn struct {
	id      uint64
	client  *client
	session int64
	active  bool // its createSession or attach applied here
	seq     uint64
}

type pendingRead struct {
	conn  *mconn
	rctx  string
	index uint64 // 0 until the ReadState arrives
	serve func()
}

var silentRaft = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// startMembers bootstraps every member from the same initial snapshot: the
// nodes the workload uses exist and the voters are all members.
func (w *world) startMembers() {
	n := w.cfg.Members
	voters := make([]uint64, n)
	for i := range voters {
		voters[i] = uint64(i + 1)
	}
	seed := server.NewReplica(znode.Options{}, nopHooks{}, zerolog.Nop())
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
		m := &member{w: w, idx: i, id: uint64(i + 1), storage: raft.NewMemoryStorage()}
		m.confState = &pb.ConfState{Voters: slices.Clone(voters)}
		snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
			ConfState: m.confState, Index: proto.Uint64(idx), Term: proto.Uint64(1)}}
		if err := m.storage.ApplySnapshot(snap); err != nil {
			panic(err)
		}
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

// restart starts the member from its durable storage.
func (m *member) restart() {
	if m.up || m.removed {
		return
	}
	m.incarnation++
	m.up, m.paused, m.backlog, m.tornCrash = true, false, nil, false
	m.tracker = session.NewTracker(clock{m.w}, trackerTickMs)
	m.rep = server.NewReplica(znode.Options{}, m, zerolog.Nop())
	m.pending = map[uint64]func(server.Applied, bool){}
	m.reads, m.conns, m.touched = nil, map[uint64]*mconn{}, map[int64]bool{}
	m.lead, m.isLeader, m.term = 0, false, 0
	snap, err := m.storage.Snapshot()
	if err != nil {
		panic(err)
	}
	m.applied = snap.GetMetadata().GetIndex()
	m.lastSnap = m.applied
	if m.applied > 0 { // a member that joined empty has nothing to restore
		if err := m.rep.Restore(snap.GetMetadata().GetIndex(), snap.GetData()); err != nil {
			m.w.fail("apply", "member %d restore: %v", m.id, err)
		}
		m.w.chk.restored(m)
	}
	rn, err := raft.NewRawNode(consensus.RaftConfig(m.id, electionTicks, 1, m.storage, m.applied, silentRaft))
	if err != nil {
		panic(err)
	}
	m.rn = rn
	m.w.tracef("member %d started (applied %d)", m.id, m.applied)
	m.process()
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

func (m *member) crash() {
	m.w.tracef("member %d crashed", m.id)
	m.up, m.paused, m.rn, m.backlog = false, false, nil, nil
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
	for _, fn := range b {
		if m.up && !m.paused {
			fn()
		}
	}
}

// deliver runs fn (a message's handling) now, later if paused, never if down.
func (m *member) deliver(fn func()) {
	switch {
	case !m.up:
	case m.paused:
		m.backlog = append(m.backlog, fn)
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
		m.rn.Tick()
		m.process()
		// Expiry decisions and liveness reports run every tick here.
		if m.up {
			m.expiryRound()
		}
		if m.up {
			m.reportLiveness()
		}
	})
}

func (m *member) step(msg *pb.Message) {
	if !m.up || m.rn == nil {
		return
	}
	_ = m.rn.Step(msg) // errors are stale or foreign messages, as on a real network
	m.process()
}

// process runs raft's Ready loop: persist, send, apply.
func (m *member) process() {
	for m.up && m.rn != nil && m.rn.HasReady() {
		rd := m.rn.Ready()
		if !raft.IsEmptySnap(rd.Snapshot) {
			md := rd.Snapshot.GetMetadata()
			if err := m.storage.ApplySnapshot(rd.Snapshot); err != nil {
				panic(err)
			}
			if err := m.rep.Restore(md.GetIndex(), rd.Snapshot.GetData()); err != nil {
				m.w.fail("apply", "member %d restore snapshot %d: %v", m.id, md.GetIndex(), err)
			}
			m.applied = md.GetIndex()
			m.lastSnap = m.applied
			m.w.chk.restored(m)
			m.confState = md.GetConfState()
			// Connections saw the old state; as the server, close them.
			for _, c := range m.sortedConns() {
				m.closeConn(c)
			}
		}
		if m.tornCrash && len(rd.Entries) > 0 {
			// The process dies in the middle of this write: a prefix of
			// the entries reached the disk, the hard state did not, and
			// nothing was sent.
			keep := m.w.rng.IntN(len(rd.Entries))
			if err := m.storage.Append(rd.Entries[:keep]); err != nil {
				panic(err)
			}
			m.w.tracef("member %d crashed writing %d entries (%d reached the disk)", m.id, len(rd.Entries), keep)
			m.tornCrash = false
			m.crash()
			m.w.after(m.w.between(300*time.Millisecond, 3*time.Second), m.restart)
			return
		}
		if err := m.storage.Append(rd.Entries); err != nil {
			panic(err)
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			if err := m.storage.SetHardState(rd.HardState); err != nil {
				panic(err)
			}
		}
		for _, msg := range rd.Messages {
			m.w.net.sendRaft(m.idx, msg)
		}
		for _, rs := range rd.ReadStates {
			for _, r := range m.reads {
				if r.rctx == string(rs.RequestCtx) {
					r.index = rs.Index
				}
			}
		}
		inc := m.incarnation
		for _, e := range rd.CommittedEntries {
			m.applyEntry(e)
			if m.incarnation != inc {
				return
			}
		}
		m.rn.Advance(rd)
		if rd.SoftState != nil {
			m.softState(rd.SoftState)
		}
	}
	if !m.up {
		return
	}
	m.serveReads()
	m.maybeCompact()
}

func (m *member) applyEntry(e *pb.Entry) {
	m.lastNoZxid = e.GetType() != pb.EntryNormal || len(e.GetData()) == 0
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.GetData()) > 0 {
			if err := m.rep.Apply(e.GetIndex(), e.GetTerm(), e.GetData()); err != nil {
				m.w.fail("apply", "member %d entry %d: %v", m.id, e.GetIndex(), err)
			}
		}
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err == nil {
			m.confState = m.rn.ApplyConfChange(&cc)
			// As the consensus node: snapshot after a conf change, so a
			// member that joins empty gets a snapshot that names it.
			m.snapNow = true
			m.w.tracef("member %d applied conf change %v %d: voters %v", m.id, cc.GetType(), cc.GetNodeId(), m.confState.GetVoters())
			// A removed member stops once its removal is applied by any
			// member (the leader stops replicating to it, so it may never
			// apply the entry itself; zkraft's peers then refuse it).
			if id := cc.GetNodeId(); cc.GetType() == pb.ConfChangeRemoveNode && int(id) <= len(m.w.members) {
				m.w.after(0, m.w.members[id-1].remove)
			} else if cc.GetType() == pb.ConfChangeAddNode && int(id) <= len(m.w.members) {
				m.w.members[id-1].outside = false
			}
		}
	}
	m.applied = e.GetIndex()
	m.w.chk.applied(m, e)
}

func (m *member) softState(ss *raft.SoftState) {
	if ss.Lead != m.lead {
		prev := m.lead
		m.lead = ss.Lead
		if prev != 0 {
			m.failPending()
		}
	}
	isLeader := ss.RaftState == raft.StateLeader
	if isLeader && !m.isLeader {
		// As the server: a new leader gives every session a fresh timeout.
		m.tracker.ResetAll(m.rep.Sessions())
		m.term = m.rn.BasicStatus().GetTerm()
		m.w.chk.lastElection = m.w.now
		m.w.tracef("member %d leader in term %d", m.id, m.term)
	}
	m.isLeader = isLeader
}

// failPending fails every proposal and read in flight, as the server does
// when the leader changes: their connections are closed.
func (m *member) failPending() {
	ids := make([]uint64, 0, len(m.pending))
	for id := range m.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
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

// maybeCompact snapshots the state and compacts the log every compactEvery
// entries, and sometimes right after an entry that is not a zkraft entry
// (a new leader's empty entry), where the snapshot's zxid and raft index
// differ.
func (m *member) maybeCompact() {
	due := m.applied >= m.lastSnap+compactEvery || m.snapNow
	if !due && !(m.lastNoZxid && m.applied >= m.lastSnap+20 && m.w.chance(0.3)) {
		return
	}
	data, err := m.rep.Snapshot()
	if err != nil {
		m.w.fail("apply", "member %d snapshot: %v", m.id, err)
		return
	}
	if _, err := m.storage.CreateSnapshot(m.applied, m.confState, data); err != nil {
		return
	}
	m.lastSnap, m.snapNow = m.applied, false
	m.w.chk.stateHash(m, m.applied, data, "snapshot")
	if m.applied > 50 {
		_ = m.storage.Compact(m.applied - 50)
	}
}

// expiryRound is one round of the server's expiry decision on this member.
func (m *member) expiryRound() {
	term := m.rn.BasicStatus().GetTerm()
	m.rep.DecideExpiries(m.isLeader, m.tracker, clock{m.w}.Now(), expiryRetry, func(id int64, connID uint64) {
		// The server fences with the term it became leader in; the term a
		// member decides in is its current term (the same, on a leader).
		decideTerm := m.term
		if !m.isLeader {
			decideTerm = term
		}
		m.w.tracef("member %d proposes expiry of session %#x (term %d, conn %d)", m.id, id, decideTerm, connID)
		m.propose(&server.Proposal{Type: server.ProposalExpireSession, SessionID: id,
			Body: server.ExpireBody(decideTerm, connID)}, nil)
	})
	m.process()
}

// reportLiveness sends the sessions touched here to the leader, as
// followers' liveness reports do.
func (m *member) reportLiveness() {
	if len(m.touched) == 0 || m.isLeader || m.lead == 0 {
		clear(m.touched)
		return
	}
	ids := make([]int64, 0, len(m.touched))
	for id := range m.touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	clear(m.touched)
	lead := m.lead
	m.w.net.send(m.idx, int(lead)-1, func() {
		l := m.w.members[lead-1]
		if l.isLeader {
			for _, id := range ids {
				l.tracker.Touch(id)
			}
		}
	})
}

// propose proposes p; done runs with the applied result, or with false if
// the proposal failed before it applied here.
func (m *member) propose(p *server.Proposal, done func(server.Applied, bool)) {
	m.reqCount++
	p.Proposer = m.id
	p.ReqID = uint64(m.incarnation)<<40 | m.reqCount
	p.TimeMs = clock{m.w}.Now().UnixMilli()
	if !m.up || m.rn == nil {
		if done != nil {
			done(server.Applied{}, false)
		}
		return
	}
	if err := m.rn.Propose(p.Encode()); err != nil {
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

var openACL = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}

// requests from clients

type reqKind int

const (
	reqConnect reqKind = iota // new session
	reqAttach
	reqPing
	reqWrite
	reqRead     // getData, no sync
	reqSyncRead // sync, then getData
	reqChildren // sync, then getChildren
)

type request struct {
	kind    reqKind
	connID  uint64
	session int64
	xid     uint64
	op      int32 // reqWrite
	body    []byte
	path    string
}

type response struct {
	// withQuorum: the answering member was in touch with the running
	// leader (the simulator's view), so the session's liveness counts.
	withQuorum bool
	connID     uint64
	xid        uint64
	err        int32
	zxid       int64
	data       []byte
	stat       jute.Stat
	children   []string
	path       string
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
		conn = &mconn{id: r.connID, client: c, session: r.session}
		m.conns[r.connID] = conn
		p := &server.Proposal{SessionID: r.session, ConnID: r.connID}
		if r.kind == reqConnect {
			p.Type, p.Body = server.ProposalCreateSession, server.CreateSessionBody(r.session, int32(sessionTimeout/time.Millisecond), nil)
		} else {
			p.Type = server.ProposalAttachSession
		}
		m.propose(p, func(a server.Applied, ok bool) {
			if !ok || a.Err != 0 {
				if ok {
					reply(response{err: a.Err})
				}
				delete(m.conns, conn.id)
				if !ok {
					m.closeConn(conn)
				}
				return
			}
			conn.active = true
			reply(response{zxid: a.Zxid})
		})
		return
	}
	if conn == nil || !conn.active {
		return
	}
	m.tracker.Touch(conn.session)
	m.touched[conn.session] = true
	switch r.kind {
	case reqPing:
		reply(response{zxid: m.rep.LastZxid()})
	case reqRead:
		data, st, ok := m.rep.GetData(r.path)
		resp := response{zxid: m.rep.LastZxid(), data: data, stat: st}
		if !ok {
			resp.err = jute.ErrNoNode
		}
		reply(resp)
	case reqSyncRead, reqChildren:
		m.readCount++
		rctx := fmt.Sprintf("%d/%d", m.incarnation, m.readCount)
		m.reads = append(m.reads, &pendingRead{conn: conn, rctx: rctx, serve: func() {
			if m.conns[conn.id] != conn {
				return
			}
			resp := response{zxid: m.rep.LastZxid()}
			if r.kind == reqChildren {
				ch, ok := m.rep.GetChildren(r.path)
				resp.children = ch
				if !ok {
					resp.err = jute.ErrNoNode
				}
			} else {
				data, st, ok := m.rep.GetData(r.path)
				resp.data, resp.stat = data, st
				if !ok {
					resp.err = jute.ErrNoNode
				}
			}
			reply(resp)
		}})
		if m.up {
			m.rn.ReadIndex([]byte(rctx))
			m.process()
		}
	case reqWrite:
		conn.seq++
		m.propose(&server.Proposal{SessionID: conn.session, ConnID: conn.id, Seq: conn.seq, Type: r.op, Body: r.body},
			func(a server.Applied, ok bool) {
				if !ok || a.Err == jute.ErrConnectionLoss {
					m.closeConn(conn)
					return
				}
				resp := response{err: a.Err, zxid: a.Zxid, stat: a.Stat, path: a.Path}
				if r.op == jute.OpMulti && a.Err == 0 {
					for _, mr := range a.Multi {
						if mr.Err != 0 {
							resp.err = mr.Err
							break
						}
					}
				}
				reply(resp)
			})
	}
}
