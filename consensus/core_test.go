package consensus

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/internal/mutation"
)

// memStorage is a Storage in memory: every Write is durable when it
// returns. It lets tests see what is durable at any moment.
type memStorage struct {
	hs       *pb.HardState
	cs       *pb.ConfState
	snap     *pb.SnapshotMetadata
	ents     []*pb.Entry
	payloads map[[2]uint64][]byte
	onWrite  func(*WriteBatch) // called before a Write takes effect
}

func newMemStorage() *memStorage { return &memStorage{payloads: map[[2]uint64][]byte{}} }

func (s *memStorage) Load() (LoadedState, error) {
	st := LoadedState{HardState: s.hs, ConfState: s.cs, Snapshot: s.snap}
	for _, e := range s.ents {
		if e.GetIndex() > s.snap.GetIndex() {
			st.Entries = append(st.Entries, e)
		}
	}
	return st, nil
}

func (s *memStorage) Write(w *WriteBatch) error {
	if s.onWrite != nil {
		s.onWrite(w)
	}
	if w.Snapshot != nil {
		s.snap = proto.Clone(w.Snapshot).(*pb.SnapshotMetadata)
	}
	if w.DropAllEntries {
		s.ents = nil
	}
	if w.CompactBelow > 0 {
		s.ents = slices.DeleteFunc(s.ents, func(e *pb.Entry) bool { return e.GetIndex() < w.CompactBelow })
	}
	if w.HardState != nil {
		s.hs = proto.Clone(w.HardState).(*pb.HardState)
	}
	if w.ConfState != nil {
		s.cs = proto.Clone(w.ConfState).(*pb.ConfState)
	}
	if len(w.Entries) > 0 {
		first := w.Entries[0].GetIndex()
		s.ents = slices.DeleteFunc(s.ents, func(e *pb.Entry) bool { return e.GetIndex() >= first })
		s.ents = append(s.ents, w.Entries...)
	}
	return nil
}

// holds reports whether entry (index, term) is durable.
func (s *memStorage) holds(index, term uint64) bool {
	if index <= s.snap.GetIndex() {
		return true
	}
	for _, e := range s.ents {
		if e.GetIndex() == index {
			return e.GetTerm() == term
		}
	}
	return false
}

func (s *memStorage) lastIndex() uint64 {
	if len(s.ents) > 0 {
		return s.ents[len(s.ents)-1].GetIndex()
	}
	return s.snap.GetIndex()
}

func (s *memStorage) SaveSnapshot(term, index uint64, data []byte) error {
	s.payloads[[2]uint64{term, index}] = data
	return nil
}

// SaveSnapshotFrom buffers the payload.
func (s *memStorage) SaveSnapshotFrom(term, index uint64, write func(io.Writer) error) (int64, error) {
	data, err := Collect(write)
	if err != nil {
		return 0, err
	}
	return int64(len(data)), s.SaveSnapshot(term, index, data)
}

func (s *memStorage) LoadSnapshot(term, index uint64) ([]byte, error) {
	d, ok := s.payloads[[2]uint64{term, index}]
	if !ok {
		return nil, fmt.Errorf("no snapshot %d-%d", term, index)
	}
	return d, nil
}

func (s *memStorage) DeleteSnapshot(term, index uint64) error {
	delete(s.payloads, [2]uint64{term, index})
	return nil
}
func (s *memStorage) PruneSnapshots() error                   { return nil }
func (s *memStorage) CleanSnapshots(uint64) ([]string, error) { return nil, nil }
func (s *memStorage) Close() error                            { return nil }

// coreGroup is a raft group of Cores driven by the test on its goroutine.
// Its transport checks, at every Send, that the sender's messages vouch
// only for durable state.
type coreGroup struct {
	cores  map[uint64]*Core
	stores map[uint64]*memStorage
	sms    map[uint64]*durableSM
	queue  []*pb.Message
	bad    []string
	now    time.Time       // the Cores' clock, one tick per round
	down   map[uint64]bool // members that neither tick nor receive
	// appSent: per sender, the entry indexes it sent in an MsgApp.
	appSent map[uint64]map[uint64]bool
}

