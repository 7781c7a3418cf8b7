package ensemble

// Helpers of the fault tests (faults_*_test.go): ensembles whose members
// reach each other through fault-injecting proxies, and a register
// workload whose history is checked for linearizability with porcupine
// (used directly: the shared checkers of internal/check were not committed
// when these tests were written).

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

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
				return err
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

type regKind int

const (
	regRead regKind = iota // sync, then getData
	regSet                 // setData with an expected version (-1: any)
)

// regInput is one operation on one key.
type regInput struct {
	Kind regKind
	Key  int
	Val  string // regSet
	Ver  int32  // regSet: expected version, -1 for any
}

// regOutput is what the server answered. Unknown outcomes never get here:
// their operation returns at infinity and carries regOutput{Unknown: true}.
type regOutput struct {
	Unknown    bool
	BadVersion bool   // regSet refused: the version was not Ver
	Val        string // regRead: data read
	Ver        int32  // regRead: version read; regSet: new version
}

// regState is one znode's data and version.
type regState struct {
	Val string
	Ver int32
}

// regModel is a set of versioned registers, partitioned by key. A set of
// unknown outcome is applied at its linearization point; as it returns at
// infinity, the checker may also place it after every other operation,
// which is "never applied".
var regModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(regInput).Key
			by[k] = append(by[k], op)
		}
		keys := make([]int, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return regState{Val: "init", Ver: 0} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		switch in.Kind {
		case regRead:
			return out.Val == s.Val && out.Ver == s.Ver, s
		default:
			matches := in.Ver == -1 || in.Ver == s.Ver
			next := regState{Val: in.Val, Ver: s.Ver + 1}
			switch {
			case out.Unknown:
				if matches {
					return true, next
				}
				return true, s
			case out.BadVersion:
				return !matches, s
			default:
				return matches && out.Ver == next.Ver, next
			}
		}
	},
	Equal: func(a, b any) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		res := fmt.Sprintf("%q@%d", out.Val, out.Ver)
		switch {
		case out.Unknown:
			res = "unknown"
		case out.BadVersion:
			res = "bad version"
		case in.Kind == regSet:
			res = fmt.Sprintf("ok v%d", out.Ver)
		}
		if in.Kind == regRead {
			return fmt.Sprintf("k%d read -> %s", in.Key, res)
		}
		return fmt.Sprintf("k%d set(%q, v%d) -> %s", in.Key, in.Val, in.Ver, res)
	},
}

// regWorkload runs register clients and records their history.
type regWorkload struct {
	start time.Time

	mu       sync.Mutex
	marked   int64                 // w.now() when the test injected its first fault, 0 before
	ops      []porcupine.Operation // synced reads and sets
	observed map[[2]int64]string   // (key, version) -> data, from every definite answer
	problems []string              // session-order and divergence violations
	counts   struct{ ok, bad, unknown, unsynced, expired int }
}

// regOpsPerClient bounds each client's operations; regPace spaces them, so
// that a history spans the faults of a test (about 40 operations a second
// per client) instead of ending before the first one.
const (
	regOpsPerClient = 1500
	regPace         = 25 * time.Millisecond
)

