package consensus

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cluster runs members in-process, talking TCP over loopback.
type cluster struct {
	t       *testing.T
	peers   []Peer
	dirs    map[uint64]string
	nodes   map[uint64]*testNode
	changed chan struct{} // signalled (non-blocking) on any leader change
	opts    []cfgOpt
}

func newCluster(t *testing.T, size int, opts ...cfgOpt) *cluster {
	c := &cluster{
		t:       t,
		dirs:    make(map[uint64]string),
		nodes:   make(map[uint64]*testNode),
		changed: make(chan struct{}, 1),
		opts:    opts,
	}
	lns := make(map[uint64]net.Listener)
	for id := uint64(1); id <= uint64(size); id++ {
		ln := listenLoopback(t)
		lns[id] = ln
		c.peers = append(c.peers, Peer{ID: id, Addr: ln.Addr().String()})
		c.dirs[id] = t.TempDir()
	}
	for id, ln := range lns {
		c.start(id, ln, false, c.peers)
	}
	return c
}

func listenLoopback(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// start starts member id on ln (a fresh listener on its old address when
// nil).
func (c *cluster) start(id uint64, ln net.Listener, join bool, peers []Peer) *testNode {
	t := c.t
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", c.addr(id))
		require.NoError(t, err)
	}
	tr := NewTCPTransport(TCPConfig{ID: id, Listener: ln, Peers: peers, Logger: testLogger(t)})
	opts := append([]cfgOpt{func(cfg *Config) {
		cfg.ID, cfg.Peers, cfg.Transport, cfg.Join = id, peers, tr, join
		inner := cfg.OnLeaderChange
		cfg.OnLeaderChange = func(isLeader bool, lead, term uint64) {
			inner(isLeader, lead, term)
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
	}}, c.opts...)
	tn := startTestNode(t, c.dirs[id], opts...)
	c.nodes[id] = tn
	return tn
}

func (c *cluster) addr(id uint64) string {
	for _, p := range c.peers {
		if p.ID == id {
			return p.Addr
		}
	}
	c.t.Fatalf("no peer %d", id)
	return ""
}

// waitLeader waits until all running members agree on one leader, which is
// not in exclude, and returns it.
func (c *cluster) waitLeader(exclude ...uint64) uint64 {
	c.t.Helper()
	deadline := time.After(testTimeout)
	for {
		var lead uint64
		agree := true
		for _, n := range c.nodes {
			l := n.Status().Lead
			if l == 0 || (lead != 0 && l != lead) {
				agree = false
				break
			}
			lead = l
		}
		if agree && lead != 0 && !slices.Contains(exclude, lead) && c.nodes[lead] != nil && c.nodes[lead].IsLeader() {
			return lead
		}
		select {
		case <-c.changed:
		case <-time.After(20 * time.Millisecond): // re-check even if a signal was coalesced
		case <-deadline:
			c.t.Fatal("members did not agree on a leader")
		}
	}
}

func (c *cluster) stop(id uint64) {
	require.NoError(c.t, c.nodes[id].Stop())
	delete(c.nodes, id)
}

func (c *cluster) follower(lead uint64) uint64 {
	for id := range c.nodes {
		if id != lead {
			return id
		}
	}
	c.t.Fatal("no follower")
	return 0
}

func (c *cluster) waitAllApplied(n int) {
	c.t.Helper()
	for _, tn := range c.nodes {
		tn.sm.waitCount(c.t, n)
	}
}

func TestClusterReplicatesAndSurvivesLeaderLoss(t *testing.T) {
	c := newCluster(t, 3)
	lead := c.waitLeader()

	// A proposal on a follower is forwarded and applied everywhere.
	f := c.nodes[c.follower(lead)]
	ctx := testCtx(t)
	require.NoError(t, f.Propose(ctx, []byte("from-follower")))
	c.waitAllApplied(1)

	for i := range 20 {
		require.NoError(t, c.nodes[lead].Propose(ctx, fmt.Appendf(nil, "x-%d", i)))
	}
	c.waitAllApplied(21)
	want := c.nodes[lead].sm.state()
	for _, n := range c.nodes {
		require.Equal(t, want, n.sm.state())
		require.Empty(t, n.sm.violations())
		require.Equal(t, []uint64{1, 2, 3}, n.Status().Voters)
	}

	// Linearizable read on a follower.
	idx, err := f.ReadIndex(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, idx, want.indexes[len(want.indexes)-1])

	// Stop the leader: the other two elect a new one and keep committing.
	c.stop(lead)
	newLead := c.waitLeader(lead)
	require.NotEqual(t, lead, newLead)
	require.NoError(t, c.nodes[c.follower(newLead)].Propose(ctx, []byte("after-failover")))
	c.waitAllApplied(22)

	// The old leader restarts, replays its log and catches up.
	old := c.start(lead, nil, false, c.peers)
	old.sm.waitCount(t, 22)
	final := c.nodes[newLead].sm.state()
	require.Equal(t, final, old.sm.state())
}

func TestClusterAddMemberViaSnapshotAndRemove(t *testing.T) {
	small := func(cfg *Config) { cfg.SnapshotEvery, cfg.KeepEntries = 10, 5 }
	c := newCluster(t, 1, small)
	require.Equal(t, uint64(1), c.waitLeader())
	n1 := c.nodes[1]
	n1.proposeEach(t, "pre", 40)
	n1.settle(t)
	n1.waitSnapshot(t)

	// Member 2 joins; the leader's log is compacted, so it gets a snapshot.
	ln := listenLoopback(t)
	p2 := Peer{ID: 2, Addr: ln.Addr().String()}
	c.peers = append(c.peers, p2)
	c.dirs[2] = t.TempDir()
	ctx := testCtx(t)
	n2 := c.start(2, ln, true, []Peer{c.peers[0]})
	require.NoError(t, n1.AddMember(ctx, p2))
	require.NoError(t, n1.Propose(ctx, []byte("post")))
	n2.sm.waitCount(t, 41)
	n1.sm.waitCount(t, 41)
	require.Equal(t, n1.sm.state(), n2.sm.state())
	require.Equal(t, 1, n2.sm.restores, "joined through a snapshot")
	require.Equal(t, []uint64{1, 2}, n2.Status().Voters)

	require.False(t, n2.Removed())
	require.NoError(t, n1.RemoveMember(ctx, 2))
	require.Equal(t, []uint64{1}, n1.Status().Voters)
	require.Eventually(t, n2.Removed, testTimeout, 10*time.Millisecond, "member 2 applies its own removal")
	require.False(t, n1.Removed())
	require.NoError(t, n1.Propose(ctx, []byte("alone-again")))
	n1.sm.waitCount(t, 42)
}