type groupTransport struct {
	g  *coreGroup
	id uint64
}

func (t groupTransport) Send(msgs []*pb.Message) {
	st := t.g.stores[t.id]
	for _, m := range msgs {
		switch m.GetType() {
		case pb.MsgApp:
			for _, e := range m.GetEntries() {
				t.g.appSent[t.id][e.GetIndex()] = true
			}
		case pb.MsgAppResp:
			if !m.GetReject() && m.GetIndex() > st.lastIndex() {
				t.g.bad = append(t.g.bad, fmt.Sprintf("member %d acknowledges index %d, durable up to %d",
					t.id, m.GetIndex(), st.lastIndex()))
			}
		case pb.MsgVoteResp:
			if !m.GetReject() && (st.hs.GetVote() != m.GetTo() || st.hs.GetTerm() < m.GetTerm()) {
				t.g.bad = append(t.g.bad, fmt.Sprintf("member %d votes for %d in term %d, durable vote %d in term %d",
					t.id, m.GetTo(), m.GetTerm(), st.hs.GetVote(), st.hs.GetTerm()))
			}
		}
		t.g.queue = append(t.g.queue, m)
	}
}
func (groupTransport) Start(MessageHandler) error { return nil }
func (groupTransport) Stop()                      {}

// durableSM records applied entries and checks each is durable.
type durableSM struct {
	g     *coreGroup
	id    uint64
	datas []string
}

func (s *durableSM) Apply(index, term uint64, data []byte) error {
	if !s.g.stores[s.id].holds(index, term) {
		s.g.bad = append(s.g.bad, fmt.Sprintf("member %d applies entry %d before it is durable", s.id, index))
	}
	s.datas = append(s.datas, string(data))
	return nil
}
func (s *durableSM) Snapshot() ([]byte, error)    { return []byte(fmt.Sprint(len(s.datas))), nil }
func (s *durableSM) Restore(uint64, []byte) error { return nil }

func newCoreGroup(t *testing.T, n int) *coreGroup {
	var peers []Peer
	for id := uint64(1); id <= uint64(n); id++ {
		peers = append(peers, Peer{ID: id})
	}
	return newCoreGroupPeers(t, peers)
}

// newCoreGroupPeers bootstraps a group of peers (observers included).
func newCoreGroupPeers(t *testing.T, peers []Peer) *coreGroup {
	g := &coreGroup{cores: map[uint64]*Core{}, stores: map[uint64]*memStorage{}, sms: map[uint64]*durableSM{},
		now: time.Unix(1_700_000_000, 0), down: map[uint64]bool{}, appSent: map[uint64]map[uint64]bool{}}
	for _, p := range peers {
		g.addCore(t, Config{ID: p.ID, Peers: peers})
	}
	return g
}

// addCore starts a Core with cfg (its transport, clock and storage are the
// group's).
func (g *coreGroup) addCore(t *testing.T, cfg Config) *Core {
	id := cfg.ID
	g.stores[id] = newMemStorage()
	g.appSent[id] = map[uint64]bool{}
	g.sms[id] = &durableSM{g: g, id: id}
	cfg.Transport, cfg.Logger = groupTransport{g, id}, zerolog.Nop()
	c, err := NewCore(cfg, g.sms[id], CoreOptions{Storage: g.stores[id], Now: func() time.Time { return g.now }})
	require.NoError(t, err)
	g.cores[id] = c
	return c
}

// round ticks every Core, delivers every queued message and handles every
// Ready, in id order.
func (g *coreGroup) round(t *testing.T) {
	ids := slices.Sorted(func(yield func(uint64) bool) {
		for id := range g.cores {
			if !yield(id) {
				return
			}
		}
	})
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return g.down[id] })
	g.now = g.now.Add(DefaultTickInterval)
	for _, id := range ids {
		g.cores[id].Tick()
	}
	for len(g.queue) > 0 || g.anyReady() {
		q := g.queue
		g.queue = nil
		for _, m := range q {
			if c := g.cores[m.GetTo()]; c != nil && !g.down[m.GetTo()] {
				_ = c.Step(m)
			}
		}
		for _, id := range ids {
			for g.cores[id].HasReady() {
				require.NoError(t, g.cores[id].HandleReady())
				if j := g.cores[id].SnapshotJob(); j != nil {
					require.NoError(t, g.cores[id].SnapshotDone(j.Run()))
				}
			}
		}
	}
}

