package ensemble

// Helpers of the fault tests (faults_*_test.go): ensembles whose members
// reach each other through fault-injecting proxies, and a register
// workload whose history is checked with internal/check (linearizability
// with porcupine, session reads, no lost writes).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/check"
	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/zktest"
)

// faultSizes are the ensemble sizes every fault test runs with.
var faultSizes = []int{3, 5}

// eachSize runs f as one subtest per ensemble size, on zkraft (the fault
// tests use zkraft's zoo.cfg routing and mntr keys).
func eachSize(t *testing.T, f func(t *testing.T, n int)) {
	t.Helper()
	for _, n := range faultSizes {
		t.Run(fmt.Sprintf("%dmembers", n), func(t *testing.T) { f(t, n) })
	}
}

// startProxied starts an ensemble of n zkraft members that reach each
// other's peer and election ports only through a faultproxy.Net, which it
// returns (closed in the cleanup, after the members).
func startProxied(t *testing.T, n int) (*zktest.Cluster, *faultproxy.Net) {
	t.Helper()
	pn := faultproxy.NewNet()
	t.Cleanup(func() {
		if err := pn.Close(); err != nil {
			t.Errorf("close proxies: %v", err)
		}
	})
	route := func(from, to *zktest.Member) (int, int, error) {
		var ports [2]int
		for i, target := range []int{to.PeerPort, to.ElectionPort} {
			addr, err := pn.Add(from.ID, to.ID, net.JoinHostPort("127.0.0.1", strconv.Itoa(target)))
			if err != nil {
				return 0, 0, err
			}
			_, p, _ := net.SplitHostPort(addr)
			ports[i], _ = strconv.Atoi(p)
		}
		return ports[0], ports[1], nil
	}
	c := zktest.StartCluster(t, n, zktest.ClusterOptions{
		Target:      zktest.Zkraft,
		TickMs:      tickMs,
		SuperDigest: zktest.DigestACLHash(superUser),
		Route:       route,
	})
	return c, pn
}

// mntrValue is the value of key (e.g. "zk_raft_leader_id") in m's mntr.
func mntrValue(m *zktest.Member, key string) (string, error) {
	out, err := m.FourLetter("mntr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			return strings.TrimSpace(v), nil
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return "", fmt.Errorf("member %d mntr has no %s (%q)", m.ID, key, first)
}

// leaderAmong waits (bounded) until exactly one of ms reports Mode leader
// and returns it.
func leaderAmong(t *testing.T, c *zktest.Cluster, ms []*zktest.Member, d time.Duration) *zktest.Member {
	t.Helper()
	var leader *zktest.Member
	waitFor(t, d, "a leader among the majority", func() error {
		var ls []int
		for _, m := range ms {
			if m.Mode() == "leader" {
				leader = m
				ls = append(ls, m.ID)
			}
		}
		if len(ls) != 1 {
			return fmt.Errorf("leaders %v (ensemble %s)", ls, c.Modes())
		}
		return nil
	})
	return leader
}

// requireAgreedLeader waits until the ensemble is settled and every member
// names the same raft leader in mntr, the one whose srvr says leader; then
// every member serves a write and a synced read of it.
func requireAgreedLeader(t *testing.T, c *zktest.Cluster, tag string) *zktest.Member {
	t.Helper()
	leader := c.WaitSettled(t)
	want := strconv.Itoa(leader.ID)
	waitFor(t, 15*time.Second, "every member names the same leader", func() error {
		for _, m := range c.Members {
			v, err := mntrValue(m, "zk_raft_leader_id")
			if err != nil {
				// A member that stays cut off from the leader after the
				// fault ended is issue 9's symptom.
				return fmt.Errorf("%w: member %d does not serve after the fault ended (ensemble %s)", err, m.ID, c.Modes())
			}
			if v != want {
				return fmt.Errorf("member %d names leader %s; srvr leader is %s (ensemble %s)", m.ID, v, want, c.Modes())
			}
		}
		return nil
	})
	for _, m := range c.Members {
		conn := connectMember(t, m, 10*time.Second)
		p := fmt.Sprintf("/%s-%d", tag, m.ID)
		if _, err := conn.Create(p, []byte(p), 0, openACL); err != nil {
			t.Fatalf("create %s through member %d after heal: %v (ensemble %s)", p, m.ID, err, c.Modes())
		}
		requireData(t, conn, p, []byte(p))
		conn.Close()
	}
	return leader
}

// Register workload -------------------------------------------------------

// regKeys are the znodes of the register workload, under regRoot.
const (
	regRoot = "/reg"
	regKeys = 3
)

func regPath(k int) string { return fmt.Sprintf("%s/k%d", regRoot, k) }

// regOpsPerClient bounds each client's operations; regPace spaces them, so
// that a history spans the faults of a test (about 40 operations a second
// per client) instead of ending before the first one.
const (
	regOpsPerClient = 1500
	regPace         = 25 * time.Millisecond
)

// sessionWatch counts the expiries a go-zookeeper connection saw (it then
// goes on with a new session); pass its option to the connect call.
type sessionWatch struct {
	mu       sync.Mutex
	expiries int
	at       []time.Time // when each expiry was seen
	server   []string    // the member the connection was on then
}

func (w *sessionWatch) option() zktest.ConnOption {
	return zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
			w.mu.Lock()
			w.expiries++
			w.at = append(w.at, time.Now())
			w.server = append(w.server, ev.Server)
			w.mu.Unlock()
		}
	})
}

