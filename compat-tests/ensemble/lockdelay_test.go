package ensemble

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// lockHolder is a running kazoo_lock_holder.py.
type lockHolder struct {
	name     string
	proc     *zktest.SuiteProcess
	session  chan int64
	acquired chan time.Time // when the program took the lock, by its clock
	closed   chan struct{}
}

// startLockHolder runs kazoo_lock_holder.py: a kazoo client on hosts with a
// session of timeout that creates memberPath (ephemeral) and then takes
// kazoo's Lock on lockPath, holding it until stopped.
func startLockHolder(t *testing.T, name, hosts, lockPath, memberPath string, timeout time.Duration) *lockHolder {
	t.Helper()
	script, err := filepath.Abs("kazoo_lock_holder.py")
	if err != nil {
		t.Fatalf("locate kazoo_lock_holder.py: %v", err)
	}
	h := &lockHolder{name: name, session: make(chan int64, 1), acquired: make(chan time.Time, 1), closed: make(chan struct{})}
	onLine := func(line string) {
		t.Logf("%s: %s", name, line)
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "session":
			if id, err := strconv.ParseUint(f[1], 16, 64); err == nil {
				h.session <- int64(id)
			}
		case len(f) == 3 && f[0] == "acquired":
			if ms, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				h.acquired <- time.UnixMilli(ms)
			}
		case line == "closed":
			close(h.closed)
		}
	}
	h.proc = zktest.StartSuite(t, 90*time.Second, nil, onLine, python, "-u", script, hosts, lockPath, memberPath,
		strconv.FormatFloat(timeout.Seconds(), 'f', 1, 64))
	return h
}

// sessionID waits for the holder's session.
func (h *lockHolder) sessionID(t *testing.T) int64 {
	t.Helper()
	select {
	case id := <-h.session:
		return id
	case <-h.proc.Done():
		t.Fatalf("%s ended before its session was up", h.name)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no session within 30s", h.name)
	}
	return 0
}

// waitAcquired waits at most d for the holder to take its lock and returns
// when it did (its own clock, the test's machine).
func (h *lockHolder) waitAcquired(t *testing.T, d time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-h.acquired:
		return at
	case <-h.proc.Done():
		t.Fatalf("%s ended without taking the lock", h.name)
	case <-time.After(d):
		t.Fatalf("%s did not take the lock within %v", h.name, d)
	}
	return time.Time{}
}

// lockNodes returns the lock's contender nodes, sorted by sequence number
// (kazoo names them <uuid>__lock__<seq>), as of a sync.
func lockNodes(conn *zk.Conn, lockPath string) ([]string, error) {
	if _, err := conn.Sync(lockPath); err != nil {
		return nil, fmt.Errorf("sync %s: %w", lockPath, err)
	}
	children, _, err := conn.Children(lockPath)
	if err != nil && err != zk.ErrNoNode {
		return nil, fmt.Errorf("children of %s: %w", lockPath, err)
	}
	seq := func(name string) string { _, s, _ := strings.Cut(name, "__lock__"); return s }
	for i := 1; i < len(children); i++ {
		for j := i; j > 0 && seq(children[j]) < seq(children[j-1]); j-- {
			children[j], children[j-1] = children[j-1], children[j]
		}
	}
	return children, nil
}

// waitLockNodes waits (bounded, retrying while the client reconnects) until
// the lock has n contender nodes and returns them.
func waitLockNodes(t *testing.T, conn *zk.Conn, lockPath string, n int) []string {
	t.Helper()
	var nodes []string
	waitFor(t, 20*time.Second, fmt.Sprintf("%d nodes under %s", n, lockPath), func() error {
		var err error
		if nodes, err = lockNodes(conn, lockPath); err != nil {
			return err
		}
		if len(nodes) != n {
			return fmt.Errorf("lock nodes %v", nodes)
		}
		return nil
	})
	return nodes
}

