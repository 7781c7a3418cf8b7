package consensus

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// notice is leader from's durability notice: its log is durable through
// index in term.
func notice(from, term, index uint64) *pb.Message {
	return &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(from), To: new(uint64(2)), Term: new(term),
		Index: new(index), Context: durableContext}
}

// TestFollowerAppliesWhatLeaderNoticeShowsCommitted: member 2 of three
// holds entries its leader has not told it are committed. A notice from
// the leader of its current term that the leader's log is durable through
// an index lets it apply, from its own disk, up to that index or its own
// last durable entry, whichever is lower, if that entry is of the
// notice's term: then the leader's disk and its own, a majority, hold it.
// Without the notice, raft's follower would apply them only once its own
// acknowledgement reached the leader and the commit index came back.
func TestFollowerAppliesWhatLeaderNoticeShowsCommitted(t *testing.T) {
	ent := func(i, term uint64, d string) *pb.Entry { return dataEntry(i, term, d) }
	tests := []struct {
		name  string
		setup []*pb.Message // stepped, each followed by its Readys
		n     *pb.Message
		want  []string
	}{
		{"notice of the leader's term: applies what both disks hold",
			[]*pb.Message{leaderApp(3, 1, 3, ent(4, 2, "a"), ent(5, 2, "b"))}, notice(1, 2, 5), []string{"a", "b"}},
		{"notice beyond its own disk: up to its last durable entry",
			[]*pb.Message{leaderApp(3, 1, 3, ent(4, 2, "a"))}, notice(1, 2, 9), []string{"a"}},
		{"notice below its last entry: up to the notice",
			[]*pb.Message{leaderApp(3, 1, 3, ent(4, 2, "a"), ent(5, 2, "b"))}, notice(1, 2, 4), []string{"a"}},
		{"notice from a member it does not follow", []*pb.Message{leaderApp(3, 1, 3, ent(4, 2, "a"))}, notice(3, 2, 4), nil},
		{"notice of an older term", []*pb.Message{leaderApp(3, 1, 3, ent(4, 2, "a"))}, notice(1, 1, 4), nil},
		{"entry of an earlier leader's term: it may still be replaced", []*pb.Message{
			leaderApp(3, 1, 3, ent(4, 2, "a")),
			{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(3)), To: new(uint64(2)), Term: new(uint64(3)), Commit: new(uint64(3))},
		}, notice(3, 3, 4), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, sm := startTestFollower(t, &sentTransport{}, newTestInbox())
			for _, m := range tt.setup {
				require.NoError(t, c.Step(m))
				handleReadys(t, c)
			}
			require.Empty(t, sm.applied(), "nothing committed as far as raft on this member knows")
			require.NoError(t, c.Step(tt.n))
			handleReadys(t, c)
			require.Equal(t, tt.want, sm.applied())
		})
	}
}

// TestFollowerAppliesNoticedEntryOnceWritten: a notice that arrives while
// the follower still writes the entries it covers applies only what was
// durable before the write meanwhile, and the rest once the write
// returned.
func TestFollowerAppliesNoticedEntryOnceWritten(t *testing.T) {
	inbox := newTestInbox()
	c, st, sm := startTestFollower(t, &sentTransport{}, inbox)
	require.NoError(t, c.Step(leaderApp(3, 1, 3, dataEntry(4, 2, "a"))))
	handleReadys(t, c)
	var during []string
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) > 0 && string(w.Entries[0].GetData()) == "b" {
			inbox.deliver(t, notice(1, 2, 5))
			during = sm.applied()
		}
	}
	require.NoError(t, c.Step(leaderApp(4, 2, 3, dataEntry(5, 2, "b"))))
	require.NoError(t, c.HandleReady())
	require.Equal(t, []string{"a"}, during, "a (durable) applied while b was written, b not before its write")
	require.Equal(t, []string{"a", "b"}, sm.applied(), "b applied once written")
	handleReadys(t, c)
	require.Equal(t, []string{"a", "b"}, sm.applied(), "raft's commit, later, applies nothing twice")
	require.NoError(t, c.Step(leaderApp(5, 2, 5)))
	handleReadys(t, c)
	require.Equal(t, []string{"a", "b"}, sm.applied())
}

