package consensus

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/internal/mutation"
)

func TestPlanMembers(t *testing.T) {
	// voters 1-3, learner 5 (a learner to be promoted)
	cs := &pb.ConfState{Voters: []uint64{3, 1, 2}, Learners: []uint64{5}}
	// voters 1-3, observer 4 (a learner that stays one)
	withObserver := &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	anyErr := errors.New("any error")
	tests := []struct {
		name    string
		cs      *pb.ConfState
		target  []Peer
		add     []uint64
		remove  []uint64
		wantErr error // anyErr: some error
	}{
		{name: "same voters", cs: cs, target: []Peer{{ID: 1}, {ID: 2}, {ID: 3}}, remove: []uint64{5}},
		{name: "add and remove", cs: cs, target: []Peer{{ID: 7}, {ID: 1}, {ID: 4}}, add: []uint64{4, 7},
			remove: []uint64{2, 3, 5}},
		{name: "learner to voter", cs: cs, target: []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 5}}, add: []uint64{5}},
		{name: "empty", cs: cs, target: nil, wantErr: ErrLastVoter},
		{name: "zero id", cs: cs, target: []Peer{{ID: 0}}, wantErr: anyErr},
		{name: "keep the observer", cs: withObserver,
			target: []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Observer: true}}},
		{name: "add an observer", cs: withObserver,
			target: []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Observer: true}, {ID: 5, Observer: true}}, add: []uint64{5}},
		{name: "remove the observer", cs: withObserver, target: []Peer{{ID: 1}, {ID: 2}, {ID: 3}}, remove: []uint64{4}},
		{name: "observers only", cs: withObserver, target: []Peer{{ID: 4, Observer: true}}, wantErr: ErrLastVoter},
		{name: "voter to observer", cs: withObserver, target: []Peer{{ID: 1}, {ID: 2}, {ID: 3, Observer: true}},
			wantErr: errRoleChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add, remove, err := PlanMembers(tt.cs, tt.target)
			if tt.wantErr != nil {
				require.Error(t, err)
				if tt.wantErr != anyErr {
					require.ErrorIs(t, err, tt.wantErr)
				}
				return
			}
			require.NoError(t, err)
			var ids []uint64
			for _, p := range add {
				ids = append(ids, p.ID)
			}
			require.Equal(t, tt.add, ids)
			require.Equal(t, tt.remove, remove)
		})
	}
}

