package consensus

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// ackTransport records, safe for concurrent use, the append
// acknowledgements a Core sends, and signals each on acks.
type ackTransport struct {
	mu   sync.Mutex
	st   *memStorage
	bad  []string
	acks chan uint64
}

func (t *ackTransport) Send(msgs []*pb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		if m.GetType() != pb.MsgAppResp || m.GetReject() {
			continue
		}
		if m.GetIndex() > t.st.lastIndex() {
			t.bad = append(t.bad, "acknowledged before durable")
		}
		t.acks <- m.GetIndex()
	}
}
func (*ackTransport) Start(MessageHandler) error { return nil }
func (*ackTransport) Stop()                      {}

// applyGateSM blocks in Apply of the entry whose data is gate until release is
// closed, and signals entering it on entered.
type applyGateSM struct {
	gate    string
	entered chan struct{}
	release chan struct{}
}

func (s *applyGateSM) Apply(_, _ uint64, data []byte) error {
	if string(data) == s.gate {
		close(s.entered)
		<-s.release
	}
	return nil
}
func (*applyGateSM) Snapshot() ([]byte, error)    { return nil, nil }
func (*applyGateSM) Restore(uint64, []byte) error { return nil }

// TestFollowerAcksBeforePendingApply: with ParallelApply, a follower whose
// Ready writes entry 5 while it applies entry 4 (committed and durable
// already) acknowledges 5 as soon as its write is durable, while the apply
// of 4 still runs, and never before the write.
func TestFollowerAcksBeforePendingApply(t *testing.T) {
	st := newMemStorage()
	tr := &ackTransport{st: st, acks: make(chan uint64, 16)}
	sm := &applyGateSM{gate: "a", entered: make(chan struct{}), release: make(chan struct{})}
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c, err := NewCore(Config{ID: 2, Peers: peers, Transport: tr, Logger: zerolog.Nop()}, sm,
		CoreOptions{Storage: st, ParallelApply: true})
	require.NoError(t, err)
	handleReadys(t, c)
	ent := func(i uint64, d string) *pb.Entry { return dataEntry(i, 2, d) }
	app := func(index, logTerm, commit uint64, e *pb.Entry) {
		require.NoError(t, c.Step(&pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)),
			Term: new(uint64(2)), Index: new(index), LogTerm: new(logTerm), Commit: new(commit),
			Entries: []*pb.Entry{e}}))
	}
	// The bootstrap entries 1..3 are of term 1; a is written, not committed.
	app(3, 1, 3, ent(4, "a"))
	handleReadys(t, c)
	require.Equal(t, uint64(4), <-tr.acks)

	// One Ready writes b and applies a, which blocks.
	app(4, 2, 4, ent(5, "b"))
	errc := make(chan error, 1)
	go func() { errc <- c.HandleReady() }()
	<-sm.entered
	var acked uint64
	select {
	case acked = <-tr.acks:
	case <-time.After(10 * time.Second):
	}
	close(sm.release)
	require.NoError(t, <-errc)
	require.Equal(t, uint64(5), acked, "b acknowledged while the apply of a was pending")
	require.Empty(t, tr.bad)
	require.Equal(t, uint64(4), c.AppliedIndex())
}

// testInbox is an Inbox the test fills; takes counts TakeSteps calls.
type testInbox struct {
	mu    sync.Mutex
	msgs  []*pb.Message
	takes int
	wake  chan struct{}
	taken chan struct{} // signalled after every TakeSteps
}

func newTestInbox() *testInbox {
	return &testInbox{wake: make(chan struct{}, 1), taken: make(chan struct{}, 16)}
}

func (b *testInbox) Wake() <-chan struct{} { return b.wake }

func (b *testInbox) TakeSteps(buf []*pb.Message) []*pb.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf = append(buf, b.msgs...)
	b.msgs = nil
	b.takes++
	b.taken <- struct{}{}
	return buf
}