// TestLockDelayPausedHolder is "lock-delay on an ensemble with a paused
// holder". Three members run with zkraft.lockDelayMs and
// zkraft.lockDelayPaths=/locks,/app/locks. A kazoo client takes kazoo's
// Lock (Curator-style sequential ephemerals) under /locks and also owns an
// ephemeral outside the lock paths; a second kazoo client waits for the
// lock. The holder's process is frozen (SIGSTOP) so its session expires:
//   - its ephemeral outside the paths goes at expiry, as in ZooKeeper;
//   - its lock node stays, still showing the dead session as its
//     ephemeralOwner, and the contender does not get the lock before the
//     expiry plus the delay, and gets it soon after;
//   - a holder that closes its session cleanly releases at once (under
//     /app/locks): no delay;
//   - a paused WAITER's lock node goes at its expiry (only a holder's is
//     kept), while the holder's stays, and the contender behind it then
//     gets the lock as soon as the holder releases;
//   - when the leader that expired the holder is stopped during the delay,
//     the next leader removes the lock node when due: the contender still
//     waits for the delay, and gets the lock.
//
// Against Apache ZooKeeper (ZKRAFT_TARGETS=apache), which has no lock-delay,
// the same test expects no delay: that checks the test itself.
func TestLockDelayPausedHolder(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import kazoo.client").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
	const (
		delay          = 4 * time.Second
		holderTimeout  = 3 * time.Second // a paused holder's session expires this long after its last ping
		otherTimeout   = 10 * time.Second
		eventSlack     = time.Second     // expiry's apply to the test's watch event, at most (members apply at different times)
		removalLatency = 5 * time.Second // deadline to the removal applied and the contender woken, at most
	)
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		want := delay
		if target == zktest.Apache {
			want = 0
		}
		c := zktest.StartCluster(t, 3, zktest.ClusterOptions{
			Target: target, TickMs: tickMs, SuperDigest: zktest.DigestACLHash(superUser),
			Extra: map[string]string{
				"zkraft.lockDelayMs":    strconv.Itoa(int(delay / time.Millisecond)),
				"zkraft.lockDelayPaths": "/locks,/app/locks",
			},
		})
		hosts := c.ConnectString()
		obs, _ := c.Connect(t, otherTimeout, quiet)

		pausedHolder := func(t *testing.T, name string, stopLeader bool) {
			lockPath, holderMember := "/locks/"+name, "/members/"+name+"-holder"
			holder := startLockHolder(t, "holder", hosts, lockPath, holderMember, holderTimeout)
			holderSession := holder.sessionID(t)
			holder.waitAcquired(t, 20*time.Second)
			contender := startLockHolder(t, "contender", hosts, lockPath, "/members/"+name+"-contender", otherTimeout)
			heldNode := lockPath + "/" + waitLockNodes(t, obs, lockPath, 2)[0]
			ok, _, gone, err := obs.ExistsW(holderMember)
			if err != nil || !ok {
				t.Fatalf("watch %s: exists %v, %v", holderMember, ok, err)
			}

			if err := holder.proc.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			defer func() { _ = holder.proc.Signal(syscall.SIGCONT) }()
			var expired time.Time
			select {
			case ev := <-gone:
				expired = time.Now()
				if ev.Type != zk.EventNodeDeleted {
					t.Fatalf("event on %s: %+v", holderMember, ev)
				}
			case <-time.After(holderTimeout + 10*time.Second):
				t.Fatalf("%s still there %v after the holder was frozen", holderMember, time.Since(stopped))
			}
			t.Logf("holder's session expired %v after SIGSTOP (its ephemeral outside the lock paths is gone)", expired.Sub(stopped))

			if want > 0 {
				// During the delay the lock node is still there, as the dead
				// session's: it is what keeps the contender waiting.
				if _, err := obs.Sync(heldNode); err != nil {
					t.Fatalf("sync: %v", err)
				}
				ok, st, err := obs.Exists(heldNode)
				if err != nil || !ok {
					t.Fatalf("lock node %s gone at expiry (exists %v, %v): no lock-delay", heldNode, ok, err)
				}
				if st.EphemeralOwner != holderSession {
					t.Fatalf("lock node %s: ephemeralOwner %#x, want the dead session %#x", heldNode, st.EphemeralOwner, holderSession)
				}
			}
			latency := removalLatency
			if stopLeader {
				// The leader that decided the expiry goes; the next one
				// must find the pending removal in the replicated state.
				leader := c.Leader(t)
				leader.Stop()
				t.Logf("stopped the leader, member %d", leader.ID)
				latency += 10 * time.Second // an election, clients moving
			}
			acquired := contender.waitAcquired(t, want+latency+5*time.Second)
			after := acquired.Sub(expired)
			t.Logf("contender took the lock %v after the holder's session expired (delay %v)", after, want)
			if after < want-eventSlack {
				t.Fatalf("contender took the lock %v after the holder's expiry; want at least the delay %v", after, want)
			}
			if after > want+latency {
				t.Fatalf("contender took the lock %v after the holder's expiry; want within %v of the delay %v", after, latency, want)
			}
			waitLockNodes(t, obs, lockPath, 1) // the contender's: the holder's is gone
		}
		t.Run("paused_holder", func(t *testing.T) { pausedHolder(t, "paused", false) })

		t.Run("clean_close_releases_at_once", func(t *testing.T) {
			const lockPath = "/app/locks/clean"
			holder := startLockHolder(t, "holder", hosts, lockPath, "/members/clean-holder", otherTimeout)
			holder.waitAcquired(t, 20*time.Second)
			contender := startLockHolder(t, "contender", hosts, lockPath, "/members/clean-contender", otherTimeout)
			waitLockNodes(t, obs, lockPath, 2)
			closing := time.Now()
			if err := holder.proc.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			acquired := contender.waitAcquired(t, 20*time.Second)
			after := acquired.Sub(closing)
			t.Logf("contender took the lock %v after the holder closed its session", after)
			if after >= delay/2 {
				t.Fatalf("contender took the lock %v after a clean close; a clean close must not be delayed (%v)", after, delay)
			}
			select {
			case <-holder.closed:
			case <-time.After(10 * time.Second):
				t.Fatalf("holder did not report its close")
			}
		})

		// A waiter is not a holder: its node goes at its expiry, as in
		// ZooKeeper, so the queue behind it moves at once and no client
		// can adopt a dead waiter's node later.
		t.Run("paused_waiter_released_at_expiry", func(t *testing.T) {
			const lockPath = "/locks/waiter"
			holder := startLockHolder(t, "holder", hosts, lockPath, "/members/w-holder", otherTimeout)
			holderSession := holder.sessionID(t)
			holder.waitAcquired(t, 20*time.Second)
			const waiterMember = "/members/w-waiter"
			waiter := startLockHolder(t, "waiter", hosts, lockPath, waiterMember, holderTimeout)
			waiter.sessionID(t)
			nodes := waitLockNodes(t, obs, lockPath, 2)
			heldNode, waitNode := lockPath+"/"+nodes[0], lockPath+"/"+nodes[1]
			next := startLockHolder(t, "next", hosts, lockPath, "/members/w-next", otherTimeout)
			waitLockNodes(t, obs, lockPath, 3)
			ok, _, memberGone, err := obs.ExistsW(waiterMember)
			if err != nil || !ok {
				t.Fatalf("watch %s: exists %v, %v", waiterMember, ok, err)
			}
			ok, _, nodeGone, err := obs.ExistsW(waitNode)
			if err != nil || !ok {
				t.Fatalf("watch %s: exists %v, %v", waitNode, ok, err)
			}

			if err := waiter.proc.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			defer func() { _ = waiter.proc.Signal(syscall.SIGCONT) }()
			select {
			case <-memberGone:
			case <-time.After(holderTimeout + 10*time.Second):
				t.Fatalf("%s still there %v after the waiter was frozen", waiterMember, time.Since(stopped))
			}
			expired := time.Now()
			t.Logf("waiter's session expired %v after SIGSTOP", expired.Sub(stopped))
			// The same expiry entry removes both: the lock node's event
			// comes right after the member's (not a delay later).
			select {
			case ev := <-nodeGone:
				if ev.Type != zk.EventNodeDeleted {
					t.Fatalf("event on %s: %+v", waitNode, ev)
				}
			case <-time.After(eventSlack):
				t.Fatalf("the paused waiter's lock node %s still there %v after its expiry: kept like a holder's", waitNode, eventSlack)
			}
			// The holder's node stays, its owner the live holder.
			ok, st, err := obs.Exists(heldNode)
			if err != nil || !ok || st.EphemeralOwner != holderSession {
				t.Fatalf("holder's node %s: exists %v, owner %#x, %v; want it held by %#x", heldNode, ok, st.EphemeralOwner, err, holderSession)
			}
			waitLockNodes(t, obs, lockPath, 2)

			// The contender behind the waiter now waits on the holder only:
			// a clean release hands it the lock at once.
			releasing := time.Now()
			if err := holder.proc.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			after := next.waitAcquired(t, 20*time.Second).Sub(releasing)
			t.Logf("next contender took the lock %v after the holder released", after)
			if after >= delay/2 {
				t.Fatalf("next contender took the lock %v after the holder released; want no delay (%v)", after, delay)
			}
		})

		// Last: it leaves the ensemble with two members.
		t.Run("leader_stopped_during_the_delay", func(t *testing.T) { pausedHolder(t, "failover", true) })
	})
}