// TestCoreMemberChange drives membership changes on goroutine-free Cores:
// the outcome is reported once, after the Ready that applied the last step
// was Advanced (the conf state raft was told is then the target), and the
// refusals hold. The skip-active-quorum mutation must break the refusal of
// a removal with a voter down.
func TestCoreMemberChange(t *testing.T) {
	tests := []struct {
		name    string
		mutate  bool
		down    bool // a follower other than the one removed is down
		target  func(lead uint64, others []uint64) []Peer
		wantErr error
		voters  func(lead uint64, others []uint64) []uint64
	}{
		{name: "remove a follower",
			target: func(lead uint64, o []uint64) []Peer { return []Peer{{ID: lead}, {ID: o[1]}} },
			voters: func(lead uint64, o []uint64) []uint64 { return slices.Sorted(slices.Values([]uint64{lead, o[1]})) }},
		{name: "remove the leader",
			target: func(_ uint64, o []uint64) []Peer { return []Peer{{ID: o[0]}, {ID: o[1]}} },
			voters: func(_ uint64, o []uint64) []uint64 { return o }},
		{name: "remove every voter", target: func(uint64, []uint64) []Peer { return nil }, wantErr: ErrLastVoter},
		{name: "remove a follower with the other down", down: true,
			target:  func(lead uint64, o []uint64) []Peer { return []Peer{{ID: lead}, {ID: o[1]}} },
			wantErr: ErrNoActiveQuorum},
		{name: "mutated: remove a follower with the other down", down: true, mutate: true,
			target: func(lead uint64, o []uint64) []Peer { return []Peer{{ID: lead}, {ID: o[1]}} },
			voters: func(lead uint64, o []uint64) []uint64 { return slices.Sorted(slices.Values([]uint64{lead, o[1]})) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.SkipActiveQuorum, tt.mutate))
			g := newCoreGroup(t, 3)
			lead := g.waitLeader(t)
			followers := others(lead)
			if tt.down {
				g.down[followers[1]] = true
				for r := 0; r < 30; r++ { // three election timeouts
					g.round(t)
				}
				require.Equal(t, lead, g.cores[lead].Lead(), "the leader kept its quorum")
			}
			c := g.cores[lead]
			calls := 0
			var got error
			c.ChangeMembers(c.appliedConf(), tt.target(lead, followers), func(err error) {
				calls++
				got = err
				if err == nil {
					// Woken after Advance: raft was told.
					require.Equal(t, tt.voters(lead, followers), slices.Sorted(slices.Values(c.appliedConf().GetVoters())))
				}
			})
			for r := 0; r < 50 && calls == 0; r++ {
				g.round(t)
			}
			require.Equal(t, 1, calls, "outcome reported once")
			if tt.wantErr != nil {
				require.ErrorIs(t, got, tt.wantErr)
				require.Equal(t, []uint64{1, 2, 3}, slices.Sorted(slices.Values(c.appliedConf().GetVoters())))
				return
			}
			require.NoError(t, got)
			require.Empty(t, g.bad)
		})
	}
}

// TestCoreMemberChangeCancelRollsBack adds a member that never runs: it
// stays a learner (not promoted), and cancelling the change removes it and
// reports ErrNotCaughtUp; a change queued behind it runs afterwards.
func TestCoreMemberChangeCancelRollsBack(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	c := g.cores[lead]
	var first, second []error
	mc := c.StartMemberChange([]Peer{{ID: 9}}, nil, func(err error) { first = append(first, err) })
	c.StartMemberChange(nil, []uint64{lead}, func(err error) { second = append(second, err) })
	for r := 0; r < 40; r++ {
		g.round(t)
	}
	require.Equal(t, []uint64{9}, c.appliedConf().GetLearners(), "added as a learner, never promoted")
	require.Empty(t, first)
	require.Empty(t, second, "the second change waits for the first")
	cause := errors.New("caller gave up")
	c.CancelMemberChange(mc, cause)
	for r := 0; r < 40 && len(second) == 0; r++ {
		g.round(t)
	}
	require.Len(t, first, 1)
	require.ErrorIs(t, first[0], ErrNotCaughtUp)
	require.ErrorIs(t, first[0], cause)
	require.Len(t, second, 1)
	require.NoError(t, second[0])
	require.False(t, isMember(c.appliedConf(), 9))
	require.False(t, isMember(c.appliedConf(), lead))
}

// TestCoreRollbackDeadlineNamesOnlyMembersLeft gives up on a change whose
// two learners never catch up, lets the rollback remove the first and then
// takes the followers down, so that the second's removal cannot commit: at
// the rollback's deadline the error must name only the second as possibly
// still in the group. Before, it named every member the change added,
// including the one already removed.
func TestCoreRollbackDeadlineNamesOnlyMembersLeft(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	c := g.cores[lead]
	var outcome []error
	mc := c.StartMemberChange([]Peer{{ID: 8}, {ID: 9}}, nil, func(err error) { outcome = append(outcome, err) })
	for r := 0; r < 40; r++ {
		g.round(t)
	}
	require.Equal(t, []uint64{8, 9}, slices.Sorted(slices.Values(c.appliedConf().GetLearners())), "added as learners, never promoted")
	require.Empty(t, outcome)

	cause := errors.New("caller gave up")
	c.CancelMemberChange(mc, cause)
	g.stepUntil(t, c, func() bool { return !isMember(c.appliedConf(), 8) })
	require.False(t, isMember(c.appliedConf(), 8), "the rollback removed 8")
	require.True(t, isMember(c.appliedConf(), 9))
	for _, id := range others(lead) {
		g.down[id] = true
	}
	g.queue = nil // 9's removal, if sent, never arrives
	for r := 0; r < 6*DefaultElectionTicks && len(outcome) == 0; r++ {
		g.round(t)
	}
	require.Len(t, outcome, 1, "the rollback's deadline passed")
	require.ErrorIs(t, outcome[0], ErrNotCaughtUp)
	require.ErrorIs(t, outcome[0], cause)
	require.Contains(t, outcome[0].Error(), "members [9] may still be in the group")
	require.True(t, isMember(c.appliedConf(), 9), "9's removal could not commit")
}

