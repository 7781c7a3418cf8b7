package consensus

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// addJoiner starts a new member with Join (not yet in the group) and returns
// its peer entry.
func (c *cluster) addJoiner(id uint64) Peer {
	c.t.Helper()
	ln := listenLoopback(c.t)
	p := Peer{ID: id, Addr: ln.Addr().String()}
	c.peers = append(c.peers, p)
	c.dirs[id] = c.t.TempDir()
	c.start(id, ln, true, c.peers)
	return p
}

// waitVoters waits until every running member has applied voters.
func (c *cluster) waitVoters(voters ...uint64) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		for _, n := range c.nodes {
			st := n.Status()
			if !slices.Equal(st.Voters, voters) || len(st.Learners) > 0 {
				return false
			}
		}
		return true
	}, testTimeout, 10*time.Millisecond)
}

// Two membership changes in a row must both take effect: the second is
// proposed only once raft has applied the first (before the fix, the caller
// woke before Advance and raft turned the second into an empty entry). On a
// follower the change is forwarded, and re-proposed if the leader had not
// applied the previous one yet.
func TestMembershipTwoChangesInARow(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		onFollower bool
		change     func(ctx context.Context, n *Node, voters []Peer, a, b Peer) error
	}{
		{"AddMember twice on the leader", 1, false, func(ctx context.Context, n *Node, _ []Peer, a, b Peer) error {
			if err := n.AddMember(ctx, a); err != nil {
				return err
			}
			return n.AddMember(ctx, b)
		}},
		{"ChangeMembers adding two on the leader", 1, false, func(ctx context.Context, n *Node, voters []Peer, a, b Peer) error {
			return n.ChangeMembers(ctx, n.core.appliedConf(), append(voters, a, b))
		}},
		{"ChangeMembers adding two on a follower", 3, true, func(ctx context.Context, n *Node, voters []Peer, a, b Peer) error {
			return n.ChangeMembers(ctx, n.core.appliedConf(), append(voters, a, b))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.size)
			lead := c.waitLeader()
			caller := c.nodes[lead]
			if tt.onFollower {
				caller = c.nodes[c.follower(lead)]
			}
			voters := slices.Clone(c.peers)
			a, b := c.addJoiner(uint64(tt.size+1)), c.addJoiner(uint64(tt.size+2))
			require.NoError(t, tt.change(testCtx(t), caller.Node, voters, a, b))
			var want []uint64
			for id := range uint64(tt.size + 2) {
				want = append(want, id+1)
			}
			require.Equal(t, want, caller.Status().Voters)
			c.waitVoters(want...)
			require.NoError(t, caller.Propose(testCtx(t), []byte("all")))
			c.waitAllApplied(1)
		})
	}
}

// A change that leaves no voter is refused before it reaches the log
// (before the fix it was committed and raft panicked applying it).
func TestMembershipRemovingLastVoterRefused(t *testing.T) {
	c := newCluster(t, 1)
	require.Equal(t, uint64(1), c.waitLeader())
	n1 := c.nodes[1]
	ctx := testCtx(t)
	require.ErrorIs(t, n1.RemoveMember(ctx, 1), ErrLastVoter)
	require.ErrorIs(t, n1.ChangeMembers(ctx, n1.core.appliedConf(), nil), ErrLastVoter)
	require.NoError(t, n1.Propose(ctx, []byte("still-here")))
	n1.sm.waitCount(t, 1)
	require.Equal(t, []uint64{1}, n1.Status().Voters)
}

// A removal after which fewer than a majority of the voters run is refused,
// on the leader directly and when a follower forwards it.
func TestMembershipRemovalKeepsRunningMajority(t *testing.T) {
	c := newCluster(t, 3)
	lead := c.waitLeader()
	var fs []uint64
	for id := range c.nodes {
		if id != lead {
			fs = append(fs, id)
		}
	}
	slices.Sort(fs)
	up, down := fs[0], fs[1]
	c.stop(down)
	ln := c.nodes[lead]
	require.Eventually(t, func() bool { return !ln.running(down) }, testTimeout, 10*time.Millisecond)

	// On the leader: refused at once.
	require.ErrorIs(t, ln.RemoveMember(testCtx(t), up), ErrNoActiveQuorum)
	// Forwarded by the follower: the leader drops it, the change never applies.
	ctx, cancel := context.WithTimeout(context.Background(), 20*ln.electionTimeout())
	defer cancel()
	err := c.nodes[up].RemoveMember(ctx, up)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.Equal(t, []uint64{1, 2, 3}, ln.Status().Voters)
	require.Equal(t, []uint64{1, 2, 3}, c.nodes[up].Status().Voters)

	// Removing the stopped member is fine: both remaining voters run.
	require.NoError(t, ln.RemoveMember(testCtx(t), down))
	c.waitVoters(slices.Sorted(slices.Values([]uint64{lead, up}))...)
}

// A new member joins as a learner and becomes a voter only once it caught
// up: one that never starts is never counted for quorum, and is removed
// again when the caller gives up.
func TestMembershipNewMemberIsLearnerUntilCaughtUp(t *testing.T) {
	c := newCluster(t, 1)
	require.Equal(t, uint64(1), c.waitLeader())
	n1 := c.nodes[1]
	gln := listenLoopback(t) // accepts nothing: the new member never answers
	t.Cleanup(func() { _ = gln.Close() })
	ghost := Peer{ID: 9, Addr: gln.Addr().String()}

	ctx, cancel := context.WithTimeout(context.Background(), 20*n1.electionTimeout())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- n1.AddMember(ctx, ghost) }()
	require.Eventually(t, func() bool { return slices.Equal(n1.Status().Learners, []uint64{9}) },
		testTimeout, 5*time.Millisecond)
	// A learner does not count for quorum: the sole voter still commits.
	require.NoError(t, n1.Propose(testCtx(t), []byte("with-learner")))
	n1.sm.waitCount(t, 1)
	require.Equal(t, []uint64{1}, n1.Status().Voters)
	require.ErrorIs(t, <-errc, ErrNotCaughtUp)
	require.Equal(t, []uint64{1}, n1.Status().Voters)
	require.Empty(t, n1.Status().Learners, "the learner that did not catch up is removed")
	// The group never lost its quorum.
	require.NoError(t, n1.Propose(testCtx(t), []byte("quorum-kept")))
	n1.sm.waitCount(t, 2)
}