// deliver queues m and waits until the Core took it and handled the batch
// it was in (the Core's next TakeSteps starts only after that).
func (b *testInbox) deliver(t *testing.T, m *pb.Message) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	for range 2 {
		b.wake <- struct{}{}
		select {
		case <-b.taken:
		case <-time.After(10 * time.Second):
			t.Error("the Core did not take queued messages while writing")
			return
		}
	}
}

// sentTransport records what a Core sends, safe for concurrent use.
type sentTransport struct {
	mu   sync.Mutex
	msgs []*pb.Message
}

func (t *sentTransport) Send(msgs []*pb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.msgs = append(t.msgs, msgs...)
}
func (t *sentTransport) take() []*pb.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.msgs
	t.msgs = nil
	return m
}
func (*sentTransport) Start(MessageHandler) error { return nil }
func (*sentTransport) Stop()                      {}

// recordSM records applied data.
type recordSM struct {
	mu    sync.Mutex
	datas []string
}

func (s *recordSM) Apply(_, _ uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.datas = append(s.datas, string(data))
	return nil
}
func (s *recordSM) applied() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.datas)
}
func (*recordSM) Snapshot() ([]byte, error)    { return nil, nil }
func (*recordSM) Restore(uint64, []byte) error { return nil }

// startTestLeader makes member 1 of three the leader, with ParallelApply
// and a testInbox, members in responders answering its votes and appends
// (stepped between Readys); the others never answer.
func startTestLeader(t *testing.T, responders ...uint64) (*Core, *memStorage, *sentTransport, *recordSM, *testInbox) {
	st := newMemStorage()
	tr := &sentTransport{}
	sm := &recordSM{}
	inbox := newTestInbox()
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c, err := NewCore(Config{ID: 1, Peers: peers, Transport: tr, Logger: zerolog.Nop()}, sm,
		CoreOptions{Storage: st, ParallelApply: true, Inbox: inbox})
	require.NoError(t, err)
	respond := func() {
		for _, m := range tr.take() {
			if !slices.Contains(responders, m.GetTo()) {
				continue
			}
			r := &pb.Message{From: new(m.GetTo()), To: new(uint64(1)), Term: new(m.GetTerm())}
			switch m.GetType() {
			case pb.MsgPreVote:
				r.Type = pb.MsgPreVoteResp.Enum()
			case pb.MsgVote:
				r.Type = pb.MsgVoteResp.Enum()
			case pb.MsgApp:
				r.Type = pb.MsgAppResp.Enum()
				r.Index = new(m.GetIndex() + uint64(len(m.GetEntries())))
			default:
				continue
			}
			require.NoError(t, c.Step(r))
		}
	}
	handleReadys(t, c) // applies the bootstrap conf changes
	require.NoError(t, c.rn.Campaign())
	for i := 0; i < 10; i++ {
		handleReadys(t, c)
		respond()
	}
	handleReadys(t, c)
	require.True(t, c.IsLeader())
	require.Equal(t, c.AppliedIndex(), st.lastIndex(), "the leader's empty entry is applied")
	return c, st, tr, sm, inbox
}

// TestLeaderTellsCommitOfEntryItWrites: both followers acknowledge entry b
// while the leader still writes it: b is committed (a quorum has it
// durable) and the leader tells them so at once, with b's term from the
// write, but applies b only after its own write.
func TestLeaderTellsCommitOfEntryItWrites(t *testing.T) {
	c, st, tr, sm, inbox := startTestLeader(t, 2, 3)
	var during []string
	told := map[uint64]uint64{}
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) == 0 || string(w.Entries[0].GetData()) != "b" {
			return
		}
		b := w.Entries[0].GetIndex()
		for _, id := range []uint64{2, 3} {
			inbox.deliver(t, &pb.Message{Type: pb.MsgAppResp.Enum(), From: new(id), To: new(uint64(1)),
				Term: new(c.Term()), Index: new(b)})
		}
		during = sm.applied()
		for _, m := range tr.take() {
			if m.GetType() == pb.MsgApp && len(m.GetEntries()) == 0 && m.GetCommit() == b {
				require.Equal(t, w.Entries[0].GetTerm(), m.GetLogTerm())
				told[m.GetTo()] = m.GetIndex()
			}
		}
	}
	require.NoError(t, c.Propose([]byte("b")))
	require.NoError(t, c.HandleReady())
	b := st.lastIndex()
	require.Empty(t, during, "b applied before the leader's write returned")
	require.Equal(t, map[uint64]uint64{2: b, 3: b}, told, "both told b is committed while it was written")
	handleReadys(t, c)
	require.Equal(t, []string{"b"}, sm.applied())
}

