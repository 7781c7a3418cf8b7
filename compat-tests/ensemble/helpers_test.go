package ensemble

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// superUser is the digest user the ensembles treat as super (reconfig needs it).
const superUser = "super:s3cret"

// tickMs is the ensembles' tickTime: session timeouts range from 1 s to 10 s.
const tickMs = 500

// targets returns the servers to test: $ZKRAFT_TARGETS when set, otherwise
// zkraft alone (the reference is only used to validate the tests).
func targets() []zktest.Target {
	if strings.TrimSpace(os.Getenv(zktest.TargetsEnv)) == "" {
		return []zktest.Target{zktest.Zkraft}
	}
	return zktest.Targets()
}

// eachTarget runs f as one subtest per target.
func eachTarget(t *testing.T, f func(t *testing.T, target zktest.Target)) {
	t.Helper()
	for _, target := range targets() {
		t.Run(string(target), func(t *testing.T) { f(t, target) })
	}
}

// startCluster starts an ensemble of n members of target.
func startCluster(t *testing.T, target zktest.Target, n int) *zktest.Cluster {
	t.Helper()
	return zktest.StartCluster(t, n, zktest.ClusterOptions{
		Target:      target,
		TickMs:      tickMs,
		SuperDigest: zktest.DigestACLHash(superUser),
	})
}

var openACL = zk.WorldACL(zk.PermAll)

// quiet silences go-zookeeper's log lines (every reconnect of every client
// would be logged); failures report what the test saw instead.
var quiet = zk.WithLogger(nopLogger{})

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connectAll opens a go-zookeeper session over every member of c.
func connectAll(t testing.TB, c *zktest.Cluster, timeout time.Duration, opts ...zktest.ConnOption) *zk.Conn {
	t.Helper()
	conn, _ := c.Connect(t, timeout, append([]zktest.ConnOption{quiet}, opts...)...)
	return conn
}

// waitFor polls cond every 50 ms until it returns nil, failing the test
// with the last error after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSoon is waitFor with two bounds: cond must hold within soft (an
// error, not fatal, when it takes longer, so the test goes on to check
// what follows) and within hard (fatal).
func waitSoon(t testing.TB, soft, hard time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	waitFor(t, hard, what, cond)
	if took := time.Since(start); took > soft {
		t.Errorf("%s: took %v; want under %v", what, took.Round(100*time.Millisecond), soft)
	}
}

// connectMember opens a go-zookeeper session on member m only.
func connectMember(t testing.TB, m *zktest.Member, timeout time.Duration, opts ...zktest.ConnOption) *zk.Conn {
	t.Helper()
	conn, _ := m.ConnectTimeout(t, timeout, append([]zktest.ConnOption{quiet}, opts...)...)
	return conn
}

// orderedHosts is a go-zookeeper HostProvider that tries the servers in a
// fixed order (zk.Connect shuffles the list it passes to Init), so a test
// chooses the member a client starts on.
type orderedHosts struct {
	mu      sync.Mutex
	servers []string // in the order to try
	next    int
	tried   int
}

func (h *orderedHosts) Init(servers []string) error {
	if len(servers) != len(h.servers) {
		return fmt.Errorf("orderedHosts: Init with %v; want the servers %v", servers, h.servers)
	}
	return nil
}

func (h *orderedHosts) Len() int { return len(h.servers) }

func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next%len(h.servers)]
	h.next++
	h.tried++
	return s, h.tried > len(h.servers)
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	h.tried = 0
	h.mu.Unlock()
}

// connectOrdered opens a go-zookeeper session over first, then the other
// members of c in order.
func connectOrdered(t testing.TB, c *zktest.Cluster, first *zktest.Member, timeout time.Duration, opts ...zktest.ConnOption) *zk.Conn {
	t.Helper()
	hosts := []string{first.Addr}
	for _, m := range c.Members {
		if m != first {
			hosts = append(hosts, m.Addr)
		}
	}
	all := append([]zktest.ConnOption{quiet, zk.WithHostProvider(&orderedHosts{servers: hosts})}, opts...)
	conn, _ := zktest.ConnectHosts(t, hosts, timeout, all...)
	return conn
}

// expiryWatch records whether a go-zookeeper connection ever saw its
// session expire; pass its option to the connect call.
type expiryWatch struct {
	mu      sync.Mutex
	expired bool
}

func (w *expiryWatch) option() zktest.ConnOption {
	return zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
			w.mu.Lock()
			w.expired = true
			w.mu.Unlock()
		}
	})
}

func (w *expiryWatch) Expired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired
}

// node is one znode as read from one member.
type node struct {
	Data []byte
	Stat zk.Stat
}

