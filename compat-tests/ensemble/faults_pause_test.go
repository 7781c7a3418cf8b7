package ensemble

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// pauseFor is how long a member stays SIGSTOPped: above the election
// timeout (10 ticks of 100 ms, randomized up to twice that) and below the
// register clients' session timeout (4 s), so a pause forces an election,
// or cuts a follower off, without expiring the clients' sessions.
const pauseFor = 2500 * time.Millisecond

// TestFaultPauseHistories SIGSTOPs the leader and then followers for
// longer than the election timeout, twice each, while register clients
// (sessions spread over every member) run conditional sets and reads, part
// of them after a sync. A resumed old leader must not acknowledge a write or
// answer a synced read from its stale term (ZOOKEEPER-1675's stale sync):
// the history must be linearizable, no session may see a key go back, and
// after the pauses every member names the same leader, serves, and holds
// the same tree. With 5 members the second follower round pauses two
// followers at once (a quorum of three remains).
//
// Issue 9's pause test (pause_test.go) checks that a resumed member learns
// the leader in time; this one checks what clients observed meanwhile.
func TestFaultPauseHistories(t *testing.T) {
	eachSize(t, func(t *testing.T, n int) {
		c := startCluster(t, zktest.Zkraft, n)
		w, stop := startRegWorkload(t, c, 4, 90*time.Second)
		defer stop()
		w.waitProgress(t, 30)
		for round := range 2 {
			leader := c.WaitSettled(t)
			w.markFault()
			pausedAt := time.Now()
			leader.Pause()
			leaderAmong(t, c, c.Followers(leader), 20*time.Second)
			time.Sleep(time.Until(pausedAt.Add(pauseFor))) // the pause lasts at least pauseFor
			leader.Resume()
			t.Logf("round %d: leader %d (%s) paused %v..%v after the workload started (%s)", round, leader.ID, leader.Addr,
				pausedAt.Sub(w.start).Round(time.Millisecond), time.Since(w.start).Round(time.Millisecond), c.Modes())

			leader = c.WaitSettled(t)
			fs := c.Followers(leader)
			paused := fs[:1]
			if round == 1 && n == 5 {
				paused = fs[:2]
			}
			pausedAt = time.Now()
			for _, m := range paused {
				m.Pause()
			}
			time.Sleep(pauseFor)
			for _, m := range paused {
				m.Resume()
			}
			var which []string
			for _, m := range paused {
				which = append(which, m.Addr)
			}
			t.Logf("round %d: follower(s) %v paused %v..%v after the workload started", round, which,
				pausedAt.Sub(w.start).Round(time.Millisecond), time.Since(w.start).Round(time.Millisecond))
		}
		requireAgreedLeader(t, c, "after-pauses")
		w.waitProgress(t, 100)
		stop()
		requireConverged(t, c)
		w.check(t, c)
	})
}

// TestFaultCrashMajority kills -9 a majority of the members, the leader
// among them, while register clients run, then restarts them: every
// acknowledged write survives (the history, which includes every
// acknowledged set and every synced read after the restart, stays
// linearizable, and acknowledged creates are all there), and the ensemble
// serves again.
func TestFaultCrashMajority(t *testing.T) {
	eachSize(t, func(t *testing.T, n int) {
		c := startCluster(t, zktest.Zkraft, n)
		w, stop := startRegWorkload(t, c, 4, 90*time.Second)
		defer stop()

		// Acknowledged creates, made until the crash and recorded.
		conn := connectAll(t, c, 10*time.Second)
		mustCreate(t, conn, "/acked", nil, 0)
		var acked []string
		for i := range 30 {
			p := fmt.Sprintf("/acked/n%03d", i)
			if _, err := conn.Create(p, []byte(p), 0, openACL); err == nil {
				acked = append(acked, p)
			}
		}
		w.waitProgress(t, 50)
		leader := c.WaitSettled(t)
		victims := append([]*zktest.Member{leader}, c.Followers(leader)[:n/2]...)
		w.markFault()
		for _, m := range victims {
			m.Kill()
		}
		t.Logf("killed %d of %d members (leader %d among them) after %d acknowledged creates", len(victims), n, leader.ID, len(acked))
		time.Sleep(time.Second) // clients run against a minority meanwhile
		for _, m := range victims {
			m.StartNoWait(t)
		}
		c.WaitSettled(t)
		requireAgreedLeader(t, c, "after-crash")
		w.waitProgress(t, 100)
		stop()
		tree := requireConverged(t, c)
		for _, p := range acked {
			if _, ok := tree[p]; !ok {
				t.Errorf("acknowledged create %s lost after the crash of a majority", p)
			}
		}
		w.check(t, c)
	})
}