// TestLeaderAppliesAckDuringNextWrite: a leader that receives the
// acknowledgement making entry a committed while it writes the next entry
// b applies a before that write returns (Inbox), and never b before its
// write; it tells the follower it replicates to the new commit index then
// too (tellCommit).
func TestLeaderAppliesAckDuringNextWrite(t *testing.T) {
	c, st, tr, sm, inbox := startTestLeader(t, 2)
	require.NoError(t, c.Propose([]byte("a")))
	handleReadys(t, c) // writes a, sends it to 2 and 3
	a := st.lastIndex()
	var during []string
	var told []uint64
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) == 0 || string(w.Entries[0].GetData()) != "b" {
			return
		}
		// 2 acknowledges a while b is written.
		inbox.deliver(t, &pb.Message{Type: pb.MsgAppResp.Enum(), From: new(uint64(2)), To: new(uint64(1)),
			Term: new(c.Term()), Index: new(a)})
		during = sm.applied()
		for _, m := range tr.take() {
			if m.GetType() == pb.MsgApp && len(m.GetEntries()) == 0 && m.GetCommit() == a {
				told = append(told, m.GetTo())
				require.Equal(t, a, m.GetIndex(), "at 2's match index")
			}
		}
	}
	require.NoError(t, c.Propose([]byte("b")))
	require.NoError(t, c.HandleReady())
	require.Equal(t, []string{"a"}, during, "a applied while b was written")
	require.Equal(t, []uint64{2}, told, "the commit told, while b was written, to 2 (3 is probed, not replicated to)")
	require.Equal(t, a, c.AppliedIndex())
	// The next Ready hands a over again (skipped) and sends the commit.
	handleReadys(t, c)
	require.Equal(t, []string{"a"}, sm.applied())
}

// TestFollowerKeepsConflictingEntriesUnapplied: a follower whose disk holds
// uncommitted entries 4 and 5 of term 2 is told, while it writes, by a
// leader of term 3 whose term it knows already, that entries 4 and 5 of
// term 3 are committed. The copies on its disk must not be applied from the
// mirror (the same term before and after the message, but raft's log no
// longer is the mirror); the new ones are applied once written.
func TestFollowerKeepsConflictingEntriesUnapplied(t *testing.T) {
	inbox := newTestInbox()
	c, st, sm := startTestFollower(t, &sentTransport{}, inbox)
	app := func(from, term, commit uint64, ents ...*pb.Entry) *pb.Message {
		return &pb.Message{Type: pb.MsgApp.Enum(), From: new(from), To: new(uint64(2)),
			Term: new(term), Index: new(uint64(3)), LogTerm: new(uint64(1)), Commit: new(commit), Entries: ents}
	}
	require.NoError(t, c.Step(app(1, 2, 3, dataEntry(4, 2, "old4"), dataEntry(5, 2, "old5"))))
	handleReadys(t, c)
	require.True(t, st.holds(5, 2))
	// Leader 3 of term 3 heartbeats: 2 writes the new term, and meanwhile
	// receives 3's entries, committed.
	require.NoError(t, c.Step(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(3)), To: new(uint64(2)),
		Term: new(uint64(3)), Commit: new(uint64(3))}))
	st.onWrite = func(w *WriteBatch) {
		if w.HardState.GetTerm() == 3 && len(w.Entries) == 0 {
			st.onWrite = nil
			inbox.deliver(t, app(3, 3, 5, dataEntry(4, 3, "new4"), dataEntry(5, 3, "new5")))
		}
	}
	handleReadys(t, c)
	require.Nil(t, st.onWrite, "the term was written")
	require.Equal(t, []string{"new4", "new5"}, sm.applied())
}

