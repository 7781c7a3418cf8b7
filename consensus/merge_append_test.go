package consensus

import (
	"runtime"
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
	c, st, tr, _, _ := startTestLeader(t, 2, 3)
	handleReadys(t, c)
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
	handleReadys(t, c)
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
			c, _, tr, _, _ := startTestLeader(t, 2, 3)
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

// TestMergeAcksKeepsTheLastOfARun: of a run of acknowledgements to one
// member only the last is sent when it is of the same term and for at
// least the index of those before it; rejections, other messages to that
// member, another term or a lower index end a run.
func TestMergeAcksKeepsTheLastOfARun(t *testing.T) {
	ack := func(to, term, index uint64) *pb.Message {
		return &pb.Message{Type: pb.MsgAppResp.Enum(), From: new(uint64(2)), To: new(to), Term: new(term), Index: new(index)}
	}
	reject := func(to, index uint64) *pb.Message {
		m := ack(to, 3, index)
		m.Reject = new(true)
		return m
	}
	hbResp := &pb.Message{Type: pb.MsgHeartbeatResp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3))}
	type got struct {
		typ       pb.MessageType
		to, index uint64
		reject    bool
	}
	for _, tc := range []struct {
		name string
		msgs []*pb.Message
		want []got
	}{
		{"a run", []*pb.Message{ack(1, 3, 5), ack(1, 3, 7), ack(1, 3, 7), ack(1, 3, 9)},
			[]got{{pb.MsgAppResp, 1, 9, false}}},
		{"per member", []*pb.Message{ack(1, 3, 5), ack(3, 3, 2), ack(1, 3, 7), ack(3, 3, 4)},
			[]got{{pb.MsgAppResp, 1, 7, false}, {pb.MsgAppResp, 3, 4, false}}},
		{"a rejection ends a run", []*pb.Message{ack(1, 3, 5), reject(1, 6), ack(1, 3, 7)},
			[]got{{pb.MsgAppResp, 1, 5, false}, {pb.MsgAppResp, 1, 6, true}, {pb.MsgAppResp, 1, 7, false}}},
		{"another message to the member ends a run", []*pb.Message{ack(1, 3, 5), hbResp, ack(1, 3, 7)},
			[]got{{pb.MsgAppResp, 1, 5, false}, {pb.MsgHeartbeatResp, 1, 0, false}, {pb.MsgAppResp, 1, 7, false}}},
		{"a lower index is kept", []*pb.Message{ack(1, 3, 7), ack(1, 3, 5)},
			[]got{{pb.MsgAppResp, 1, 7, false}, {pb.MsgAppResp, 1, 5, false}}},
		{"another term is kept", []*pb.Message{ack(1, 3, 7), ack(1, 4, 8)},
			[]got{{pb.MsgAppResp, 1, 7, false}, {pb.MsgAppResp, 1, 8, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Core{openApp: map[uint64]int{}}
			var out []got
			for _, m := range c.mergeAcks(tc.msgs) {
				out = append(out, got{m.GetType(), m.GetTo(), m.GetIndex(), m.GetReject()})
			}
			require.Equal(t, tc.want, out)
		})
	}
}

// TestFollowerAcksAReadyOnce (issue 11): a follower that stepped several
// appends before its Ready sends one acknowledgement, for the last entry,
// once the write returned.
func TestFollowerAcksAReadyOnce(t *testing.T) {
	tr := &sentTransport{}
	c, st, _ := startTestFollower(t, tr, newTestInbox())
	tr.take()
	ent := func(i uint64) *pb.Entry {
		return &pb.Entry{Index: new(i), Term: new(uint64(2)), Type: pb.EntryNormal.Enum(), Data: []byte("x")}
	}
	require.NoError(t, c.Step(leaderApp(3, 1, 3, ent(4))))
	require.NoError(t, c.Step(leaderApp(4, 2, 3, ent(5))))
	require.NoError(t, c.Step(leaderApp(5, 2, 4)))
	require.NoError(t, c.Step(leaderApp(5, 2, 4, ent(6))))
	handleReadys(t, c)
	var acks []uint64
	for _, m := range tr.take() {
		if m.GetType() == pb.MsgAppResp {
			require.False(t, m.GetReject())
			acks = append(acks, m.GetIndex())
		}
	}
	require.Equal(t, []uint64{6}, acks)
	require.Equal(t, uint64(6), st.lastIndex())
}

// TestSendAppendsMergesARunLinearly: a run of n appends to one follower is
// merged by extending the merged message's own entry slice, not by
// copying every entry gathered so far at each step (quadratic: 4000
// appends took 56 ms on the raft loop before the write starts).
func TestSendAppendsMergesARunLinearly(t *testing.T) {
	const n = 4000
	run := func() []*pb.Message {
		msgs := make([]*pb.Message, n)
		for i := range msgs {
			idx := uint64(10 + i)
			msgs[i] = &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)), Term: new(uint64(3)),
				Index: new(idx), LogTerm: new(uint64(3)), Commit: new(idx),
				Entries: []*pb.Entry{{Index: new(idx + 1), Term: new(uint64(3)), Data: []byte("x")}}}
		}
		return msgs
	}
	tr := &sentTransport{}
	c := &Core{openApp: map[uint64]int{}, openMerged: map[uint64]int{}, transport: tr}
	msgs := run()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c.sendAppends(msgs)
	runtime.ReadMemStats(&after)
	sent := tr.take()
	require.Len(t, sent, 1)
	require.Len(t, sent[0].GetEntries(), n)
	require.Equal(t, uint64(10), sent[0].GetIndex())
	require.Equal(t, uint64(10+n-1), sent[0].GetCommit())
	for i, e := range sent[0].GetEntries() {
		require.Equal(t, uint64(11+i), e.GetIndex())
	}
	// Linear: about 2 x n pointers for the growing slice, plus the merged
	// message; the quadratic merge allocated n^2/2 pointers (64 MB here).
	alloc := after.TotalAlloc - before.TotalAlloc
	require.Less(t, alloc, uint64(1<<20), "merging %d appends allocated %d bytes", n, alloc)
}
