package server

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/session"
)

// newEnsembleMember builds (without starting) member 1 of a two-member
// ensemble whose member 2 listens for liveness at leaderAddr.
func newEnsembleMember(t *testing.T, leaderAddr string) *Server {
	t.Helper()
	host, port, err := net.SplitHostPort(leaderAddr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.ServerID = 1
	cfg.Members = map[uint64]Member{
		1: {ID: 1, Host: "127.0.0.1", PeerPort: 1, ElectionPort: 1, Role: "participant"},
		2: {ID: 2, Host: host, PeerPort: 1, ElectionPort: p, Role: "participant"},
	}
	return New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
}

// livenessGoroutines counts the goroutines livenessReceiver started.
func livenessGoroutines() int {
	count := 0
	for _, g := range goroutineStacks() {
		if strings.Contains(g, "(*Server).livenessReceiver.func") {
			count++
		}
	}
	return count
}

// TestLivenessReceiverGoroutinesEndWithTheirConnection: a liveness
// connection that ends leaves no goroutine behind (before, one per accepted
// connection waited for shutdown), and its reports were applied.
func TestLivenessReceiverGoroutinesEndWithTheirConnection(t *testing.T) {
	s := newEnsembleMember(t, "127.0.0.1:1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.wg.Add(1)
	go s.livenessReceiver(ln)
	t.Cleanup(func() {
		close(s.stopC)
		_ = ln.Close()
		s.wg.Wait()
	})
	const id = 0x42
	clock := session.NewFakeClock(time.Unix(1_700_000_000, 0))
	s.tracker = session.NewTracker(clock, 1)
	s.tracker.Track(id, 4000)
	before, _ := s.tracker.Deadline(id)
	clock.Advance(time.Second)

	const conns = 20
	var open []net.Conn
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		open = append(open, c)
		frame := binary.BigEndian.AppendUint32(nil, 16)
		frame = binary.BigEndian.AppendUint64(frame, 2)
		frame = binary.BigEndian.AppendUint64(frame, id)
		_, err = c.Write(frame)
		require.NoError(t, err)
	}
	// Two goroutines per connection while it is open (reader and shutdown
	// watcher), in the old code and the new.
	require.Eventually(t, func() bool { return livenessGoroutines() == 2*conns }, 5*time.Second, 10*time.Millisecond,
		"every connection accepted: %d goroutines", livenessGoroutines())
	for _, c := range open {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool { return livenessGoroutines() == 0 }, 5*time.Second, 10*time.Millisecond,
		"liveness goroutines still running after their connections closed: %d", livenessGoroutines())
	after, _ := s.tracker.Deadline(id)
	require.Equal(t, before.Add(time.Second), after, "the reports touched the session")
}

// TestLivenessReportKeptWhenNotSent: a report that cannot reach the leader
// is merged into the next one instead of being dropped, so the leader still
// learns the sessions are alive once its liveness port answers.
func TestLivenessReportKeptWhenNotSent(t *testing.T) {
	// A port nobody listens on: the dial fails.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())

	s := newEnsembleMember(t, deadAddr)
	var link livenessLink
	defer link.close()
	s.touch(3)
	s.touch(1)
	s.reportTouched(&link, 2, time.Second)
	s.touch(2)
	require.Equal(t, []int64{1, 2, 3}, s.liveness.pending(), "a report the leader never got must be kept")

	// The leader's liveness port answers now: the kept sessions reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s.memberMu.Lock()
	m := s.memberSet[2]
	m.ElectionPort = ln.Addr().(*net.TCPAddr).Port
	s.memberSet = map[uint64]Member{1: s.memberSet[1], 2: m}
	s.memberMu.Unlock()
	s.reportTouched(&link, 2, time.Second)
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 4+8+3*8)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, uint32(8+3*8), binary.BigEndian.Uint32(got))
	require.Equal(t, uint64(1), binary.BigEndian.Uint64(got[4:]), "the sender's id")
	for i, want := range []int64{1, 2, 3} {
		require.Equal(t, want, int64(binary.BigEndian.Uint64(got[12+8*i:])))
	}
	require.Empty(t, s.liveness.pending())
}