// TestLeaderSendsDurableNoticeAfterWrite: a leader's notice that its log
// is durable through an index leaves only once the write holding that
// index returned (it vouches for the leader's disk), to both followers.
func TestLeaderSendsDurableNoticeAfterWrite(t *testing.T) {
	c, st, tr, _, _ := startTestLeader(t, 2, 3)
	tr.take()
	var before []*pb.Message
	st.onWrite = func(w *WriteBatch) {
		if len(w.Entries) > 0 && string(w.Entries[0].GetData()) == "a" {
			before = tr.take()
		}
	}
	require.NoError(t, c.Propose([]byte("a")))
	require.NoError(t, c.HandleReady())
	a := st.lastIndex()
	for _, m := range before {
		require.False(t, isDurableNotice(m), "notice sent before the write returned: %v", m)
	}
	var to []uint64
	for _, m := range tr.take() {
		if isDurableNotice(m) {
			require.Equal(t, a, m.GetIndex())
			require.Equal(t, c.Term(), m.GetTerm())
			to = append(to, m.GetTo())
		}
	}
	require.ElementsMatch(t, []uint64{2, 3}, to)
}

// TestLeaderReadIndexCoversNoticedEntries: a leader that told its
// followers its log is durable through entry a, before a quorum
// acknowledged a, answers a follower's ReadIndex (a sync) with at least a:
// a follower may have applied a from the notice and answered its client,
// and a read after a sync that began later must see a.
func TestLeaderReadIndexCoversNoticedEntries(t *testing.T) {
	c, st, tr, _, _ := startTestLeader(t, 2, 3)
	require.NoError(t, c.Propose([]byte("a")))
	handleReadys(t, c) // writes a and sends the notices; nobody acknowledges a
	a := st.lastIndex()
	require.Less(t, c.rn.BasicStatus().GetCommit(), a, "a is not committed as far as the leader knows")
	tr.take()

	ctx := []byte("sync-1")
	require.NoError(t, c.Step(&pb.Message{Type: pb.MsgReadIndex.Enum(), From: new(uint64(2)), To: new(uint64(1)),
		Term: new(c.Term()), Entries: []*pb.Entry{{Data: ctx}}}))
	handleReadys(t, c)
	for _, m := range tr.take() { // the heartbeat that confirms the leadership (raft's own context)
		if m.GetType() == pb.MsgHeartbeat && len(m.GetContext()) > 0 {
			require.NoError(t, c.Step(&pb.Message{Type: pb.MsgHeartbeatResp.Enum(), From: new(m.GetTo()), To: new(uint64(1)),
				Term: new(c.Term()), Context: m.GetContext()}))
		}
	}
	handleReadys(t, c)
	var got []uint64
	for _, m := range tr.take() {
		if m.GetType() == pb.MsgReadIndexResp {
			got = append(got, m.GetIndex())
		}
	}
	require.Equal(t, []uint64{a}, got, "the read index covers the entry the notice announced")
}

// TestLeaderLocalReadIndexCoversNoticedEntries: the same for a sync on
// the leader itself (its own ReadStates).
func TestLeaderLocalReadIndexCoversNoticedEntries(t *testing.T) {
	c, st, tr, _, _ := startTestLeader(t, 2, 3)
	var got []uint64
	c.onReads = func(rs []raft.ReadState) {
		for _, r := range rs {
			got = append(got, r.Index)
		}
	}
	require.NoError(t, c.Propose([]byte("a")))
	handleReadys(t, c)
	a := st.lastIndex()
	require.Less(t, c.rn.BasicStatus().GetCommit(), a)
	tr.take()
	c.ReadIndex([]byte("sync-1"))
	handleReadys(t, c)
	for _, m := range tr.take() {
		if m.GetType() == pb.MsgHeartbeat && len(m.GetContext()) > 0 {
			require.NoError(t, c.Step(&pb.Message{Type: pb.MsgHeartbeatResp.Enum(), From: new(m.GetTo()), To: new(uint64(1)),
				Term: new(c.Term()), Context: m.GetContext()}))
		}
	}
	handleReadys(t, c)
	require.Equal(t, []uint64{a}, got, "the read index covers the entry the notice announced")
}
