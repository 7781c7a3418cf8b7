package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/memnet"
)

// memnetHost is member id's host on the in-memory network.
func memnetHost(id uint64) string { return fmt.Sprintf("m%d", id) }

// startMemnetEnsemble runs n in-process members on mn, member i on host
// "m<i>" (client port 2181, peer port 2888, election port 3888): the
// production server, consensus node and TCP transport, over the in-memory
// network. Cleanup heals every link and stops them all.
func startMemnetEnsemble(t *testing.T, mn *memnet.Network, n int, mutate func(cfg *Config)) []*Server {
	t.Helper()
	servers := newMemnetEnsemble(t, mn, n, mutate)
	require.NoError(t, startMemnetServers(t, mn, servers))
	return servers
}

// newMemnetEnsemble configures startMemnetEnsemble's members.
func newMemnetEnsemble(t *testing.T, mn *memnet.Network, n int, mutate func(cfg *Config)) []*Server {
	t.Helper()
	members := map[uint64]Member{}
	for i := uint64(1); i <= uint64(n); i++ {
		members[i] = Member{ID: i, Host: memnetHost(i), PeerPort: 2888, ElectionPort: 3888, Role: "participant",
			ClientAddr: memnetHost(i) + ":2181"}
	}
	servers := make([]*Server, n)
	for i := range servers {
		id := uint64(i + 1)
		cfg := Default()
		cfg.AdminEnabled = false
		cfg.ClientPortAddress, cfg.ClientPort = memnetHost(id), 2181
		cfg.DataDir = t.TempDir()
		cfg.ServerID = id
		cfg.Members = members
		cfg.ElectionTickMs = 20
		cfg.Network = mn.Host(memnetHost(id))
		if mutate != nil {
			mutate(&cfg)
		}
		servers[i] = New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	}
	return servers
}

// startMemnetServers starts servers together (each waits for a quorum). The
// cleanup that heals every link of mn and stops them all is registered
// with tb before any starts: when one Start fails, those that started are
// stopped too.
func startMemnetServers(tb interface{ Cleanup(func()) }, mn *memnet.Network, servers []*Server) error {
	tb.Cleanup(func() {
		mn.HealAll()
		for _, s := range servers {
			_ = s.Stop()
		}
	})
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.Start() }()
	}
	var err error
	for range servers {
		err = errors.Join(err, <-errs)
	}
	return err
}

// memnetHosts is a zk.HostProvider over fixed addresses (the default one
// resolves names with DNS, which knows no memnet host), cycling as the
// default one does: retryStart once every address was tried since the
// last connection.
type memnetHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

func (h *memnetHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers, h.curr, h.last = servers, -1, -1
	return nil
}

func (h *memnetHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *memnetHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *memnetHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// nopZKLogger drops the go-zookeeper client's log lines.
type nopZKLogger struct{}

func (nopZKLogger) Printf(string, ...any) {}

// memnetClient connects a go-zookeeper client on host to servers over mn.
// It records whether its session ever expired.
func memnetClient(t *testing.T, mn *memnet.Network, host string, timeout time.Duration, servers ...string) (*zk.Conn, func() bool) {
	t.Helper()
	h := mn.Host(host)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return h.DialContext(ctx, network, addr)
	}
	zc, events, err := zk.Connect(servers, timeout, zk.WithDialer(dial), zk.WithHostProvider(&memnetHosts{}),
		zk.WithLogInfo(false), zk.WithLogger(nopZKLogger{}))
	require.NoError(t, err)
	var mu sync.Mutex
	expired := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
				mu.Lock()
				expired = true
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		zc.Close()
		<-done
	})
	return zc, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return expired
	}
}

// memnetSession is a client of TestEnsembleLeaderPartitionOnMemnet.
type memnetSession struct {
	zc      *zk.Conn
	expired func() bool // the client saw its session expire
	session int64
}

// noError fails when err is not nil, saying so first when the client's
// session expired (the client's error comes before its expiry event).
func noError(t *testing.T, c memnetSession, err error, msgAndArgs ...any) {
	t.Helper()
	if err == nil {
		return
	}
	for range 100 {
		if c.expired() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, c.expired(), "session %s expired while its client kept pinging a follower", sessionHex(c.session))
	require.NoError(t, err, msgAndArgs...)
}

