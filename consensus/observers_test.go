package consensus

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

func TestContextRoundTrip(t *testing.T) {
	for _, p := range []Peer{{ID: 1, Addr: "127.0.0.1:2881"}, {ID: 2, Addr: "h:1", Observer: true}, {ID: 3}} {
		addr, obs := parseContext(peerContext(p))
		require.Equal(t, p.Addr, addr)
		require.Equal(t, p.Observer, obs)
	}
}

// TestCoreObservers runs goroutine-free Cores with observers: bootstrapped
// ones start as learners, added ones are learners once the change is done,
// none is ever promoted (however long they are caught up), none counts for
// quorum, and they receive every entry.
func TestCoreObservers(t *testing.T) {
	voters := []uint64{1, 2, 3}
	tests := []struct {
		name      string
		bootstrap bool // member 4 is in the initial config as an observer
		change    bool // member 4 joins and ChangeMembers adds it as an observer
		isObs     bool // Config.IsObserver says 4 is an observer (restored from a snapshot)
		wantLearn bool // 4 stays a learner
	}{
		{name: "bootstrapped observer", bootstrap: true, wantLearn: true},
		{name: "observer added by ChangeMembers", change: true, wantLearn: true},
		{name: "participant added by ChangeMembers is promoted", change: false, wantLearn: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
			if tt.bootstrap {
				peers = append(peers, Peer{ID: 4, Observer: true})
			}
			g := newCoreGroupPeers(t, peers)
			lead := g.waitLeader(t)
			c := g.cores[lead]
			if !tt.bootstrap {
				g.addCore(t, Config{ID: 4, Join: true})
				calls := 0
				target := []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Observer: tt.change}}
				c.ChangeMembers(c.appliedConf(), target, func(err error) {
					calls++
					require.NoError(t, err)
				})
				for r := 0; r < 100 && calls == 0; r++ {
					g.round(t)
				}
				require.Equal(t, 1, calls, "outcome reported once")
			}
			for r := 0; r < 60; r++ { // six election timeouts: time enough to promote
				g.round(t)
			}
			for id, core := range g.cores {
				cs := core.appliedConf()
				if tt.wantLearn {
					require.Equal(t, voters, slices.Sorted(slices.Values(cs.GetVoters())), "voters on %d", id)
					require.Equal(t, []uint64{4}, cs.GetLearners(), "learners on %d", id)
				} else {
					require.Equal(t, []uint64{1, 2, 3, 4}, slices.Sorted(slices.Values(cs.GetVoters())), "voters on %d", id)
				}
			}
			require.False(t, g.cores[4].IsLeader())
			if !tt.wantLearn {
				return
			}
			// The leader refuses to promote the observer when asked.
			require.ErrorIs(t, c.checkConfChange(c.appliedConf(), confChange(pb.ConfChangeAddNode, 4, ""), true), errRoleChange)

			// Writes reach the observer; with it down, and with it and a
			// voter down, the voters still commit.
			commit := func(tag string) {
				t.Helper()
				lead := g.waitLeader(t)
				before := len(g.sms[lead].datas)
				require.NoError(t, g.cores[lead].Propose([]byte(tag)))
				for r := 0; r < 30 && len(g.sms[lead].datas) == before; r++ {
					g.round(t)
				}
				require.Equal(t, before+1, len(g.sms[lead].datas), "%s committed", tag)
			}
			commit("all up")
			g.round(t)
			require.Contains(t, g.sms[4].datas, "all up")
			g.down[4] = true
			commit("observer down")
			for _, id := range voters {
				if id != g.waitLeader(t) {
					g.down[id] = true
					break
				}
			}
			commit("observer and a voter down")
			require.Empty(t, g.bad)
		})
	}
}

// TestCoreIsObserverFallback: a learner whose conf change this member did
// not apply is judged by Config.IsObserver; what the log says wins.
func TestCoreIsObserverFallback(t *testing.T) {
	tests := []struct {
		logSays  *bool
		callback bool
		want     bool
	}{
		{logSays: nil, callback: true, want: true},
		{logSays: nil, callback: false, want: false},
		{logSays: new(false), callback: true, want: false},
		{logSays: new(true), callback: false, want: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.logSays != nil, tt.callback), func(t *testing.T) {
			c := &Core{cfg: Config{IsObserver: func(uint64) bool { return tt.callback }}}
			if tt.logSays != nil {
				c.noteObserver(pb.ConfChangeAddLearnerNode, 4, *tt.logSays)
			}
			require.Equal(t, tt.want, c.isObserver(4))
		})
	}
}

// TestClusterObserver runs 3 voters and an observer (member 4) as Nodes
// over TCP: the observer applies every entry, is still a learner after many
// election timeouts, never leads, and with it and one voter stopped the two
// voters left commit.
func TestClusterObserver(t *testing.T) {
	c := newCluster(t, 4, func(cfg *Config) {
		peers := slices.Clone(cfg.Peers)
		for i := range peers {
			peers[i].Observer = peers[i].ID == 4
		}
		cfg.Peers = peers
	})
	lead := c.waitLeader()
	require.NotEqual(t, uint64(4), lead)
	c.nodes[lead].proposeSeq(t, "a", 5)
	c.waitAllApplied(5)
	time.Sleep(20 * DefaultElectionTicks * 10 * time.Millisecond) // 20 election timeouts of 10 ms ticks
	for id, n := range c.nodes {
		st := n.Status()
		require.Equal(t, []uint64{1, 2, 3}, st.Voters, "voters on %d", id)
		require.Equal(t, []uint64{4}, st.Learners, "learners on %d", id)
		require.Equal(t, id == lead, st.IsLeader)
	}
	c.stop(4)
	for id := range c.nodes {
		if id != lead {
			c.stop(id)
			break
		}
	}
	c.nodes[lead].proposeSeq(t, "b", 3)
	c.waitAllApplied(8)
}

// TestRestartKeepsBootstrappedObserver: a group bootstrapped with an
// observer restarts every member on its storage, without Config.IsObserver;
// the observer must stay a learner (its peer list says so).
func TestRestartKeepsBootstrappedObserver(t *testing.T) {
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Observer: true}}
	g := newCoreGroupPeers(t, peers)
	g.waitLeader(t)
	for r := 0; r < 20; r++ {
		g.round(t)
	}
	for _, p := range peers {
		cfg := Config{ID: p.ID, Peers: peers, Transport: groupTransport{g, p.ID}, Logger: zerolog.Nop()}
		c, err := NewCore(cfg, g.sms[p.ID], CoreOptions{Storage: g.stores[p.ID], Now: func() time.Time { return g.now }})
		require.NoError(t, err)
		g.cores[p.ID] = c
	}
	g.queue = nil
	g.waitLeader(t)
	for r := 0; r < 60; r++ {
		g.round(t)
	}
	for id, c := range g.cores {
		require.Equal(t, []uint64{1, 2, 3}, slices.Sorted(slices.Values(c.appliedConf().GetVoters())), "member %d", id)
		require.Equal(t, []uint64{4}, c.appliedConf().GetLearners(), "member %d", id)
	}
}