// TestCoreMemberChangeCancelWhileAddingRollsBack gives up on a change while
// it adds learners, with the step of the learner it adds last proposed but
// unable to commit (the followers are down): every learner it added, and the
// one whose step commits only after the cancel, must go again. Before, a
// change given up while adding left them all in the group as learners.
func TestCoreMemberChangeCancelWhileAddingRollsBack(t *testing.T) {
	tests := []struct {
		name string
		add  []Peer
		// downAfter: the followers go down once this member is a learner
		// here (0: at once, the first step pending).
		downAfter uint64
	}{
		{name: "first added, second pending", add: []Peer{{ID: 8}, {ID: 9}}, downAfter: 8},
		{name: "first pending", add: []Peer{{ID: 8}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newCoreGroup(t, 3)
			lead := g.waitLeader(t)
			c := g.cores[lead]
			var outcome []error
			mc := c.StartMemberChange(tt.add, nil, func(err error) { outcome = append(outcome, err) })
			added := func() bool { return tt.downAfter == 0 || isMember(c.appliedConf(), tt.downAfter) }
			// Deliver and handle until downAfter is a learner here, then
			// take the followers down before the next step can commit.
			g.stepUntil(t, c, added)
			require.True(t, added())
			followers := others(lead)
			for _, id := range followers {
				g.down[id] = true
			}
			for r := 0; r < 3; r++ {
				g.round(t)
			}
			last := tt.add[len(tt.add)-1].ID
			require.False(t, isMember(c.appliedConf(), last), "the followers are down: %d's step cannot commit", last)
			require.Empty(t, outcome)

			cause := errors.New("caller gave up")
			c.CancelMemberChange(mc, cause)
			g.queue = nil // what the leader sent the members that are down
			for _, id := range followers {
				g.down[id] = false
			}
			rounds := 0
			for ; rounds < 200 && len(outcome) == 0; rounds++ {
				g.round(t)
			}
			for r := 0; r < 20; r++ { // anything still pending commits now
				g.round(t)
			}
			require.Len(t, outcome, 1)
			require.ErrorIs(t, outcome[0], cause)
			// Done once its removals applied, not at the rollback's
			// deadline (three election timeouts) with members named as
			// possibly still in the group.
			require.NotContains(t, outcome[0].Error(), "may still be in the group")
			require.Less(t, rounds, 2*DefaultElectionTicks, "rounds until the outcome (the deadline is %d)", 3*DefaultElectionTicks)
			cs := c.appliedConf()
			for _, p := range tt.add {
				require.False(t, isMember(cs, p.ID), "member %d it added removed again: voters %v learners %v",
					p.ID, cs.GetVoters(), cs.GetLearners())
			}
			require.Equal(t, []uint64{1, 2, 3}, sortedVoters(cs))
			require.Empty(t, g.bad)
		})
	}
}

