package server

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
)

// recLeaderHooks records what a sessionLeader decides.
type recLeaderHooks struct {
	moved    int
	proposed []*entry
	stopping bool
}

func (h *recLeaderHooks) leaderMoved() { h.moved++ }
func (h *recLeaderHooks) proposeDecision(e *entry) bool {
	h.proposed = append(h.proposed, e)
	return !h.stopping
}

// TestSessionLeaderChange: a member that becomes leader resets its tracker
// and records its term before it raises the leader flag, so an expiry round
// run between the two steps (as the server's expiry loop can) decides
// nothing from the tracker it kept while following; with the
// late-tracker-reset mutation (issue 8 item 2 reverted) that round expires
// the live session, which is what the simulator must catch.
func TestSessionLeaderChange(t *testing.T) {
	const id = 7
	tests := []struct {
		name        string
		mutate      bool
		wantWindow  []int64 // the expiry round between the two steps
		wantFlagMid bool
	}{
		{"reset before the flag", false, nil, false},
		{"late-tracker-reset mutation", true, []int64{id}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.LateTrackerReset, tt.mutate))
			sm := newTestSM(t)
			sm.createSession(id, 1)
			clock := session.NewFakeClock(time.Unix(1_700_000_000, 0))
			tracker := session.NewTracker(clock, 100)
			tracker.Track(id, 4000)
			h := &recLeaderHooks{}
			l := newSessionLeader(sm.stateMachine, tracker, leaderConfig{retryAfter: time.Second}, h, zerolog.Nop())

			// Following: the tracker hears of nobody while the clock runs
			// past the session's timeout.
			require.False(t, l.leaderChange(false, 2, 4))
			clock.Advance(time.Hour)
			require.Empty(t, l.expiryRound(clock.Now()), "a follower decides nothing")

			var window []int64
			var flagMid bool
			var termMid uint64
			l.interleave = func() {
				flagMid, termMid = l.isLeader(), l.term.Load()
				window = l.expiryRound(clock.Now())
			}
			require.True(t, l.leaderChange(true, 1, 5), "became leader")
			require.Equal(t, 1, h.moved, "the leader moved from 2 to 1")
			require.Equal(t, tt.wantFlagMid, flagMid)
			require.Equal(t, uint64(5), termMid, "the term is recorded before the round can run")
			require.Equal(t, tt.wantWindow, window)
			require.True(t, l.isLeader())
			if !tt.mutate {
				require.Empty(t, l.expiryRound(clock.Now()), "fresh timeouts after the reset")
				require.Empty(t, h.proposed)
				return
			}
			require.Len(t, h.proposed, 1)
			require.Equal(t, entryExpireSession, h.proposed[0].Type)
		})
	}
}

// TestSessionLeaderContainerRound: only the leader proposes removals, one
// entry per removable container and expired TTL node, carrying the
// deciding time; the round ends when the member is stopping.
func TestSessionLeaderContainerRound(t *testing.T) {
	const t0 = int64(1_700_000_000_000)
	sm := newTestSM(t)
	sm.createSession(7, 1)
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	seq := uint64(0)
	write := func(typ int32, rec jute.Record) {
		seq++
		e := &entry{Type: typ, SessionID: 7, ConnID: 1, Seq: seq, Time: t0, Opts: optTTL, Body: jute.Marshal(rec)}
		require.Zero(t, sm.apply(e).Err)
	}
	write(jute.OpCreateContainer, &jute.CreateRequest{Path: "/c", ACL: acl, Flags: jute.FlagContainer})
	write(jute.OpCreateContainer, &jute.CreateRequest{Path: "/never", ACL: acl, Flags: jute.FlagContainer})
	write(jute.OpCreate, &jute.CreateRequest{Path: "/c/x", ACL: acl})
	write(jute.OpDelete, &jute.DeleteRequest{Path: "/c/x", Version: -1})
	write(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: acl, Flags: jute.FlagPersistentWithTTL, TTL: 1000})

	removal := func(typ int32, path string, ms int64) *entry {
		return &entry{Type: typ, Time: ms, Body: jute.Marshal(&jute.PathRequest{Path: path})}
	}
	tests := []struct {
		name     string
		leader   bool
		stopping bool
		at       int64
		want     []*entry
		wantMore bool
	}{
		{"follower", false, false, t0 + 5000, nil, true},
		{"leader before the TTL", true, false, t0 + 1000, []*entry{removal(entryDeleteContainer, "/c", t0+1000)}, true},
		{"leader after the TTL", true, false, t0 + 1001,
			[]*entry{removal(entryDeleteContainer, "/c", t0+1001), removal(entryDeleteTTL, "/t", t0+1001)}, true},
		{"stopping", true, true, t0 + 1001, []*entry{removal(entryDeleteContainer, "/c", t0+1001)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recLeaderHooks{stopping: tt.stopping}
			l := newSessionLeader(sm.stateMachine, session.NewTracker(session.SystemClock{}, 100), leaderConfig{}, h, zerolog.Nop())
			l.leaderChange(tt.leader, 1, 3)
			require.Equal(t, tt.wantMore, l.containerRound(time.UnixMilli(tt.at)))
			require.Equal(t, tt.want, h.proposed)
		})
	}
}