func (g *coreGroup) anyReady() bool {
	for id, c := range g.cores {
		if !g.down[id] && c.HasReady() {
			return true
		}
	}
	return false
}

// TestCorePersistsBeforeSend drives three Cores and checks, at every send,
// that acknowledgements and votes vouch only for durable state, and that
// only durable entries are applied. The ack-before-durable mutation must
// break the first check.
func TestCorePersistsBeforeSend(t *testing.T) {
	tests := []struct {
		name    string
		mutate  bool
		wantBad bool
	}{
		{name: "correct", mutate: false, wantBad: false},
		{name: "ack-before-durable", mutate: true, wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.AckBeforeDurable, tt.mutate))
			g := newCoreGroup(t, 3)
			proposed := 0
			for r := 0; r < 200; r++ {
				g.round(t)
				for _, c := range g.cores {
					if c.IsLeader() && proposed < 50 {
						require.NoError(t, c.Propose([]byte(fmt.Sprintf("e%d", proposed))))
						proposed++
					}
				}
			}
			require.Equal(t, 50, proposed, "a leader was elected and took proposals")
			for id, sm := range g.sms {
				require.Len(t, sm.datas, 50, "member %d applied every entry", id)
				require.Equal(t, g.sms[1].datas, sm.datas, "member %d applied the same log", id)
			}
			if tt.wantBad {
				require.NotEmpty(t, g.bad, "the mutation was not detected")
			} else {
				require.Empty(t, g.bad)
			}
		})
	}
}

// TestLeaderSendsAppendsBeforeWrite: the leader hands its MsgApps to the
// transport before its own storage write of the entries they carry, so the
// followers write in parallel with it; followers still acknowledge only
// durable entries (checked by the group's transport), and every member
// applies only durable entries.
func TestLeaderSendsAppendsBeforeWrite(t *testing.T) {
	tests := []struct {
		name    string
		members int
	}{
		{name: "three members", members: 3},
		{name: "five members", members: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newCoreGroup(t, tt.members)
			early, late := 0, 0
			for id, st := range g.stores {
				st.onWrite = func(w *WriteBatch) {
					if !g.cores[id].IsLeader() {
						return
					}
					for _, e := range w.Entries {
						if len(e.GetData()) == 0 {
							continue // the new leader's empty entry
						}
						if g.appSent[id][e.GetIndex()] {
							early++
						} else {
							late++
						}
					}
				}
			}
			proposed := 0
			for r := 0; r < 200; r++ {
				g.round(t)
				for _, c := range g.cores {
					if c.IsLeader() && proposed < 50 {
						require.NoError(t, c.Propose([]byte(fmt.Sprintf("e%d", proposed))))
						proposed++
					}
				}
			}
			require.Equal(t, 50, proposed, "a leader was elected and took proposals")
			require.Equal(t, 50, early, "the leader sent each entry before writing it")
			require.Zero(t, late, "entries the leader wrote before sending them")
			for id, sm := range g.sms {
				require.Len(t, sm.datas, 50, "member %d applied every entry", id)
			}
			require.Empty(t, g.bad)
		})
	}
}

// blockingSM blocks in Apply until release is closed.
type blockingSM struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	datas   []string
}

func (s *blockingSM) Apply(_, _ uint64, data []byte) error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.datas = append(s.datas, string(data))
	return nil
}
func (s *blockingSM) Snapshot() ([]byte, error)    { return nil, nil }
func (s *blockingSM) Restore(uint64, []byte) error { return nil }