// TestCoreCancelQueuedChangesBackToBack cancels two queued changes with
// nothing to add, one right after the other, before the Core handled
// anything: the second is first in the queue once the first ended, but was
// never driven. Before, its cancel read its first member to add, of none,
// and panicked (index out of range) on the raft loop. (The first change's
// removal, proposed before its cancel, may still apply, as documented.)
func TestCoreCancelQueuedChangesBackToBack(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	c := g.cores[lead]
	var first, second []error
	mc1 := c.StartMemberChange(nil, []uint64{lead}, func(err error) { first = append(first, err) })
	mc2 := c.StartMemberChange(nil, []uint64{lead}, func(err error) { second = append(second, err) })
	cause := errors.New("callers gave up")
	c.CancelMemberChange(mc1, cause)
	c.CancelMemberChange(mc2, cause)
	for r := 0; r < 20; r++ {
		g.round(t)
	}
	requireGaveUp(t, cause, first, second)
}

// TestCoreCancelNextChangeFromDoneCallback cancels the next queued change
// (nothing to add) from the outcome callback of the one cancelled before
// it: the second is first in the queue but was never driven when its
// cancel runs. Before, the cancel read its first member to add, of none,
// and panicked (index out of range) on the raft loop. (From a review.)
func TestCoreCancelNextChangeFromDoneCallback(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	c := g.cores[lead]
	var first, second []error
	var mc2 *MemberChange
	cause := errors.New("callers gave up")
	mc1 := c.StartMemberChange(nil, []uint64{lead}, func(err error) {
		first = append(first, err)
		c.CancelMemberChange(mc2, cause)
	})
	mc2 = c.StartMemberChange(nil, []uint64{lead}, func(err error) { second = append(second, err) })
	c.CancelMemberChange(mc1, cause)
	for r := 0; r < 20; r++ {
		g.round(t)
	}
	requireGaveUp(t, cause, first, second)
}

// waitLeader runs rounds until a leader is elected and returns it.
func (g *coreGroup) waitLeader(t *testing.T) uint64 {
	t.Helper()
	for r := 0; r < 100; r++ {
		g.round(t)
		for _, id := range []uint64{1, 2, 3} {
			if c := g.cores[id]; c != nil && c.IsLeader() {
				return id
			}
		}
	}
	t.Fatal("no leader")
	return 0
}

// TestCoreAddMemberIsLearnerFirst adds a member that never runs: it must
// stay a learner, so the voters (and the quorum) do not change. The
// skip-learner mutation must break this.
func TestCoreAddMemberIsLearnerFirst(t *testing.T) {
	tests := []struct {
		name   string
		mutate bool
		voters []uint64
	}{
		{name: "correct", voters: []uint64{1, 2, 3}},
		{name: "skip-learner", mutate: true, voters: []uint64{1, 2, 3, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.SkipLearner, tt.mutate))
			g := newCoreGroup(t, 3)
			c := g.cores[g.waitLeader(t)]
			c.StartMemberChange([]Peer{{ID: 9}}, nil, func(error) {})
			for r := 0; r < 40; r++ {
				g.round(t)
			}
			require.Equal(t, tt.voters, slices.Sorted(slices.Values(c.appliedConf().GetVoters())))
		})
	}
}

