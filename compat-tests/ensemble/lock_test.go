package ensemble

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// criticalSection detects overlapping holders of a lock and checks that
// their fencing tokens strictly increase in the order they enter.
type criticalSection struct {
	mu         sync.Mutex
	holder     int // client inside, 0 if none
	lastToken  int64
	entries    int
	violations []string
}

func (cs *criticalSection) enter(client int, token int64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.holder != 0 {
		cs.violations = append(cs.violations, fmt.Sprintf("client %d entered while client %d holds the lock", client, cs.holder))
	}
	if token <= cs.lastToken {
		cs.violations = append(cs.violations, fmt.Sprintf("client %d holds fencing token %#x, not above the previous %#x", client, token, cs.lastToken))
	}
	cs.holder, cs.lastToken = client, token
	cs.entries++
}

func (cs *criticalSection) leave(client int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.holder == client {
		cs.holder = 0
	}
}

func (cs *criticalSection) violation(format string, args ...any) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.violations = append(cs.violations, fmt.Sprintf(format, args...))
}

// lockSeq is the sequence number at the end of a lock node's name.
func lockSeq(name string) (int, bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(name[i+len("lock-"):], "%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

// fencingToken returns the czxid of the lowest lock node, which the
// holder's session must own.
func fencingToken(conn *zk.Conn, dir string) (int64, error) {
	children, _, err := conn.Children(dir)
	if err != nil {
		return 0, err
	}
	sort.Slice(children, func(i, j int) bool {
		a, _ := lockSeq(children[i])
		b, _ := lockSeq(children[j])
		return a < b
	})
	if len(children) == 0 {
		return 0, errors.New("no lock node while holding the lock")
	}
	ok, st, err := conn.Exists(dir + "/" + children[0])
	if err != nil {
		return 0, err
	}
	if !ok || st.EphemeralOwner != conn.SessionID() {
		return 0, fmt.Errorf("lowest lock node %s (exists %v) belongs to session %#x, not the holder's %#x",
			children[0], ok, st.EphemeralOwner, conn.SessionID())
	}
	return st.Czxid, nil
}

// TestLockSafety: eight clients contend on go-zookeeper's lock recipe over
// the multi-host string while the leader is killed and restarted. No two
// clients may hold the lock at once, the fencing tokens (czxid of each
// holder's lock node) strictly increase, and every client completes its
// quota of acquisitions. A client whose Lock or Unlock fails (connection
// lost, outcome unknown) closes its session, so its lock node goes, and
// starts over with a new one.
// lockStall bounds one Lock() call: far above a leader change plus a
// session timeout, far below the test's deadline.
const lockStall = 30 * time.Second

func TestLockSafety(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		const clients, quota = 8, 6
		const sessionTimeout = 4 * time.Second
		c := startCluster(t, target, 3)
		setup := connectAll(t, c, 10*time.Second)
		mustCreate(t, setup, "/lock", nil, 0)

		var cs criticalSection
		var total, recoveries atomic.Int64
		deadline := time.Now().Add(90 * time.Second)
		var wg sync.WaitGroup
		remaining := make([]atomic.Int64, clients)
		for i := 1; i <= clients; i++ {
			remaining[i-1].Store(quota)
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, _, err := zk.Connect(c.Addrs(), sessionTimeout, quiet)
				if err != nil {
					cs.violation("client %d: connect: %v", i, err)
					return
				}
				defer func() { conn.Close() }()
				restart := func() {
					recoveries.Add(1)
					conn.Close()
					time.Sleep(100 * time.Millisecond) // no busy loop while no member serves
					conn, _, _ = zk.Connect(c.Addrs(), sessionTimeout, quiet)
				}
				for remaining[i-1].Load() > 0 && time.Now().Before(deadline) {
					l := zk.NewLock(conn, "/lock", openACL)
					// go-zookeeper's Lock waits without a bound for the watch on
					// the node ahead of it. A wait past lockStall means a lost
					// event: record it, and close the connection to unblock it.
					current := conn
					stalled := time.AfterFunc(lockStall, func() {
						cs.violation("client %d: Lock() waited over %v (a watch event never came)", i, lockStall)
						current.Close()
					})
					err := l.Lock()
					stalled.Stop()
					if err != nil {
						restart()
						continue
					}
					token, err := fencingToken(conn, "/lock")
					if err != nil {
						if strings.Contains(err.Error(), "belongs to session") || strings.Contains(err.Error(), "no lock node") {
							cs.violation("client %d: %v", i, err)
						}
						restart()
						continue
					}
					cs.enter(i, token)
					time.Sleep(3 * time.Millisecond)
					cs.leave(i)
					remaining[i-1].Add(-1)
					total.Add(1)
					if err := l.Unlock(); err != nil {
						restart()
					}
				}
			}()
		}

		waitFor(t, 20*time.Second, "first acquisitions", func() error {
			if n := total.Load(); n < clients {
				return fmt.Errorf("%d acquisitions", n)
			}
			return nil
		})
		leader := c.Leader(t)
		leader.Kill()
		t.Logf("killed leader %d after %d acquisitions", leader.ID, total.Load())
		c.Leader(t)
		atKill := total.Load()
		waitSoon(t, 15*time.Second, 45*time.Second, "acquisitions after the leader kill", func() error {
			if n := total.Load(); n < atKill+clients/2 {
				return fmt.Errorf("%d acquisitions since the kill (ensemble %s)", n-atKill, c.Modes())
			}
			return nil
		})
		leader.Start(t)
		t.Logf("restarted member %d after %d acquisitions", leader.ID, total.Load())
		wg.Wait()
		t.Logf("%d acquisitions, %d session restarts", total.Load(), recoveries.Load())

		if len(cs.violations) > 0 {
			t.Errorf("lock safety violated:\n%s", strings.Join(cs.violations, "\n"))
		}
		var short []string
		for i := range remaining {
			if n := remaining[i].Load(); n > 0 {
				short = append(short, fmt.Sprintf("client %d: %d of %d acquisitions missing", i+1, n, quota))
			}
		}
		if len(short) > 0 {
			t.Fatalf("clients did not complete their quota within 90 s:\n%s", strings.Join(short, "\n"))
		}
	})
}