// startStuckInApply starts a single member with a blockingSM, waits until
// it leads, and proposes "first": it returns once the loop is inside that
// entry's Apply, where it stays until sm.release is closed.
func startStuckInApply(t *testing.T) (*Node, *blockingSM) {
	t.Helper()
	sm := &blockingSM{entered: make(chan struct{}), release: make(chan struct{})}
	leaderC := make(chan struct{})
	var once sync.Once
	n, err := Start(Config{ID: 1, DataDir: t.TempDir(), TickInterval: 10 * time.Millisecond, Logger: testLogger(t),
		OnLeaderChange: func(isLeader bool, _, _ uint64) {
			if isLeader {
				once.Do(func() { close(leaderC) })
			}
		}}, sm)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Stop() })
	select {
	case <-leaderC:
	case <-time.After(testTimeout):
		t.Fatal("no leader")
	}
	ctx := testCtx(t)
	require.NoError(t, n.Propose(ctx, []byte("first")))
	select {
	case <-sm.entered:
	case <-ctx.Done():
		t.Fatal("first entry not applied")
	}
	return n, sm
}

// TestStepNeverBlocks: while the loop is busy (here: inside Apply), Step
// queues peer messages and returns at once, a forwarded proposal included,
// and drops messages beyond maxQueuedSteps instead of blocking the
// transport's reader. The queued proposal is applied once the loop is free.
func TestStepNeverBlocks(t *testing.T) {
	n, sm := startStuckInApply(t)
	ctx := testCtx(t)

	// The loop is stuck in Apply.
	start := time.Now()
	fwd := &pb.Message{Type: pb.MsgProp.Enum(), From: new(uint64(2)), To: new(uint64(1)),
		Entries: []*pb.Entry{{Data: []byte("forwarded")}}}
	require.NoError(t, n.Step(ctx, fwd))
	dropped := 0
	for i := 0; i < maxQueuedSteps+10; i++ {
		m := &pb.Message{Type: pb.MsgHeartbeatResp.Enum(), From: new(uint64(2)), To: new(uint64(1))}
		if err := n.Step(ctx, m); err != nil {
			require.ErrorIs(t, err, errStepQueueFull)
			dropped++
		}
	}
	require.Less(t, time.Since(start), 2*time.Second, "Step blocked while the loop was busy")
	require.Equal(t, 11, dropped, "messages beyond the bound are dropped")

	close(sm.release)
	require.Eventually(t, func() bool {
		sm.mu.Lock()
		defer sm.mu.Unlock()
		return slices.Equal(sm.datas, []string{"first", "forwarded"})
	}, testTimeout, 5*time.Millisecond)
}

// TestProposalsShareOneWrite: proposals made while the loop is busy are
// handed to raft together and persisted in one write.
func TestProposalsShareOneWrite(t *testing.T) {
	n, sm := startStuckInApply(t)
	ctx := testCtx(t)
	before := n.Status()

	const k = 40
	var wg sync.WaitGroup
	for i := 0; i < k; i++ {
		wg.Go(func() { _ = n.Propose(ctx, []byte(fmt.Sprintf("p%d", i))) })
	}
	// Let every proposal reach the queue while the loop is stuck.
	require.Eventually(t, func() bool {
		n.q.mu.Lock()
		defer n.q.mu.Unlock()
		return len(n.q.ops) == k
	}, testTimeout, time.Millisecond)
	close(sm.release)
	wg.Wait()
	require.NoError(t, n.WaitApplied(ctx, before.Applied+1+k))
	after := n.Status()
	require.Equal(t, uint64(k), after.PersistedEntries-before.PersistedEntries)
	require.Equal(t, uint64(1), after.PersistBatches-before.PersistBatches, "queued proposals share one write")
}

// chanSM signals each applied entry's data on applied.
type chanSM struct{ applied chan string }

func (s *chanSM) Apply(_, _ uint64, data []byte) error {
	s.applied <- string(data)
	return nil
}
func (s *chanSM) Snapshot() ([]byte, error)    { return nil, nil }
func (s *chanSM) Restore(uint64, []byte) error { return nil }