// TestCoreMemberChangePlannedAgainstStaleMembership reproduces seed
// 170378359 of the simulator: member p misses the leader's removal of member
// a (committed, not applied on p), then plans a change against its applied
// voters [1 2 3] that keeps a and p. Its step, removing the leader, would
// land on [lead p] and leave p alone. It must fail with
// ErrMembershipChanged instead, and the voters stay [lead p] everywhere.
func TestCoreMemberChangePlannedAgainstStaleMembership(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	followers := others(lead)
	a, p := followers[0], followers[1]
	// p stops hearing from the group (it still counts as running on the
	// leader for an election timeout), and the leader removes a.
	g.down[p] = true
	var first []error
	g.cores[lead].ChangeMembers(g.cores[lead].appliedConf(), []Peer{{ID: lead}, {ID: p}}, func(err error) { first = append(first, err) })
	for r := 0; r < 8 && len(first) == 0; r++ {
		g.round(t)
	}
	require.Equal(t, []error{nil}, first, "the leader removed member %d", a)
	require.Equal(t, sortedIDs(lead, p), sortedVoters(g.cores[lead].appliedConf()))
	require.Equal(t, []uint64{1, 2, 3}, sortedVoters(g.cores[p].appliedConf()), "member %d has not applied the removal", p)

	// p plans against [1 2 3]: keep a and p, that is remove the leader.
	var second []error
	g.cores[p].ChangeMembers(g.cores[p].appliedConf(), []Peer{{ID: a}, {ID: p}}, func(err error) { second = append(second, err) })
	g.down[p] = false
	for r := 0; r < 60 && len(second) == 0; r++ {
		g.round(t)
	}
	for r := 0; r < 20; r++ { // anything still in flight is applied
		g.round(t)
	}
	for _, id := range []uint64{lead, p} {
		require.Equal(t, sortedIDs(lead, p), sortedVoters(g.cores[id].appliedConf()), "member %d's voters", id)
	}
	require.Len(t, second, 1, "outcome reported once")
	require.ErrorIs(t, second[0], ErrMembershipChanged)
	require.Empty(t, g.bad)
}

// TestCoreMemberChangeQueuedBehindAnother plans a change while another runs:
// it waits behind it, and when it starts the membership is no longer the
// one it was planned against, so it fails with ErrMembershipChanged
// instead of removing a second member from what the first left.
func TestCoreMemberChangeQueuedBehindAnother(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	o := others(lead)
	c := g.cores[lead]
	var first, second []error
	c.StartMemberChange(nil, []uint64{o[0]}, func(err error) { first = append(first, err) })
	c.ChangeMembers(c.appliedConf(), []Peer{{ID: lead}, {ID: o[0]}}, func(err error) { second = append(second, err) })
	for r := 0; r < 40 && len(second) == 0; r++ {
		g.round(t)
	}
	require.Equal(t, []error{nil}, first)
	require.Equal(t, sortedIDs(lead, o[1]), sortedVoters(c.appliedConf()))
	require.Len(t, second, 1)
	require.ErrorIs(t, second[0], ErrMembershipChanged)
}

// sortedIDs returns ids sorted, in a new slice.
func sortedIDs(ids ...uint64) []uint64 { return slices.Sorted(slices.Values(ids)) }

// sortedVoters returns cs's voters sorted, in a new slice.
func sortedVoters(cs *pb.ConfState) []uint64 { return sortedIDs(cs.GetVoters()...) }

// others returns the members of 1, 2, 3 other than id.
func others(id uint64) []uint64 {
	return slices.DeleteFunc([]uint64{1, 2, 3}, func(v uint64) bool { return v == id })
}

// TestCoreMemberChangeMovedWhileWaitingForPromotion: the leader adds member
// 4, which becomes a learner but does not run yet; meanwhile a removal of a
// follower without a base (an older build's, or a rollback's) commits. The
// change fails with ErrMembershipChanged, and it must first remove learner
// 4: otherwise, once 4 starts and catches up, the leader promotes it
// although the caller was told the change failed.
func TestCoreMemberChangeMovedWhileWaitingForPromotion(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	o := others(lead)
	c := g.cores[lead]
	var got []error
	c.ChangeMembers(c.appliedConf(), []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}, func(err error) { got = append(got, err) })
	for r := 0; r < 20; r++ {
		g.round(t)
	}
	require.Equal(t, []uint64{4}, c.appliedConf().GetLearners(), "added as a learner, not running: not promoted")
	require.Empty(t, got)

	require.NoError(t, c.rn.ProposeConfChange(confChange(pb.ConfChangeRemoveNode, o[0], "")))
	for r := 0; r < 60 && len(got) == 0; r++ {
		g.round(t)
	}
	require.Len(t, got, 1, "outcome reported once")
	require.ErrorIs(t, got[0], ErrMembershipChanged)

	// Member 4 starts now and would catch up within a few rounds.
	g.addCore(t, Config{ID: 4, Join: true})
	for r := 0; r < 60; r++ {
		g.round(t)
	}
	for _, id := range []uint64{lead, o[1]} {
		cs := g.cores[id].appliedConf()
		require.Equal(t, sortedIDs(lead, o[1]), sortedVoters(cs), "member %d's voters", id)
		require.False(t, isMember(cs, 4), "member %d still has member 4 (voters %v learners %v)", id, cs.GetVoters(), cs.GetLearners())
	}
	require.Len(t, got, 1, "outcome reported once")
	require.Empty(t, g.bad)
}

