package ensemble

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// writeRecord is what a client knows about one node it writes.
type writeRecord struct {
	acked    []byte   // data of the last acknowledged write (nil: create not acknowledged)
	version  int32    // version after the last acknowledged write
	unsure   [][]byte // data of later writes whose outcome is unknown
	maybeNew bool     // the create itself is unsure: the node may be absent
}

// writeLog records every acknowledged write of a load, and the writes whose
// outcome the client does not know (connection lost before the reply).
type writeLog struct {
	mu       sync.Mutex
	nodes    map[string]*writeRecord
	acks     atomic.Int64
	unsures  atomic.Int64
	problems []string // replies that contradict the acknowledged history
}

func newWriteLog() *writeLog { return &writeLog{nodes: map[string]*writeRecord{}} }

func (l *writeLog) record(path string) *writeRecord {
	r, ok := l.nodes[path]
	if !ok {
		r = &writeRecord{}
		l.nodes[path] = r
	}
	return r
}

func (l *writeLog) ack(path string, data []byte, version int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.record(path)
	r.acked, r.version, r.unsure, r.maybeNew = data, version, nil, false
	l.acks.Add(1)
}

func (l *writeLog) unsure(path string, data []byte, create bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.record(path)
	r.unsure = append(r.unsure, data)
	r.maybeNew = r.maybeNew || create
	l.unsures.Add(1)
}

func (l *writeLog) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// uncertain reports whether err leaves a write's outcome unknown: the
// connection was lost (or the session moved) before the reply came.
func uncertain(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}

// loadClient creates nodes /load/c<i>-<k> and sets each twice with the
// expected version, until stop is closed. An error other than a lost
// connection contradicts the acknowledged history and is a problem.
func loadClient(i int, conn *zk.Conn, log *writeLog, stop <-chan struct{}) {
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		p := fmt.Sprintf("/load/c%d-%05d", i, k)
		d := []byte(p + "#0")
		if _, err := conn.Create(p, d, 0, openACL); err != nil {
			if uncertain(err) {
				log.unsure(p, d, true)
			} else {
				log.problem("create %s: %v", p, err)
			}
			continue
		}
		log.ack(p, d, 0)
		for v := int32(1); v <= 2; v++ {
			d := []byte(fmt.Sprintf("%s#%d", p, v))
			st, err := conn.Set(p, d, v-1)
			if err != nil {
				if uncertain(err) {
					log.unsure(p, d, false)
				} else {
					log.problem("setData %s version %d: %v", p, v-1, err)
				}
				break
			}
			if st.Version != v {
				log.problem("setData %s: reply version %d; want %d", p, st.Version, v)
			}
			log.ack(p, d, v)
		}
	}
}

// verify checks every recorded write against the tree read through conn.
func (l *writeLog) verify(tree map[string]node) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for p, r := range l.nodes {
		n, ok := tree[p]
		switch {
		case !ok && r.acked == nil && r.maybeNew:
			// Create never acknowledged: absent is fine.
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: acknowledged (data %q) but missing", p, r.acked))
		case bytes.Equal(n.Data, r.acked) && n.Stat.Version == r.version:
		default:
			found := false
			for _, d := range r.unsure {
				if bytes.Equal(n.Data, d) {
					found = true
				}
			}
			if !found {
				bad = append(bad, fmt.Sprintf("%s: data %q version %d; want the acknowledged %q version %d (or one of the unsure %q)",
					p, n.Data, n.Stat.Version, r.acked, r.version, r.unsure))
			}
		}
	}
	for p := range tree {
		if strings.HasPrefix(p, "/load/") {
			if _, ok := l.nodes[p]; !ok {
				bad = append(bad, fmt.Sprintf("%s: exists but no client wrote it", p))
			}
		}
	}
	return bad
}

// TestWritesSurviveCrash: four clients write concurrently over the
// multi-host string while one member (the leader, or a follower) is killed
// with SIGKILL and restarted. Every acknowledged write must be present with
// its latest acknowledged data and version, and all members must converge
// to identical trees.
func TestWritesSurviveCrash(t *testing.T) {
	for _, victim := range []string{"leader", "follower"} {
		t.Run("kill_"+victim, func(t *testing.T) {
			eachTarget(t, func(t *testing.T, target zktest.Target) {
				testWritesSurviveCrash(t, target, victim == "leader")
			})
		})
	}
}

func testWritesSurviveCrash(t *testing.T, target zktest.Target, killLeader bool) {
	const clients = 4
	const phase = 150 // acknowledged writes per phase
	c := startCluster(t, target, 3)
	setup := connectAll(t, c, 10*time.Second)
	mustCreate(t, setup, "/load", nil, 0)

	log := newWriteLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		conn := connectAll(t, c, 10*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			loadClient(i, conn, log, stop)
		}()
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()
	// Each phase should take under 15 s: an election takes a few seconds at
	// most, and the clients then reconnect at once. Up to 45 s the test goes
	// on (reporting the delay) to check the writes themselves.
	waitAcks := func(what string, n int64) {
		t.Helper()
		waitSoon(t, 15*time.Second, 45*time.Second, what, func() error {
			if got := log.acks.Load(); got < n {
				return fmt.Errorf("%d acknowledged writes, want %d (%d unsure; ensemble %s)", got, n, log.unsures.Load(), c.Modes())
			}
			return nil
		})
	}

	waitAcks("writes before the crash", phase)
	leader := c.Leader(t)
	victim := leader
	if !killLeader {
		victim = c.Followers(leader)[0]
	}
	victim.Kill()
	atKill := log.acks.Load()
	t.Logf("killed member %d (leader %d) after %d acknowledged writes", victim.ID, leader.ID, atKill)
	waitAcks("writes with a member down", atKill+phase)
	if killLeader {
		if nl := c.Leader(t); nl == victim {
			t.Fatalf("killed member %d still reported as leader", victim.ID)
		}
	}
	t.Logf("%d acknowledged writes with member %d down; restarting it", log.acks.Load(), victim.ID)
	victim.Start(t)
	atRestart := log.acks.Load()
	t.Logf("member %d restarted (%s) at %d acknowledged writes", victim.ID, c.Modes(), atRestart)
	waitAcks("writes after the restart", atRestart+phase)
	stopLoad()
	t.Logf("%d acknowledged writes, %d with an unknown outcome", log.acks.Load(), log.unsures.Load())
	if len(log.problems) > 0 {
		t.Errorf("replies contradicting the acknowledged history:\n%s", strings.Join(log.problems, "\n"))
	}

	tree := requireConverged(t, c)
	if bad := log.verify(tree); len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Fatalf("acknowledged writes lost or wrong:\n%s", strings.Join(bad, "\n"))
	}
	requireZxidsConverge(t, c)
}