// TestApplyDurableDuringNextWrite: on a single member, entries a write made
// durable are applied while (ParallelApply, more than inlineApplyMax of
// them) or before the write of the entries proposed after it, in one Ready,
// and never before their own write.
func TestApplyDurableDuringNextWrite(t *testing.T) {
	tests := []struct {
		name      string
		parallel  bool
		inlineMax int
	}{
		{name: "parallel", parallel: true, inlineMax: 0},
		{name: "parallel, short apply first", parallel: true, inlineMax: inlineApplyMax},
		{name: "sequential", parallel: false, inlineMax: inlineApplyMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newMemStorage()
			sm := &chanSM{applied: make(chan string, 16)}
			c, err := NewCore(Config{ID: 1, Peers: []Peer{{ID: 1}}, Logger: zerolog.Nop()}, sm,
				CoreOptions{Storage: st, ParallelApply: tt.parallel})
			require.NoError(t, err)
			c.inlineApplyMax = tt.inlineMax
			for i := 0; i < 10 && !c.IsLeader(); i++ {
				for c.HasReady() {
					require.NoError(t, c.HandleReady())
				}
			}
			require.True(t, c.IsLeader())
			var got []string
			st.onWrite = func(w *WriteBatch) {
				for _, e := range w.Entries {
					if string(e.GetData()) != "b" {
						continue
					}
					// The write of b waits (bounded) for a to be applied.
					select {
					case d := <-sm.applied:
						got = append(got, d)
					case <-time.After(5 * time.Second):
						got = append(got, "timeout")
					}
				}
			}
			require.NoError(t, c.Propose([]byte("a")))
			require.NoError(t, c.HandleReady()) // writes a
			select {
			case d := <-sm.applied:
				t.Fatalf("%q applied in the Ready that wrote it", d)
			default:
			}
			require.NoError(t, c.Propose([]byte("b")))
			require.NoError(t, c.HandleReady()) // applies a, writes b
			require.Equal(t, []string{"a"}, got, "a was applied while or before b was written")
			require.Equal(t, st.lastIndex()-1, c.AppliedIndex(), "a applied, b written, not applied")
			require.True(t, c.HasReady())
			require.NoError(t, c.HandleReady()) // applies b
			require.Equal(t, "b", <-sm.applied)
			require.Equal(t, st.lastIndex(), c.AppliedIndex())
		})
	}
}

// TestProposeBatch: a batch's entries are appended in order in one write,
// and applied in order, as the same proposals made one by one would be;
// without a leader the whole batch is refused with raft's
// ErrProposalDropped and counts as nothing raft must forward.
func TestProposeBatch(t *testing.T) {
	st := newMemStorage()
	sm := &chanSM{applied: make(chan string, 16)}
	c, err := NewCore(Config{ID: 1, Peers: []Peer{{ID: 1}}, Logger: zerolog.Nop()}, sm, CoreOptions{Storage: st})
	require.NoError(t, err)
	require.ErrorIs(t, c.ProposeBatch([][]byte{[]byte("x"), []byte("y")}), raft.ErrProposalDropped)
	require.Zero(t, c.propsStepped.Load())
	for i := 0; i < 10 && !c.IsLeader(); i++ {
		for c.HasReady() {
			require.NoError(t, c.HandleReady())
		}
	}
	require.True(t, c.IsLeader())
	var written [][]string
	st.onWrite = func(w *WriteBatch) {
		var datas []string
		for _, e := range w.Entries {
			if len(e.GetData()) > 0 {
				datas = append(datas, string(e.GetData()))
			}
		}
		if datas != nil {
			written = append(written, datas)
		}
	}
	require.NoError(t, c.ProposeBatch([][]byte{[]byte("a"), []byte("b"), []byte("c")}))
	require.Equal(t, uint64(3), c.propsStepped.Load())
	for c.HasReady() {
		require.NoError(t, c.HandleReady())
	}
	require.Equal(t, [][]string{{"a", "b", "c"}}, written)
	for _, want := range []string{"a", "b", "c"} {
		require.Equal(t, want, <-sm.applied)
	}
}