// TestEnsembleLeaderPartitionOnMemnet runs a 3-member ensemble on the
// in-memory network and cuts the leader off from both followers (its peer
// and liveness links: both ways, or only what it sends). A follower must be
// elected, a write acknowledged before the partition must still be there,
// and the sessions of clients connected to the followers, whose pings go
// on, must outlive several session timeouts: on the new leader's follower
// they are kept alive only by the liveness channel (server.LivenessReports
// over the server's network). Once healed, the old leader catches up.
func TestEnsembleLeaderPartitionOnMemnet(t *testing.T) {
	tests := []struct {
		name string
		cut  func(mn *memnet.Network, leader, follower string)
	}{
		{"both ways", func(mn *memnet.Network, l, f string) { mn.Partition(l, f) }},
		{"leader to followers only", func(mn *memnet.Network, l, f string) { mn.Cut(l, f) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { leaderPartitionOnMemnet(t, tt.cut) })
	}
}

func leaderPartitionOnMemnet(t *testing.T, cut func(mn *memnet.Network, leader, follower string)) {
	mn := memnet.New()
	// tickTime 100: liveness reports every 50 ms, sessions of 1 s allowed.
	servers := startMemnetEnsemble(t, mn, 3, func(cfg *Config) { cfg.TickTimeMs = 100 })
	old := ensembleLeader(t, servers)
	oldID := uint64(old + 1)
	var followers []int
	for i := range servers {
		if i != old {
			followers = append(followers, i)
		}
	}
	const sessionTimeout = time.Second
	var clients []memnetSession
	for k, f := range followers {
		zc, expired := memnetClient(t, mn, fmt.Sprintf("c%d", k+1), sessionTimeout, memnetHost(uint64(f+1))+":2181")
		_, err := zc.Create(fmt.Sprintf("/before-%d", k), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err, "write before the partition")
		clients = append(clients, memnetSession{zc: zc, expired: expired, session: zc.SessionID()})
	}

	for _, f := range followers {
		cut(mn, memnetHost(oldID), memnetHost(uint64(f+1)))
	}
	newLead := -1
	require.Eventually(t, func() bool {
		for _, f := range followers {
			st := servers[f].node.Status()
			if servers[f].lead.isLeader() && st.Lead == uint64(f+1) && servers[followers[0]].node.Status().Lead == st.Lead &&
				servers[followers[1]].node.Status().Lead == st.Lead {
				newLead = f
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no follower became leader after the leader was cut off")
	t.Logf("leader %d cut off, member %d leads", oldID, newLead+1)

	// The clients keep pinging their followers for several session
	// timeouts; each round checks that the acknowledged writes are there.
	// The wait's end is the first round at least 3 timeouts after the
	// election (the clients' pings every timeout/3 keep the sessions).
	end := time.Now().Add(3 * sessionTimeout)
	for round := 0; time.Now().Before(end); round++ {
		for k, c := range clients {
			_, err := c.zc.Sync("/")
			noError(t, c, err, "client %d: sync (round %d)", k, round)
			for j := range clients {
				ok, _, err := c.zc.Exists(fmt.Sprintf("/before-%d", j))
				noError(t, c, err, "client %d: exists (round %d)", k, round)
				require.True(t, ok, "client %d: /before-%d acknowledged before the partition is gone", k, j)
			}
		}
		time.Sleep(sessionTimeout / 4)
	}
	_, err := clients[0].zc.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "write during the partition")
	for k, c := range clients {
		require.False(t, c.expired(), "client %d's session expired while it kept pinging a follower", k)
		require.Equal(t, c.session, c.zc.SessionID(), "client %d's session", k)
		_, live := servers[newLead].sm.session(c.session)
		require.True(t, live, "client %d's session %s is still in the new leader's state", k, sessionHex(c.session))
	}

	// Healed, the old leader catches up as a follower.
	mn.HealAll()
	want := servers[newLead].sm.lastZxid.Load()
	require.Eventually(t, func() bool {
		return !servers[old].lead.isLeader() && servers[old].sm.lastZxid.Load() >= want
	}, 10*time.Second, 10*time.Millisecond, "the old leader did not catch up after the partition healed")
}

// cleanups collects the functions registered with Cleanup.
type cleanups []func()

func (c *cleanups) Cleanup(f func()) { *c = append(*c, f) }

// TestStartMemnetServersStopsAllWhenOneFails: when a member's Start fails, the
// cleanup startMemnetServers registered stops the members that did start.
func TestStartMemnetServersStopsAllWhenOneFails(t *testing.T) {
	tests := []struct {
		name   string
		failed int // index of the member whose client port is taken
	}{
		{"last member fails", 2},
		{"first member fails", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mn := memnet.New()
			servers := newMemnetEnsemble(t, mn, 3, nil)
			t.Cleanup(func() { // whatever the outcome, nothing outlives the test
				for _, s := range servers {
					_ = s.Stop()
				}
			})
			host := memnetHost(uint64(tt.failed + 1))
			ln, err := mn.Host(host).Listen("tcp", host+":2181")
			require.NoError(t, err)
			defer ln.Close()
			var c cleanups
			require.Error(t, startMemnetServers(&c, mn, servers), "member %d's client port is taken", tt.failed+1)
			for _, f := range c {
				f()
			}
			for i, s := range servers {
				select {
				case <-s.stopC:
				default:
					t.Errorf("member %d still runs after the cleanup of a failed start", i+1)
				}
			}
		})
	}
}