// TestCoreMemberChangeMovedKeepsPromotedVoters: a change adds 4 and 5;
// 4 runs, catches up and is promoted, 5 never starts and stays a learner.
// Another change then removes a follower, so the first fails with
// ErrMembershipChanged. Its rollback removes learner 5 only: removing voter
// 4 (a removal carries no base) would leave fewer voters than either
// change asked for. The error names 4 as kept.
func TestCoreMemberChangeMovedKeepsPromotedVoters(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	o := others(lead)
	c := g.cores[lead]
	var got []error
	c.ChangeMembers(c.appliedConf(), []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}, func(err error) { got = append(got, err) })
	for r := 0; r < 60 && !slices.Contains(c.appliedConf().GetLearners(), 4); r++ {
		g.round(t)
	}
	require.Contains(t, c.appliedConf().GetLearners(), uint64(4), "4 added as a learner")
	g.addCore(t, Config{ID: 4, Join: true})
	for r := 0; r < 120 && !slices.Contains(c.appliedConf().GetVoters(), 4); r++ {
		g.round(t)
	}
	require.Contains(t, c.appliedConf().GetVoters(), uint64(4), "4 caught up and promoted")
	require.Contains(t, c.appliedConf().GetLearners(), uint64(5), "5 still a learner")
	require.Empty(t, got)

	require.NoError(t, c.rn.ProposeConfChange(confChange(pb.ConfChangeRemoveNode, o[0], "")))
	for r := 0; r < 120 && len(got) == 0; r++ {
		g.round(t)
	}
	require.Len(t, got, 1, "outcome reported once")
	require.ErrorIs(t, got[0], ErrMembershipChanged)
	require.ErrorContains(t, got[0], "[4]", "the promoted member is named")
	for r := 0; r < 20; r++ {
		g.round(t)
	}
	for _, id := range []uint64{lead, o[1], 4} {
		cs := g.cores[id].appliedConf()
		require.Equal(t, sortedIDs(lead, o[1], 4), sortedVoters(cs), "member %d's voters", id)
		require.False(t, isMember(cs, 5), "member %d still has learner 5", id)
	}
	require.Empty(t, g.bad)
}

// TestCoreChangeMembersBaseMoved: the caller computes a target from the
// voters [1 2 3] (remove follower x), and before the Core runs the change
// another conf change (removal of the other follower y) is applied. Planned
// against [lead x], the target [lead y] would add y back as a learner and
// remove x, undoing the other change. The change must fail at once with
// ErrMembershipChanged and change nothing.
func TestCoreChangeMembersBaseMoved(t *testing.T) {
	g := newCoreGroup(t, 3)
	lead := g.waitLeader(t)
	o := others(lead)
	x, y := o[0], o[1]
	c := g.cores[lead]
	base := c.appliedConf()
	target := []Peer{{ID: lead}, {ID: y}}

	var first []error
	c.StartMemberChange(nil, []uint64{y}, func(err error) { first = append(first, err) })
	for r := 0; r < 20 && len(first) == 0; r++ {
		g.round(t)
	}
	require.Equal(t, []error{nil}, first)
	moved := sortedIDs(lead, x)
	require.Equal(t, moved, sortedVoters(c.appliedConf()))

	var got []error
	c.ChangeMembers(base, target, func(err error) { got = append(got, err) })
	require.Len(t, got, 1, "refused at once")
	require.ErrorIs(t, got[0], ErrMembershipChanged)
	for r := 0; r < 40; r++ {
		g.round(t)
	}
	require.Len(t, got, 1, "outcome reported once")
	cs := c.appliedConf()
	require.Equal(t, moved, sortedVoters(cs))
	require.Empty(t, cs.GetLearners())
	require.Empty(t, g.bad)
}