// TestFollowerAppliesCommitDuringWrite: a follower told, while it writes
// entry b, that entry a (durable) is committed (the leader's tellCommit)
// applies a before that write returns.
func TestFollowerAppliesCommitDuringWrite(t *testing.T) {
	inbox := newTestInbox()
	c, st, sm := startTestFollower(t, &sentTransport{}, inbox)
	ent := func(i uint64, d string) *pb.Entry { return dataEntry(i, 2, d) }
	require.NoError(t, c.Step(leaderApp(3, 1, 3, ent(4, "a"))))
	handleReadys(t, c)
	var during []string
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) > 0 && string(w.Entries[0].GetData()) == "b" {
			inbox.deliver(t, leaderApp(4, 2, 4))
			during = sm.applied()
		}
	}
	require.NoError(t, c.Step(leaderApp(4, 2, 3, ent(5, "b"))))
	handleReadys(t, c)
	require.Equal(t, []string{"a"}, during, "a applied while b was written")
	require.Equal(t, []string{"a"}, sm.applied(), "b is not committed")
}

// TestSnapshotAfterMirroredApplyKeepsRaftEntries: a follower told commit 7
// while it writes entry 8 applies 4..7 from the mirror (applyMirrored), ahead
// of raft, which has handed out only up to 3. A local snapshot decided then
// is taken at 7, but must not compact MemoryStorage past 3+1: raft reads
// 4..7 from it in its next Ready, and panics ("requested index is
// unavailable due to compaction") if they are gone.
func TestSnapshotAfterMirroredApplyKeepsRaftEntries(t *testing.T) {
	st := newMemStorage()
	sm := &recordSM{}
	inbox := newTestInbox()
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c, err := NewCore(Config{ID: 2, Peers: peers, Transport: &sentTransport{}, Logger: zerolog.Nop(),
		SnapshotEvery: 2, KeepEntries: 1}, sm,
		CoreOptions{Storage: st, ParallelApply: true, Inbox: inbox})
	require.NoError(t, err)
	handle := func() {
		for c.HasReady() {
			require.NoError(t, c.HandleReady())
			if j := c.SnapshotJob(); j != nil {
				require.NoError(t, c.SnapshotDone(j.Run()))
			}
		}
	}
	handle()
	ent := func(i uint64, d string) *pb.Entry { return dataEntry(i, 2, d) }
	// Entries 4..7 durable, commit 3 (the initial conf entries).
	require.NoError(t, c.Step(leaderApp(3, 1, 3, ent(4, "a"), ent(5, "b"), ent(6, "c"), ent(7, "d"))))
	handle()
	require.Equal(t, uint64(3), c.AppliedIndex())
	// While entry 8 is written, the leader tells commit 7.
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) > 0 && string(w.Entries[0].GetData()) == "e" {
			inbox.deliver(t, leaderApp(7, 2, 7))
		}
	}
	require.NoError(t, c.Step(leaderApp(7, 2, 3, ent(8, "e"))))
	require.NoError(t, c.HandleReady())
	require.Equal(t, uint64(7), c.AppliedIndex(), "4..7 applied from the mirror during the write")
	j := c.SnapshotJob()
	require.NotNil(t, j, "a snapshot is due at the applied index")
	require.Equal(t, uint64(7), j.Index())
	require.NoError(t, c.SnapshotDone(j.Run()))
	first, err := c.mem.FirstIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, first, uint64(4), "raft has not handed out 4..7 yet")
	handle() // raft hands out 4..7 (skipped: applied) and the rest
	require.Equal(t, []string{"a", "b", "c", "d"}, sm.applied())
}

