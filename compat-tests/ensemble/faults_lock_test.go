package ensemble

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/check"
	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/zktest"
)

// fencedCounter is the resource a lock protects: a counter that a holder
// increments in two steps (read, then write), and that refuses a write whose
// fencing token is below the highest one it has seen in any request. A
// holder that lost its lock while paused is refused when it comes back, so
// no increment is lost even though two clients believed they held the lock.
// It logs every request for check.FencedCounter. unfenced (for the test of
// the test) accepts every write.
type fencedCounter struct {
	mu       sync.Mutex
	unfenced bool
	maxToken int64
	value    int64
	log      []check.FenceOp
}

// read returns the value for a holder with token and raises the highest
// token seen.
func (fc *fencedCounter) read(client int, token int64) int64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.maxToken = max(fc.maxToken, token)
	fc.log = append(fc.log, check.FenceOp{Client: client, Token: token, ReadOnly: true})
	return fc.value
}

// write stores v for the holder with token unless a higher token was seen;
// it reports whether it did.
func (fc *fencedCounter) write(client int, token, v int64) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	ok := fc.unfenced || token >= fc.maxToken
	fc.maxToken = max(fc.maxToken, token)
	if ok {
		fc.value = v
	}
	fc.log = append(fc.log, check.FenceOp{Client: client, Token: token, Value: v, Accepted: ok, Acked: ok})
	return ok
}

// check runs check.FencedCounter on the log.
func (fc *fencedCounter) check() error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return check.FencedCounter(fc.log, 0, fc.value)
}

// lockHolds records the lock holds for check.LockSafety.
type lockHolds struct {
	start time.Time
	mu    sync.Mutex
	holds []check.LockHold
}

func (lh *lockHolds) now() int64 { return int64(time.Since(lh.start)) }

// acquired records a hold starting now and returns its index.
func (lh *lockHolds) acquired(client int, token int64) int {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	lh.holds = append(lh.holds, check.LockHold{Client: client, Lock: "/flock", Token: token, Acquired: lh.now(), Released: check.Never, Lost: check.Never})
	return len(lh.holds) - 1
}

// released ends hold h now: released (the delete is sent next) or lost.
func (lh *lockHolds) end(h int, lost bool) {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	if lost {
		lh.holds[h].Lost = lh.now()
	} else {
		lh.holds[h].Released = lh.now()
	}
}

// TestFaultFencedLock: six clients, each over its own fault proxy to one
// member, take go-zookeeper's lock (ephemeral sequential nodes) and
// increment a fenced counter with the czxid of their lock node as token.
// Some holders "pause" between the counter's read and write: the client
// stops and its proxy is cut both ways, past its session timeout, until
// another client holds the lock and has read the counter. When the paused
// holder resumes, its write must be refused. The leader is SIGSTOPped once
// past the election timeout meanwhile. Checked: tokens strictly
// increase across acquisitions and no two holds overlap (a paused holder's
// hold ends at its pause; check.LockSafety), the counter's log shows no
// stale write accepted and no lost update (check.FencedCounter), and every
// paused holder was fenced off.
func TestFaultFencedLock(t *testing.T) {
	eachSize(t, func(t *testing.T, n int) {
		const clients, quota, pauses = 6, 5, 3
		const sessionTimeout = 2 * time.Second
		c := startCluster(t, zktest.Zkraft, n)
		setup := connectAll(t, c, 10*time.Second)
		mustCreate(t, setup, "/flock", nil, 0)

		var (
			fc       fencedCounter
			cs       criticalSection // collects the problems the clients meet
			lh       = &lockHolds{start: time.Now()}
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
					h := lh.acquired(i, token)
					v := fc.read(i, token)
					if takePause() {
						// The holder freezes: no pings, no writes, past its
						// session. Its hold counts as lost from here: what
						// guards the resource from now on is the fence.
						lh.end(h, true)
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
					lh.end(h, false)
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
		t.Logf("%d increments accepted, %d lock holds, %d paused holders fenced off", fc.value, len(lh.holds), fenced.Load())
		problems := append([]string(nil), cs.violations...)
		if err := fc.check(); err != nil {
			problems = append(problems, "fenced counter: "+err.Error())
		}
		if err := check.LockSafety(lh.holds); err != nil {
			problems = append(problems, "lock safety: "+err.Error())
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