// TestMemberChangeFollowPromotion: a promotion of a learner the change adds
// moves its base; the step in flight carries the old base and applies as
// no change, so it is proposed again at once (no wait), and another move
// is ErrMembershipChanged.
func TestMemberChangeFollowPromotion(t *testing.T) {
	base := &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	inFlight := confChange(pb.ConfChangeAddLearnerNode, 5, "")
	inFlight.Context = stepContext(base, nil)
	mc := &MemberChange{add: []Peer{{ID: 4}, {ID: 5}}, base: base, step: inFlight, proposed: true, wait: 7}

	promoted := &pb.ConfState{Voters: []uint64{1, 2, 3, 4}}
	require.NoError(t, mc.follow(promoted))
	require.Same(t, promoted, mc.base)
	require.Zero(t, mc.wait, "the step is proposed again at once")
	require.Nil(t, mc.step, "the step in flight cannot apply on the new base")

	require.ErrorIs(t, mc.follow(&pb.ConfState{Voters: []uint64{1, 2, 4}}), ErrMembershipChanged)
}

// TestCoreLateAddStepAfterRollbackIsVoid is the known gap of
// CancelMemberChange, closed: a change given up while its add step was in
// flight rolls the learner back, bringing the conf state back to the very
// voters and learners the step was planned against; a copy of that step
// that commits after the rollback (a proposal re-sent on an election
// timeout and delivered late, here replayed by hand as a follower's
// forwarded proposal) must apply as no change on every member, also on one
// restarted from a snapshot taken after the rollback (the conf index
// travels in the snapshot's metadata). Before, its base matched the conf
// state again by content and the member was added anew, unreported.
func TestCoreLateAddStepAfterRollbackIsVoid(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("follower restarted from a snapshot: %v", restart), func(t *testing.T) {
			g := newCoreGroup(t, 3)
			lead := g.waitLeader(t)
			c := g.cores[lead]
			var outcome []error
			followers := others(lead)
			for _, id := range followers {
				g.down[id] = true // the add step cannot commit yet
			}
			mc := c.StartMemberChange([]Peer{{ID: 8}}, nil, func(err error) { outcome = append(outcome, err) })
			for r := 0; r < 3 && mc.step == nil; r++ {
				g.round(t)
			}
			require.NotNil(t, mc.step, "the add step was proposed")
			copyOf, err := proto.Marshal(mc.step)
			require.NoError(t, err)

			cause := errors.New("caller gave up")
			g.cancelWithFollowersBack(t, c, mc, cause, followers)
			require.Len(t, outcome, 1)
			require.ErrorIs(t, outcome[0], cause)
			require.NotContains(t, outcome[0].Error(), "may still be in the group")
			require.False(t, isMember(c.appliedConf(), 8), "rolled back")
			want, known := confIndexOf(c.appliedConf())
			require.True(t, known, "the leader knows its conf index")

			if restart {
				f := followers[0]
				for r := 0; r < 5; r++ {
					g.round(t)
				}
				fc := g.cores[f]
				require.NoError(t, fc.RequestSnapshot())
				job := fc.SnapshotJob()
				require.NotNil(t, job)
				require.NoError(t, job.Run())
				require.NoError(t, fc.SnapshotDone(nil))
				require.NoError(t, fc.Close(false))
				cfg := Config{ID: f, Peers: []Peer{{ID: 1}, {ID: 2}, {ID: 3}}, Transport: groupTransport{g, f}, Logger: zerolog.Nop()}
				g.sms[f] = &durableSM{g: g, id: f}
				rc, err := NewCore(cfg, g.sms[f], CoreOptions{Storage: g.stores[f], Now: func() time.Time { return g.now }})
				require.NoError(t, err)
				g.cores[f] = rc
				require.Equal(t, job.Index(), rc.AppliedIndex(), "restored from the snapshot")
				got, ok := confIndexOf(rc.ConfState())
				require.True(t, ok, "the restarted member knows its conf index")
				require.Equal(t, want, got)
			}

			// The late copy, forwarded by a follower to the leader.
			g.forwardLateCopy(t, c, followers[0], copyOf)
			before := c.AppliedIndex()
			for r := 0; r < 20; r++ {
				g.round(t)
			}
			require.Greater(t, c.AppliedIndex(), before, "the late copy was committed and applied")
			for id, core := range g.cores {
				require.Equal(t, c.AppliedIndex(), core.AppliedIndex(), "member %d caught up", id)
				cs := core.appliedConf()
				require.False(t, isMember(cs, 8), "member %d applied the late add step: voters %v learners %v",
					id, cs.GetVoters(), cs.GetLearners())
			}
			require.Empty(t, g.bad)
		})
	}
}