// startRegWorkload creates the keys and starts clients sessions, client i
// starting on member i mod n; each runs until stop is closed, it did
// regOpsPerClient operations, or maxDur passed. wait returns once all
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
	w = &regWorkload{start: time.Now(), observed: map[[2]int64]string{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(maxDur)
	for i := range clients {
		var ew expiryWatch
		conn := connectOrdered(t, c, c.Members[i%len(c.Members)], 4*time.Second, ew.option())
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(i, conn, &ew, done, deadline)
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

// afterMarkLocked counts the definite operations called after markFault
// (all of them before it); w.mu is held.
func (w *regWorkload) afterMarkLocked() int {
	after := 0
	for _, op := range w.ops {
		if op.Call > w.marked && !op.Output.(regOutput).Unknown {
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
		w.mu.Lock()
		defer w.mu.Unlock()
		if got := w.afterMarkLocked(); got < n {
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

// definite reports whether err is a server's answer, so the operation
// certainly did (nil) or did not take effect.
func definite(err error) bool {
	return err == nil || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)
}

func (w *regWorkload) observe(client, key int, ver int32, val string) {
	k := [2]int64{int64(key), int64(ver)}
	if prev, ok := w.observed[k]; ok && prev != val {
		w.problems = append(w.problems, fmt.Sprintf("client %d: k%d version %d holds %q, another answer had %q", client, key, ver, val, prev))
	}
	w.observed[k] = val
}

func (w *regWorkload) client(id int, conn *zk.Conn, ew *expiryWatch, done <-chan struct{}, deadline time.Time) {
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	lastVer := make([]int32, regKeys) // the session's newest version of each key
	for n := 0; n < regOpsPerClient && time.Now().Before(deadline); n++ {
		select {
		case <-done:
			return
		default:
		}
		time.Sleep(regPace)
		key := rng.IntN(regKeys)
		p := regPath(key)
		switch r := rng.IntN(10); {
		case r < 4: // sync + read: linearizable
			call := w.now()
			_, err := conn.Sync(p)
			var data []byte
			var st *zk.Stat
			if err == nil {
				data, st, err = conn.Get(p)
			}
			ret := w.now()
			w.mu.Lock()
			if err == nil {
				w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: regInput{Kind: regRead, Key: key},
					Call: call, Output: regOutput{Val: string(data), Ver: st.Version}, Return: ret})
				w.sessionRead(id, key, lastVer, st.Version, string(data), ew)
				w.counts.ok++
			} else {
				w.counts.unknown++
			}
			w.mu.Unlock()
		case r < 6: // plain read: sequentially consistent only
			data, st, err := conn.Get(p)
			w.mu.Lock()
			if err == nil {
				w.sessionRead(id, key, lastVer, st.Version, string(data), ew)
				w.counts.unsynced++
			}
			w.mu.Unlock()
		default: // set, conditional on the session's last version (or any)
			ver := lastVer[key]
			if r == 9 {
				ver = -1
			}
			val := fmt.Sprintf("c%d-%d", id, n)
			call := w.now()
			st, err := conn.Set(p, []byte(val), ver)
			ret := w.now()
			in := regInput{Kind: regSet, Key: key, Val: val, Ver: ver}
			w.mu.Lock()
			switch {
			case err == nil:
				w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: regOutput{Ver: st.Version}, Return: ret})
				w.observe(id, key, st.Version, val)
				lastVer[key] = max(lastVer[key], st.Version)
				w.counts.ok++
			case errors.Is(err, zk.ErrBadVersion):
				w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: regOutput{BadVersion: true}, Return: ret})
				w.counts.bad++
			default:
				w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: regOutput{Unknown: true}, Return: math.MaxInt64})
				w.counts.unknown++
			}
			w.mu.Unlock()
			if !definite(err) {
				time.Sleep(50 * time.Millisecond) // no busy loop while no member serves
			}
		}
	}
}

// sessionRead checks a read against the session's order (ZooKeeper's
// guarantee for every read: a session never sees a version older than one
// it saw or wrote) and records it; w.mu is held.
func (w *regWorkload) sessionRead(id, key int, lastVer []int32, ver int32, val string, ew *expiryWatch) {
	w.observe(id, key, ver, val)
	if ew.Expired() {
		w.counts.expired++
	} else if ver < lastVer[key] {
		w.problems = append(w.problems, fmt.Sprintf("client %d: k%d read version %d after seeing %d", id, key, ver, lastVer[key]))
	}
	lastVer[key] = max(lastVer[key], ver)
}

// check fails the test unless the history of synced reads and sets is
// linearizable and no session saw its keys go back or diverge. It needs
// some definite operations: a workload that did nothing proves nothing.
func (w *regWorkload) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("register history: %d ops (%d ok, %d bad version, %d unknown), %d unsynced reads, %d reads after a session expiry",
		len(w.ops), w.counts.ok, w.counts.bad, w.counts.unknown, w.counts.unsynced, w.counts.expired)
	if len(w.problems) > 0 {
		t.Errorf("session order / divergence violations:\n%s", strings.Join(w.problems, "\n"))
	}
	after := 0
	if w.marked > 0 {
		after = w.afterMarkLocked()
	}
	t.Logf("register history: %d definite operations called after the first fault", after)
	if after < 20 {
		t.Errorf("only %d definite operations after the first fault: the history does not cover the faults", after)
	}
	res, info := porcupine.CheckOperationsVerbose(regModel, w.ops, 60*time.Second)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("zkraft-%s-%d.html", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano()))
		if err := porcupine.VisualizePath(regModel, info, path); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Errorf("register history is not linearizable (visualization: %s)", path)
	default:
		t.Errorf("linearizability check did not finish within 60 s (%d operations)", len(w.ops))
	}
}
