package ensemble

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// rejoinBound is how long a member paused for a few seconds may take, once
// resumed, to know the ensemble's leader and serve a client again. Raft
// needs about two election timeouts (2 × 10 ticks of 100 ms); the bound is
// generous for a loaded, shared machine, and far below the minute the
// member stayed cut off before the fix (issue 9).
const rejoinBound = 15 * time.Second

// TestPauseRejoin (issue 9): members of a loaded ensemble are frozen with
// SIGSTOP for a GC-like pause and continued. Each time, every member must
// come back to following the current leader and serve a client within
// rejoinBound; clients write and read through all members throughout.
//
//   - 5 members: the leader or a follower paused for 1 to 5 s, nine times;
//   - 3 members: the same, three times.
func TestPauseRejoin(t *testing.T) {
	cases := []struct {
		members int
		pauses  []pauseStep
	}{
		{5, []pauseStep{
			{leader: true, d: 2200 * time.Millisecond}, {leader: false, d: 2200 * time.Millisecond},
			{leader: true, d: time.Second}, {leader: true, d: 4 * time.Second},
			{leader: false, d: 5 * time.Second}, {leader: true, d: 3 * time.Second},
			{leader: true, d: 2 * time.Second}, {leader: true, d: 2500 * time.Millisecond},
			{leader: true, d: 1500 * time.Millisecond},
		}},
		{3, []pauseStep{
			{leader: true, d: 1500 * time.Millisecond}, {leader: false, d: 3 * time.Second},
			{leader: true, d: 5 * time.Second},
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("members_%d", tc.members), func(t *testing.T) {
			eachTarget(t, func(t *testing.T, target zktest.Target) {
				testPauseRejoin(t, target, tc.members, tc.pauses)
			})
		})
	}
}

// pauseStep is one SIGSTOP/SIGCONT of the leader or of a follower.
type pauseStep struct {
	leader bool
	d      time.Duration
}

func testPauseRejoin(t *testing.T, target zktest.Target, members int, steps []pauseStep) {
	c := startCluster(t, target, members)
	setup := connectAll(t, c, 10*time.Second)
	mustCreate(t, setup, "/load", nil, 0)

	// Load: writers and readers over every member, so that the leader
	// streams appends and followers forward proposals while a member is
	// frozen.
	log := newWriteLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopLoad := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	defer stopLoad()
	// One writer starting on each member: whichever follower is elected
	// next has forwarded proposals to the paused leader (issue 9's trigger).
	for i, m := range c.Members {
		conn := connectOrdered(t, c, m, 10*time.Second)
		wg.Go(func() { loadClient(i, conn, log, stop) })
	}
	for i := 0; i < 2; i++ {
		conn := connectAll(t, c, 10*time.Second)
		wg.Go(func() { readClient(conn, stop) })
	}

	for i, st := range steps {
		leader := c.WaitSettled(t)
		victim := leader
		if !st.leader {
			victim = c.Followers(leader)[0]
		}
		before := log.acks.Load()
		victim.Pause()
		time.Sleep(st.d) // the pause itself, not an assertion
		victim.Resume()
		resumed := time.Now()
		what := fmt.Sprintf("step %d: member %d (leader=%v) paused %v", i, victim.ID, st.leader, st.d)

		waitFor(t, rejoinBound, what+": every member follows one leader", func() error {
			return settled(c)
		})
		waitFor(t, rejoinBound, what+": the resumed member serves a client", func() error {
			return serves(t, victim)
		})
		t.Logf("%s: rejoined and serving %v after resume", what, time.Since(resumed).Round(100*time.Millisecond))
		waitFor(t, rejoinBound, what+": writes go on", func() error {
			if n := log.acks.Load(); n < before+20 {
				return fmt.Errorf("%d writes acknowledged since the pause", n-before)
			}
			return nil
		})
	}
	stopLoad()
	// Per-peer transport counters (issue 9): every other member is listed
	// in the leader's mntr, with messages sent to it.
	leader := c.WaitSettled(t)
	out, err := leader.FourLetter("mntr")
	if err != nil {
		t.Fatalf("mntr on leader %d: %v", leader.ID, err)
	}
	for _, m := range c.Followers(leader) {
		key := fmt.Sprintf("zk_raft_peer_%d_messages_sent\t", m.ID)
		i := strings.Index(out, key)
		if i < 0 || strings.HasPrefix(out[i+len(key):], "0\n") {
			t.Errorf("leader %d mntr: no messages sent to member %d:\n%s", leader.ID, m.ID, out)
		}
	}
	tree := requireConverged(t, c)
	if bad := log.verify(tree); len(bad) > 0 {
		t.Fatalf("acknowledged writes lost or changed: %v", bad)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.problems) > 0 {
		t.Fatalf("clients saw replies contradicting their history: %v", log.problems)
	}
}

// settled is nil once every running member answers srvr, exactly one as
// leader and the others as followers.
func settled(c *zktest.Cluster) error {
	leaders, followers := 0, 0
	for _, m := range c.Members {
		switch m.Mode() {
		case "leader":
			leaders++
		case "follower":
			followers++
		}
	}
	if leaders != 1 || leaders+followers != len(c.Members) {
		return fmt.Errorf("modes %s", c.Modes())
	}
	return nil
}

// serves opens a session on m alone, syncs it with the leader and writes
// through it.
func serves(t *testing.T, m *zktest.Member) error {
	conn, _, err := zk.Connect([]string{m.Addr}, 5*time.Second, quiet, zk.WithMaxConnBufferSize(1<<20))
	if err != nil {
		return fmt.Errorf("connect to member %d: %w", m.ID, err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() {
		if _, err := conn.Sync("/"); err != nil {
			done <- fmt.Errorf("sync on member %d: %w", m.ID, err)
			return
		}
		p := fmt.Sprintf("/probe-%d-%d", m.ID, time.Now().UnixNano())
		if _, err := conn.Create(p, nil, zk.FlagEphemeral, openACL); err != nil {
			done <- fmt.Errorf("create %s on member %d: %w", p, m.ID, err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Second):
		return fmt.Errorf("member %d: no reply within 3 s", m.ID)
	}
}

// readClient reads /load and its children until stop is closed.
func readClient(conn *zk.Conn, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		_, _, _ = conn.Children("/load")
		_, _, _ = conn.Get("/load")
	}
}