// stepUntil ticks c (one tick a round, up to 40) and delivers and handles
// messages and Readys one at a time on members 1-3, stopping as soon as
// cond holds, so that a test can act between two steps of a change.
func (g *coreGroup) stepUntil(t *testing.T, c *Core, cond func() bool) {
	t.Helper()
	for r := 0; r < 40 && !cond(); r++ {
		g.now = g.now.Add(DefaultTickInterval)
		c.Tick()
		for (len(g.queue) > 0 || g.anyReady()) && !cond() {
			q := g.queue
			g.queue = nil
			for _, m := range q {
				if to := g.cores[m.GetTo()]; to != nil && !g.down[m.GetTo()] {
					_ = to.Step(m)
				}
			}
			for _, id := range []uint64{1, 2, 3} {
				for g.cores[id].HasReady() && !cond() {
					require.NoError(t, g.cores[id].HandleReady())
				}
			}
		}
	}
}

// cancelWithFollowersBack gives mc up on c with cause, drops what was sent
// to the followers while they were down, brings them back and runs rounds
// until mc reported (bounded).
func (g *coreGroup) cancelWithFollowersBack(t *testing.T, c *Core, mc *MemberChange, cause error, followers []uint64) {
	t.Helper()
	c.CancelMemberChange(mc, cause)
	g.queue = nil
	for _, id := range followers {
		g.down[id] = false
	}
	for r := 0; r < 200 && !mc.Finished(); r++ {
		g.round(t)
	}
}

// forwardLateCopy steps into the leader c the conf change data (a marshalled
// ConfChangeV2) as a proposal forwarded by member from: a late copy of a
// step.
func (g *coreGroup) forwardLateCopy(t *testing.T, c *Core, from uint64, data []byte) {
	t.Helper()
	require.NoError(t, c.Step(&pb.Message{Type: pb.MsgProp.Enum(), From: new(from), To: new(c.cfg.ID),
		Entries: []*pb.Entry{{Type: pb.EntryConfChangeV2.Enum(), Data: data}}}))
}

// requireGaveUp requires that each change whose outcomes are given
// reported once, with cause.
func requireGaveUp(t *testing.T, cause error, outcomes ...[]error) {
	t.Helper()
	for i, out := range outcomes {
		require.Len(t, out, 1, "change %d's outcomes", i+1)
		require.ErrorIs(t, out[0], cause)
	}
}
