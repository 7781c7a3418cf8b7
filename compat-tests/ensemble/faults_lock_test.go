package ensemble

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/zktest"
)

// fencedCounter is the resource a lock protects: a counter that a holder
// increments in two steps (read, then write), and that refuses a step
// whose fencing token is below the highest one it has seen. A holder that
// lost its lock while paused is refused when it comes back, so no
// increment is lost, even though two clients believed they held the lock.
type fencedCounter struct {
	mu         sync.Mutex
	maxToken   int64
	value      int64
	owner      int64 // token of the last accepted read, 0 after a write
	accepted   int64 // writes accepted
	refused    int64 // reads and writes refused as stale
	violations []string
}

// read returns the value for a holder with token, or false if the token is
// stale.
func (fc *fencedCounter) read(client int, token int64) (int64, bool) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if token < fc.maxToken {
		fc.refused++
		return 0, false
	}
	if fc.owner != 0 && fc.owner != token {
		// The previous holder read and never wrote: its write will be refused.
		fc.owner = 0
	}
	fc.maxToken, fc.owner = token, token
	return fc.value, true
}

// write stores v for the holder with token, unless a newer token was seen
// since; a write not preceded by this token's read is a violation.
func (fc *fencedCounter) write(client int, token, v int64) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if token < fc.maxToken {
		fc.refused++
		return false
	}
	if fc.owner != token {
		fc.violations = append(fc.violations, fmt.Sprintf("client %d wrote with token %#x without its read", client, token))
		return false
	}
	if v != fc.value+1 {
		fc.violations = append(fc.violations, fmt.Sprintf("client %d with token %#x wrote %d over %d: an increment was lost", client, token, v, fc.value))
	}
	fc.value, fc.owner = v, 0
	fc.accepted++
	return true
}

// TestFaultFencedLock: six clients, each over its own fault proxy to one
// member, take go-zookeeper's lock (ephemeral sequential nodes) and
// increment a fenced counter with the czxid of their lock node as token.
// Some holders "pause" between the counter's read and write: the client
// stops and its proxy is cut both ways, past its session timeout, until
// another client holds the lock and has read the counter. When the paused
// holder resumes, its write must be refused. The leader is SIGSTOPped once
// past the election timeout meanwhile. Checked: tokens strictly
// increase across acquisitions, the counter equals the number of accepted
// writes (0 lost updates), no two live holders overlap, and the paused
// holders were fenced off.
func TestFaultFencedLock(t *testing.T) {
	eachSize(t, func(t *testing.T, n int) {
		const clients, quota, pauses = 6, 5, 3
		const sessionTimeout = 2 * time.Second
		c := startCluster(t, zktest.Zkraft, n)
		setup := connectAll(t, c, 10*time.Second)
		mustCreate(t, setup, "/flock", nil, 0)

		var (
			fc       fencedCounter
			cs       criticalSection
			total    atomic.Int64
			fenced   atomic.Int64
			pauseMu  sync.Mutex
			pausesTo = pauses
		)
		// takePause reports whether this acquisition should pause (the
		// first `pauses` acquisitions after the first few, spread over
		// clients).
		takePause := func() bool {
			pauseMu.Lock()
			defer pauseMu.Unlock()
			if pausesTo > 0 && total.Load() >= 2 {
				pausesTo--
				return true
			}
			return false
		}
		deadline := time.Now().Add(60 * time.Second)
		var wg sync.WaitGroup
		for i := 1; i <= clients; i++ {
			m := c.Members[i%len(c.Members)]
			px, err := faultproxy.Listen(m.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Close() })
			wg.Add(1)
			go func() {
				defer wg.Done()
				connect := func() *zk.Conn {
					conn, _, err := zk.Connect([]string{px.Addr()}, sessionTimeout, quiet)
					if err != nil {
						cs.violation("client %d: connect: %v", i, err)
						return nil
					}
					return conn
				}
				conn := connect()
				if conn == nil {
					return
				}
				defer func() { conn.Close() }()
				for done := 0; done < quota && time.Now().Before(deadline); {
					l := zk.NewLock(conn, "/flock", openACL)
					current := conn
					stalled := time.AfterFunc(lockStall, func() {
						cs.violation("client %d: Lock() waited over %v", i, lockStall)
						current.Close()
					})
					err := l.Lock()
					stalled.Stop()
					restart := func() {
						conn.Close()
						time.Sleep(100 * time.Millisecond)
						if conn = connect(); conn == nil {
							conn = current // closed; the loop ends at the deadline
						}
					}
					if err != nil {
						restart()
						continue
					}
					token, err := fencingToken(conn, "/flock")
					if err != nil {
						restart()
						continue
					}
					cs.enter(i, token)
					v, ok := fc.read(i, token)
					if !ok {
						cs.leave(i)
						_ = l.Unlock()
						continue
					}
					if takePause() {
						// The holder freezes: no pings, no writes, past its session.
						cs.leave(i) // it no longer counts as a live holder
						px.Block(faultproxy.Up, true)
						px.Block(faultproxy.Down, true)
						takenOver := false
						for end := time.Now().Add(30 * time.Second); !takenOver && time.Now().Before(end); {
							time.Sleep(50 * time.Millisecond)
							fc.mu.Lock()
							takenOver = fc.maxToken > token
							fc.mu.Unlock()
						}
						if !takenOver {
							cs.violation("client %d: no other client took the lock within 30 s of its pause", i)
						}
						px.Block(faultproxy.Up, false)
						px.Block(faultproxy.Down, false)
						if fc.write(i, token, v+1) {
							cs.violation("client %d: write after its lock was taken over was accepted", i)
						} else {
							fenced.Add(1)
						}
						restart()
						continue
					}
					time.Sleep(5 * time.Millisecond)
					if fc.write(i, token, v+1) {
						done++
						total.Add(1)
					}
					cs.leave(i)
					if err := l.Unlock(); err != nil {
						restart()
					}
				}
			}()
		}
		// Meanwhile the leader pauses once, past the election timeout: lock
		// holders and waiters see a leader change.
		waitFor(t, 30*time.Second, "first increments", func() error {
			if n := total.Load(); n < clients {
				return fmt.Errorf("%d increments", n)
			}
			return nil
		})
		leader := c.WaitSettled(t)
		leader.Pause()
		time.Sleep(pauseFor)
		leader.Resume()
		t.Logf("leader %d paused for %v after %d increments", leader.ID, pauseFor, total.Load())
		wg.Wait()
		t.Logf("%d increments accepted, %d stale steps refused, %d paused holders fenced off", fc.accepted, fc.refused, fenced.Load())
		var problems []string
		problems = append(problems, cs.violations...)
		problems = append(problems, fc.violations...)
		if fc.value != fc.accepted {
			problems = append(problems, fmt.Sprintf("counter is %d after %d accepted increments: %d updates lost", fc.value, fc.accepted, fc.accepted-fc.value))
		}
		if got := fenced.Load(); got != pauses {
			problems = append(problems, fmt.Sprintf("%d paused holders fenced off; want %d", got, pauses))
		}
		if got := total.Load(); got < clients*quota {
			problems = append(problems, fmt.Sprintf("%d increments of %d within the time bound", got, clients*quota))
		}
		if len(problems) > 0 {
			t.Fatalf("fenced lock:\n%s", strings.Join(problems, "\n"))
		}
	})
}