// TestLivenessReportResentAfterWriteFailure: a write that fails reveals
// that the previous report on the same connection may have been lost (it
// was written after the leader's side went away): both are kept.
func TestLivenessReportResentAfterWriteFailure(t *testing.T) {
	s := newEnsembleMember(t, "127.0.0.1:1")
	local, remote := net.Pipe()
	require.NoError(t, remote.Close())
	link := livenessLink{conn: local, leader: 2}
	defer link.close()
	s.liveness.link, s.liveness.prev = 2, []int64{4} // report {4} was written on link
	s.touch(5)
	s.reportTouched(&link, 2, time.Second)
	require.Equal(t, []int64{4, 5}, s.liveness.pending())
	require.Nil(t, link.conn, "a failed connection is dropped, the next report dials again")
}

// TestLivenessReports: the rounds' decisions, step by step: what a round
// reports and to whom, and what is kept for the next one.
func TestLivenessReports(t *testing.T) {
	type step struct {
		touch    []int64 // touched before the round (on a member that does not lead)
		isLeader bool
		lead     uint64
		outcome  string // "sent", "failed" or "" (no report expected)
		want     LivenessReport
		pending  []int64 // kept for the next round after it
		touched  []int64 // sessions the round touched in the local tracker
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"sorted batch for the leader", []step{
			{touch: []int64{3, 1, 2, 1}, lead: 2, outcome: "sent", want: LivenessReport{To: 2, IDs: []int64{1, 2, 3}, NewLink: true}},
			{touch: []int64{4}, lead: 2, outcome: "sent", want: LivenessReport{To: 2, IDs: []int64{4}}},
		}},
		{"nothing touched, nothing sent", []step{{lead: 2}}},
		{"no leader known: kept", []step{
			{touch: []int64{1}, lead: 0, pending: []int64{1}},
			{lead: 3, outcome: "sent", want: LivenessReport{To: 3, IDs: []int64{1}, NewLink: true}},
		}},
		{"failed report kept with the one before it on the same link", []step{
			{touch: []int64{1}, lead: 2, outcome: "sent", want: LivenessReport{To: 2, IDs: []int64{1}, NewLink: true}},
			{touch: []int64{2}, lead: 2, outcome: "failed", want: LivenessReport{To: 2, IDs: []int64{2}}, pending: []int64{1, 2}},
			{lead: 2, outcome: "sent", want: LivenessReport{To: 2, IDs: []int64{1, 2}}},
		}},
		{"previous report to a former leader is not resent", []step{
			{touch: []int64{1}, lead: 2, outcome: "sent", want: LivenessReport{To: 2, IDs: []int64{1}, NewLink: true}},
			{touch: []int64{2}, lead: 3, outcome: "failed", want: LivenessReport{To: 3, IDs: []int64{2}, NewLink: true}, pending: []int64{2}},
		}},
		{"a member that became leader touches its own tracker", []step{
			{touch: []int64{5, 6}, isLeader: true, lead: 1, touched: []int64{5, 6}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := session.NewFakeClock(time.Unix(1_700_000_000, 0))
			tracker := session.NewTracker(clock, 1)
			l := NewLivenessReports()
			for i, st := range tt.steps {
				for _, id := range st.touch {
					tracker.Track(id, 4000)
					l.Touch(id, false, tracker)
				}
				before := map[int64]time.Time{}
				for _, id := range st.touched {
					before[id], _ = tracker.Deadline(id)
				}
				clock.Advance(time.Second)
				r, ok := l.Next(st.isLeader, st.lead, tracker)
				require.Equal(t, st.outcome != "", ok, "step %d: a report", i)
				if ok {
					require.Equal(t, st.want, r, "step %d", i)
				}
				switch st.outcome {
				case "sent":
					l.Sent(r)
				case "failed":
					l.Failed(r)
				}
				require.Equal(t, append([]int64{}, st.pending...), l.pending(), "step %d: kept", i)
				for id, b := range before {
					after, _ := tracker.Deadline(id)
					require.Equal(t, b.Add(time.Second), after, "step %d: session %d touched", i, id)
				}
			}
		})
	}
}

// TestReceiveLiveness: a report touches the receiver's tracker only when
// its sender is a member.
func TestReceiveLiveness(t *testing.T) {
	for _, member := range []bool{true, false} {
		clock := session.NewFakeClock(time.Unix(1_700_000_000, 0))
		tracker := session.NewTracker(clock, 1)
		tracker.Track(7, 4000)
		before, _ := tracker.Deadline(7)
		clock.Advance(time.Second)
		require.Equal(t, member, ReceiveLiveness(tracker, member, []int64{7}))
		after, _ := tracker.Deadline(7)
		require.Equal(t, member, after.After(before), "member %v", member)
	}
}