func (w *sessionWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expiries
}

// regWorkload runs register clients and records their history.
type regWorkload struct {
	start   time.Time
	rec     *check.Recorder
	clients int

	mu       sync.Mutex
	marked   int64 // w.now() when the test injected its first fault, 0 before
	expiries int   // sessions of the clients that expired
	watches  []*sessionWatch
}

// startRegWorkload creates the keys and starts clients sessions, client i
// starting on member i mod n; each runs until stop is called, it did
// regOpsPerClient operations, or maxDur passed. stop returns once all
// clients ended.
func startRegWorkload(t *testing.T, c *zktest.Cluster, clients int, maxDur time.Duration) (w *regWorkload, stop func()) {
	t.Helper()
	setup := connectAll(t, c, 10*time.Second)
	if _, err := setup.Create(regRoot, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s: %v", regRoot, err)
	}
	for k := range regKeys {
		mustCreate(t, setup, regPath(k), []byte("init"), 0)
	}
	w = &regWorkload{start: time.Now(), clients: clients}
	w.rec = check.NewRecorder(w.now)
	done := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(maxDur)
	for i := range clients {
		sw := &sessionWatch{}
		conn := connectOrdered(t, c, c.Members[i%len(c.Members)], 4*time.Second, sw.option())
		w.watches = append(w.watches, sw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(i, conn, sw, done, deadline)
		}()
	}
	var once sync.Once
	return w, func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// now is the time since the workload started, in ns.
func (w *regWorkload) now() int64 { return int64(time.Since(w.start)) }

// afterMark counts the definite operations called after markFault (all of
// them before it).
func (w *regWorkload) afterMark() int {
	w.mu.Lock()
	marked := w.marked
	w.mu.Unlock()
	after := 0
	for _, op := range w.rec.History() {
		if op.Call > marked && op.Status != check.StatusUnknown {
			after++
		}
	}
	return after
}

// waitProgress waits (bounded, 20 s) until the clients completed n
// definite operations called after markFault (or in all, before it): the
// history covers the time before and after the faults.
func (w *regWorkload) waitProgress(t *testing.T, n int) {
	t.Helper()
	waitFor(t, 20*time.Second, "register clients make progress after the faults", func() error {
		if got := w.afterMark(); got < n {
			return fmt.Errorf("%d definite operations since the first fault", got)
		}
		return nil
	})
}

// markFault records that the test injects its first fault now; check then
// requires definite operations called after it.
func (w *regWorkload) markFault() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marked == 0 {
		w.marked = w.now()
	}
}

// status maps a go-zookeeper error to the outcome the client saw: only a
// server's answer is definite.
func status(err error) check.Status {
	switch {
	case err == nil:
		return check.StatusOK
	case errors.Is(err, zk.ErrBadVersion):
		return check.StatusBadVersion
	case errors.Is(err, zk.ErrNoNode):
		return check.StatusNoNode
	default:
		return check.StatusUnknown
	}
}