// statFields lists the Stat fields two members must agree on (mtime and
// ctime included: they come from the replicated entry).
func (n node) String() string {
	s := n.Stat
	return fmt.Sprintf("data=%q czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d version=%d cversion=%d aversion=%d ephemeralOwner=%#x dataLength=%d numChildren=%d",
		n.Data, s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren)
}

// readTree syncs conn's member with the leader and reads every znode under
// root (included) with its data and Stat.
func readTree(conn *zk.Conn, root string) (map[string]node, error) {
	if _, err := conn.Sync(root); err != nil {
		return nil, fmt.Errorf("sync %s: %w", root, err)
	}
	tree := map[string]node{}
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := conn.Get(p)
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		tree[p] = node{Data: data, Stat: *st}
		children, _, err := conn.Children(p)
		if err != nil {
			return fmt.Errorf("children of %s: %w", p, err)
		}
		sort.Strings(children)
		for _, ch := range children {
			cp := p + "/" + ch
			if p == "/" {
				cp = "/" + ch
			}
			if err := walk(cp); err != nil {
				return err
			}
		}
		return nil
	}
	return tree, walk(root)
}

// agreedStat is the part of a Stat that every member must agree on: all of
// it, except the mtime of /zookeeper/config, which ZooKeeper sets on each
// member when it applies a configuration (zkraft replicates it).
func agreedStat(path string, st zk.Stat) zk.Stat {
	if path == "/zookeeper/config" {
		st.Mtime = 0
	}
	return st
}

// diffTrees describes up to 10 differences between two trees ("" if none).
func diffTrees(aName string, a map[string]node, bName string, b map[string]node) string {
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []string
	for _, p := range sorted {
		na, inA := a[p]
		nb, inB := b[p]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("%s: only on %s (%v)", p, bName, nb))
		case !inB:
			out = append(out, fmt.Sprintf("%s: only on %s (%v)", p, aName, na))
		case !bytes.Equal(na.Data, nb.Data) || agreedStat(p, na.Stat) != agreedStat(p, nb.Stat):
			out = append(out, fmt.Sprintf("%s:\n  %s: %v\n  %s: %v", p, aName, na, bName, nb))
		}
	}
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... and %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

// requireConverged reads the whole tree from every running member (each
// synced with the leader first) and fails unless all are identical. It
// retries for a while: a member that just restarted may still be catching
// up. It returns the leader's tree.
func requireConverged(t *testing.T, c *zktest.Cluster) map[string]node {
	t.Helper()
	leader := c.Leader(t)
	conns := map[*zktest.Member]*zk.Conn{}
	for _, m := range c.Members {
		if m.Running() && !m.Paused() {
			conns[m] = connectMember(t, m, 10*time.Second)
		}
	}
	var ref map[string]node
	waitFor(t, 20*time.Second, "members converge to identical trees", func() error {
		var err error
		ref, err = readTree(conns[leader], "/")
		if err != nil {
			return fmt.Errorf("leader %d: %w", leader.ID, err)
		}
		for m, conn := range conns {
			if m == leader {
				continue
			}
			tree, err := readTree(conn, "/")
			if err != nil {
				return fmt.Errorf("member %d: %w", m.ID, err)
			}
			if d := diffTrees(fmt.Sprintf("leader %d", leader.ID), ref, fmt.Sprintf("member %d", m.ID), tree); d != "" {
				return fmt.Errorf("trees differ:\n%s", d)
			}
		}
		return nil
	})
	return ref
}

// requireZxidsConverge waits until every running member's srvr reports the
// same Zxid.
func requireZxidsConverge(t *testing.T, c *zktest.Cluster) int64 {
	t.Helper()
	var zxid int64
	waitFor(t, 10*time.Second, "srvr Zxid equal on every member", func() error {
		seen := map[int]int64{}
		for _, m := range c.Members {
			if !m.Running() || m.Paused() {
				continue
			}
			z, err := m.Zxid()
			if err != nil {
				return err
			}
			seen[m.ID] = z
		}
		first := true
		for _, z := range seen {
			if first {
				zxid, first = z, false
			} else if z != zxid {
				return fmt.Errorf("zxids %v", seen)
			}
		}
		return nil
	})
	return zxid
}

// mustCreate creates path with data, failing the test on error.
func mustCreate(t testing.TB, conn *zk.Conn, path string, data []byte, flags int32) {
	t.Helper()
	if _, err := conn.Create(path, data, flags, openACL); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// requireData syncs conn's member and checks path holds want.
func requireData(t testing.TB, conn *zk.Conn, path string, want []byte) {
	t.Helper()
	if _, err := conn.Sync(path); err != nil {
		t.Fatalf("sync %s on %s: %v", path, conn.Server(), err)
	}
	got, _, err := conn.Get(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get %s on %s = %q, %v; want %q", path, conn.Server(), got, err, want)
	}
}
