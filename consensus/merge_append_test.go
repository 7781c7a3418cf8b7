package consensus

import (
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestLeaderSendsOneAppendPerFollowerPerReady (issue 11): raft sends an
// append for every proposal it steps; the leader sends a Ready's appends
// to a follower as one, which the follower answers once. Every entry
// reaches each follower exactly once, in order, with the commit index of
// the last append.
func TestLeaderSendsOneAppendPerFollowerPerReady(t *testing.T) {
	c, st, tr, _, _, handle := startTestLeader(t, 2, 3)
	handle()
	tr.take()
	first := st.lastIndex() + 1
	for _, d := range []string{"a", "b", "c", "d"} {
		require.NoError(t, c.Propose([]byte(d)))
	}
	require.NoError(t, c.HandleReady())
	apps := map[uint64][]*pb.Message{}
	for _, m := range tr.take() {
		if m.GetType() == pb.MsgApp {
			apps[m.GetTo()] = append(apps[m.GetTo()], m)
		}
	}
	for _, id := range []uint64{2, 3} {
		require.Len(t, apps[id], 1, "appends to %d", id)
		m := apps[id][0]
		require.Equal(t, first-1, m.GetIndex())
		var got []string
		for i, e := range m.GetEntries() {
			require.Equal(t, first+uint64(i), e.GetIndex())
			got = append(got, string(e.GetData()))
		}
		require.Equal(t, []string{"a", "b", "c", "d"}, got, "entries to %d", id)
	}
	handle()
}

func appMsg(to, index, logTerm, commit uint64, ents ...*pb.Entry) *pb.Message {
	return &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(to), Term: new(uint64(3)),
		Index: new(index), LogTerm: new(logTerm), Commit: new(commit), Entries: ents}
}

func entryAt(index, term uint64) *pb.Entry {
	return &pb.Entry{Index: new(index), Term: new(term), Data: []byte("x")}
}

// TestSendAppendsMergesOnlyContinuations: appends merge only where the
// second starts at the first's last entry (index and term), in the same
// term, with no other message to that member between them; other messages
// keep their order, and raft's own messages and entry slices are left as
// they were.
func TestSendAppendsMergesOnlyContinuations(t *testing.T) {
	hb := func(to uint64) *pb.Message {
		return &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1)), To: new(to), Term: new(uint64(3))}
	}
	type want struct {
		to, index, commit uint64
		ents              []uint64
	}
	for _, tc := range []struct {
		name string
		msgs []*pb.Message
		want []want
	}{
		{"continuations merge, commit-only ones too",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 3)), appMsg(2, 11, 3, 10), appMsg(2, 11, 3, 10, entryAt(12, 3), entryAt(13, 3))},
			[]want{{2, 10, 10, []uint64{11, 12, 13}}}},
		{"per member",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 3)), appMsg(3, 8, 2, 9, entryAt(9, 2)), appMsg(2, 11, 3, 9, entryAt(12, 3)), appMsg(3, 9, 2, 9, entryAt(10, 3))},
			[]want{{2, 10, 9, []uint64{11, 12}}, {3, 8, 9, []uint64{9, 10}}}},
		{"a gap does not merge",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 3)), appMsg(2, 12, 3, 9, entryAt(13, 3))},
			[]want{{2, 10, 9, []uint64{11}}, {2, 12, 9, []uint64{13}}}},
		{"a resend from further back does not merge",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 3)), appMsg(2, 9, 3, 9, entryAt(10, 3), entryAt(11, 3))},
			[]want{{2, 10, 9, []uint64{11}}, {2, 9, 9, []uint64{10, 11}}}},
		{"another term at the joint does not merge",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 2)), appMsg(2, 11, 3, 9, entryAt(12, 3))},
			[]want{{2, 10, 9, []uint64{11}}, {2, 11, 9, []uint64{12}}}},
		{"a heartbeat between does not merge",
			[]*pb.Message{appMsg(2, 10, 3, 9, entryAt(11, 3)), hb(2), appMsg(2, 11, 3, 9, entryAt(12, 3))},
			[]want{{2, 10, 9, []uint64{11}}, {2, 0, 0, nil}, {2, 11, 9, []uint64{12}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, tr, _, _, _ := startTestLeader(t, 2, 3)
			tr.take()
			var before [][]*pb.Entry
			for _, m := range tc.msgs {
				before = append(before, m.GetEntries())
			}
			rest := c.sendAppends(tc.msgs)
			require.Empty(t, rest)
			var got []want
			for _, m := range tr.take() {
				w := want{to: m.GetTo(), index: m.GetIndex(), commit: m.GetCommit()}
				for _, e := range m.GetEntries() {
					w.ents = append(w.ents, e.GetIndex())
				}
				got = append(got, w)
			}
			require.Equal(t, tc.want, got)
			for i, m := range tc.msgs {
				require.Equal(t, before[i], m.GetEntries(), "raft's message %d is unchanged", i)
			}
		})
	}
}