func (w *regWorkload) client(id int, conn *zk.Conn, sw *sessionWatch, done <-chan struct{}, deadline time.Time) {
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	lastVer := make([]int32, regKeys) // the session's newest version of each key
	gen := 0
	for n := 0; n < regOpsPerClient && time.Now().Before(deadline); n++ {
		select {
		case <-done:
			return
		default:
		}
		time.Sleep(regPace)
		if g := sw.count(); g != gen {
			// A new session: per-session guarantees start over, under a new
			// client number.
			w.mu.Lock()
			w.expiries += g - gen
			w.mu.Unlock()
			gen = g
			lastVer = make([]int32, regKeys)
		}
		client := id + w.clients*gen
		key := rng.IntN(regKeys)
		p := regPath(key)
		switch r := rng.IntN(10); {
		case r < 6: // read; after a sync for 4 in 6
			synced := r < 4
			h := w.rec.Invoke(check.RegisterOp{Client: client, Path: p, Kind: check.OpGet, Linearizable: synced})
			var err error
			if synced {
				_, err = conn.Sync(p)
			}
			var data []byte
			var st *zk.Stat
			if err == nil {
				data, st, err = conn.Get(p)
			}
			if err != nil {
				w.rec.Complete(h, status(err), "", 0, 0)
				continue
			}
			w.rec.Complete(h, check.StatusOK, string(data), st.Version, st.Mzxid)
			lastVer[key] = max(lastVer[key], st.Version)
		default: // set, conditional on the session's last version (or any)
			ver := lastVer[key]
			if r == 9 {
				ver = -1
			}
			val := fmt.Sprintf("c%d-%d", id, n)
			h := w.rec.Invoke(check.RegisterOp{Client: client, Path: p, Kind: check.OpSet, Data: val, Version: ver})
			st, err := conn.Set(p, []byte(val), ver)
			if err != nil {
				w.rec.Complete(h, status(err), "", 0, 0)
				if status(err) == check.StatusUnknown {
					time.Sleep(50 * time.Millisecond) // no busy loop while no member serves
				}
				continue
			}
			w.rec.Complete(h, check.StatusOK, "", st.Version, st.Mzxid)
			lastVer[key] = max(lastVer[key], st.Version)
		}
	}
}

// check fails the test unless the history is linearizable (sets and
// synced reads), every read keeps ZooKeeper's per-session order, and no
// acknowledged set is missing from the final state read from c. It needs
// definite operations after the first fault: a history that stopped before
// the faults proves nothing.
func (w *regWorkload) check(t *testing.T, c *zktest.Cluster) {
	t.Helper()
	hist := w.rec.History()
	counts := map[check.Status]int{}
	synced, plain := 0, 0
	for _, op := range hist {
		counts[op.Status]++
		if op.Kind == check.OpGet && op.Status == check.StatusOK {
			if op.Linearizable {
				synced++
			} else {
				plain++
			}
		}
	}
	w.mu.Lock()
	expiries, marked := w.expiries, w.marked
	w.mu.Unlock()
	after := 0
	if marked > 0 {
		after = w.afterMark()
	}
	t.Logf("register history: %d ops (%d ok, %d bad version, %d unknown; %d synced and %d plain reads), %d after the first fault, %d session expiries",
		len(hist), counts[check.StatusOK], counts[check.StatusBadVersion], counts[check.StatusUnknown], synced, plain, after, expiries)
	for i, sw := range w.watches {
		sw.mu.Lock()
		for j, at := range sw.at {
			t.Logf("client %d: session expired (seen %v after the workload started, on %s)", i, at.Sub(w.start).Round(time.Millisecond), sw.server[j])
		}
		sw.mu.Unlock()
	}
	if after < 20 {
		t.Errorf("only %d definite operations after the first fault: the history does not cover the faults", after)
	}

	initial := map[string]check.Register{}
	final := map[string]check.Register{}
	conn := connectAll(t, c, 10*time.Second)
	for k := range regKeys {
		p := regPath(k)
		initial[p] = check.Register{Exists: true, Data: "init"}
		if _, err := conn.Sync(p); err != nil {
			t.Fatalf("sync %s: %v", p, err)
		}
		data, st, err := conn.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		final[p] = check.Register{Exists: true, Data: string(data), Version: st.Version, Mzxid: st.Mzxid}
	}
	if err := check.SessionReads(hist, initial); err != nil {
		t.Errorf("session reads: %v", err)
	}
	if err := check.NoLostWrites(hist, final); err != nil {
		t.Errorf("lost writes: %v", err)
	}
	viz := filepath.Join(os.TempDir(), fmt.Sprintf("zkraft-%s-%d.html", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano()))
	if err := check.Linearizable(hist, check.LinearizableOptions{Initial: initial, Timeout: 60 * time.Second, VisualizationPath: viz}); err != nil {
		t.Errorf("linearizability (visualization, if any: %s): %v", viz, err)
	}
}