// tellSM records, at each Apply, the commit indexes the leader had told
// its followers by then (tellCommit's empty appends).
type tellSM struct {
	recordSM
	tr   *sentTransport
	seen []*pb.Message // everything sent before the last Apply
	told map[string][]uint64
}

func (s *tellSM) Apply(index, term uint64, data []byte) error {
	s.seen = append(s.seen, s.tr.take()...)
	for _, m := range s.seen {
		if m.GetType() == pb.MsgApp && len(m.GetEntries()) == 0 && m.GetCommit() >= index {
			s.told[string(data)] = append(s.told[string(data)], m.GetTo())
		}
	}
	return s.recordSM.Apply(index, term, data)
}

// TestLeaderTellsCommitBeforeApplying (issue 11): a leader that learns,
// while it writes, that entry a is committed tells its followers before it
// applies a itself, so that they apply and answer their clients meanwhile.
func TestLeaderTellsCommitBeforeApplying(t *testing.T) {
	c, st, tr, _, inbox := startTestLeader(t, 2)
	sm := &tellSM{tr: tr, told: map[string][]uint64{}}
	c.sm = sm
	require.NoError(t, c.Propose([]byte("a")))
	handleReadys(t, c) // writes a, sends it to 2 and 3
	a := st.lastIndex()
	tr.take()
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) == 0 || string(w.Entries[0].GetData()) != "b" {
			return
		}
		// 2 acknowledges a while b is written: a is committed and applied
		// meanwhile.
		inbox.deliver(t, &pb.Message{Type: pb.MsgAppResp.Enum(), From: new(uint64(2)), To: new(uint64(1)),
			Term: new(c.Term()), Index: new(a)})
	}
	require.NoError(t, c.Propose([]byte("b")))
	require.NoError(t, c.HandleReady())
	require.Equal(t, []string{"a"}, sm.applied())
	require.Equal(t, []uint64{2}, sm.told["a"], "2 was told a is committed before the leader applied a")
	handleReadys(t, c)
}

// TestLeaderTellsLateFollowerTheCommit: while the leader writes entry b,
// follower 2's acknowledgement commits entry a (2 is told at once), and
// then follower 3 acknowledges a too. The commit index does not move, but
// 3 may now commit a: it is told at once as well, not with the leader's
// next Ready after the write (raft's own answer to that acknowledgement
// waits for it). In a group of 3, 3 is the slower follower, and its
// clients wait for its apply.
func TestLeaderTellsLateFollowerTheCommit(t *testing.T) {
	c, st, tr, sm, inbox := startTestLeader(t, 2, 3)
	require.NoError(t, c.Propose([]byte("a")))
	handleReadys(t, c) // writes a, sends it to 2 and 3, unanswered
	a := st.lastIndex()
	tr.take()
	told := map[uint64][]uint64{} // per acknowledging follower: who was told a's commit
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) == 0 || string(w.Entries[0].GetData()) != "b" {
			return
		}
		for _, id := range []uint64{2, 3} {
			inbox.deliver(t, &pb.Message{Type: pb.MsgAppResp.Enum(), From: new(id), To: new(uint64(1)),
				Term: new(c.Term()), Index: new(a)})
			for _, m := range tr.take() {
				if m.GetType() == pb.MsgApp && len(m.GetEntries()) == 0 && m.GetCommit() >= a && m.GetIndex() >= a {
					told[id] = append(told[id], m.GetTo())
				}
			}
		}
	}
	require.NoError(t, c.Propose([]byte("b")))
	require.NoError(t, c.HandleReady())
	require.Equal(t, map[uint64][]uint64{2: {2}, 3: {3}}, told,
		"each follower told it may commit a as soon as its acknowledgement made that true, while b was written")
	require.Equal(t, []string{"a"}, sm.applied())
	handleReadys(t, c)
}
