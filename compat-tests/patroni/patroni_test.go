package patroni

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// Bounds of the waits (Patroni's ttl is 10 s).
const (
	bootstrapTimeout = 60 * time.Second // initdb, leader, pg_basebackup, streaming
	failoverTimeout  = 3 * ttl * time.Second
	rejoinTimeout    = 60 * time.Second // crash recovery, pg_rewind, streaming
	keyWatch         = 3 * ttl * time.Second / 2
)

// targets returns the servers to test: $ZKRAFT_TARGETS when set, otherwise
// zkraft alone (the reference only validates the test).
func targets() []zktest.Target {
	if strings.TrimSpace(os.Getenv(zktest.TargetsEnv)) == "" {
		return []zktest.Target{zktest.Zkraft}
	}
	return zktest.Targets()
}

func TestPatroniFailover(t *testing.T) {
	for _, target := range targets() {
		t.Run(string(target), func(t *testing.T) { testFailover(t, target) })
	}
}

// waitFor polls cond every 200 ms until it returns nil, failing the test
// with the last error after d; it returns the time it took.
func waitFor(t *testing.T, d time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: not reached within %v: %v", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func testFailover(t *testing.T, target zktest.Target) {
	checkPrereqs(t)
	cred := runAs(t)
	// tickTime 500: session timeouts up to 10 s, Patroni's ttl.
	c := zktest.StartCluster(t, 3, zktest.ClusterOptions{Target: target, TickMs: 500})

	base := t.TempDir()
	if cred != nil {
		// t.TempDir's directories are 0700 root: let postgres traverse them.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	ports, err := freeport.Ports(4)
	if err != nil {
		t.Fatal(err)
	}
	scope := fmt.Sprintf("pg%d", time.Now().UnixNano()%1e6)
	nodes := []*node{
		newNode(t, base, scope, "node1", c.Addrs(), ports[0], ports[1], cred),
		newNode(t, base, scope, "node2", c.Addrs(), ports[2], ports[3], cred),
	}
	t.Cleanup(func() { stopNodes(t, nodes) })

	// node1 first, so that it bootstraps; node2 then clones it.
	nodes[0].start(t)
	waitFor(t, bootstrapTimeout, "node1 bootstraps as leader", nodes[0].isLeader)
	nodes[1].start(t)
	primary, replica := nodes[0], nodes[1]
	waitFor(t, bootstrapTimeout, "node2 streams from node1", func() error { return primary.streamsTo(replica) })

	conn, _ := c.Connect(t, 10*time.Second, zk.WithLogger(nopLogger{}))
	leaderPath := "/service/" + scope + "/leader"
	if data, _, err := conn.Get(leaderPath); err != nil || string(data) != primary.name {
		t.Fatalf("leader key %s = %q, %v; want %q", leaderPath, data, err, primary.name)
	}

	// A row, replicated before the crash (replication is asynchronous).
	if _, err := primary.psql("CREATE TABLE ha (id int PRIMARY KEY, v text); INSERT INTO ha VALUES (1, 'before failover')"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "row replicated to node2", func() error { return hasRow(replica) })

	// Crash the primary: Patroni and PostgreSQL.
	primary.kill(t)
	took := waitFor(t, failoverTimeout, "node2 promoted", replica.isLeader)
	if took < time.Duration(ttl/2)*time.Second {
		// The dead primary's session holds the key until it expires.
		t.Errorf("node2 promoted %v after the crash, before the old session could expire (ttl %d s)", took, ttl)
	}
	if err := hasRow(replica); err != nil {
		t.Fatalf("after failover: %v", err)
	}
	if data, _, err := conn.Get(leaderPath); err != nil || string(data) != replica.name {
		t.Fatalf("leader key %s = %q, %v; want %q", leaderPath, data, err, replica.name)
	}
	// GET /leader answers 200 as soon as Patroni has run pg_ctl promote
	// (role master), which can be before PostgreSQL leaves recovery.
	waitFor(t, 10*time.Second, "node2 accepts writes", func() error {
		return replica.psqlIs("SELECT pg_is_in_recovery()", "f")
	})
	if _, err := replica.psql("INSERT INTO ha VALUES (2, 'after failover')"); err != nil {
		t.Fatal(err)
	}

	// The old primary pg_rewinds from the new one only once the new one's
	// member key shows its post-promote CHECKPOINT (no
	// "checkpoint_after_promote": false). Patroni 3.0 learns of that change
	// only through its child watch on members/ (the new primary deletes and
	// recreates its key), and its ZooKeeper cluster loader can drop that
	// notification: _cluster_loader ends with
	// "self._fetch_cluster = member.index == -1", which clears a
	// _fetch_cluster that the watch set during the load, and the fired watch
	// is not set again until some other watched key changes. A node started
	// after the checkpoint reads the final key at its first load.
	waitFor(t, 30*time.Second, "node2 publishes its post-promote checkpoint", func() error {
		return checkpointPublished(conn, "/service/"+scope+"/members/"+replica.name)
	})

	// The old primary comes back as a replica of the new one.
	primary.start(t)
	primary, replica = replica, primary
	waitFor(t, rejoinTimeout, "node1 rejoins streaming from node2", func() error { return primary.streamsTo(replica) })
	waitFor(t, 10*time.Second, "node1 has both rows", func() error {
		return replica.psqlIs("SELECT count(*) FROM ha", "2")
	})

	// Crash the ensemble's leader, then, unless the primary's session was
	// on it, the member the session is on: each time the session moves to
	// another member and keeps the leader key; the primary is neither
	// demoted nor replaced.
	_, stat, err := conn.Get(leaderPath)
	if err != nil {
		t.Fatal(err)
	}
	owner := stat.EphemeralOwner
	host := sessionHost(t, c, owner)
	zkLeader := c.Leader(t)
	t.Logf("primary's session 0x%x is on member %d; ensemble leader is member %d", owner, host.ID, zkLeader.ID)
	keepsKey(t, c, conn, leaderPath, owner, primary, replica, zkLeader, "ensemble leader")
	if host != zkLeader {
		keepsKey(t, c, conn, leaderPath, owner, primary, replica, sessionHost(t, c, owner), "member holding the primary's session")
	}
}

// sessionHost returns the member whose cons lists session sid (bounded
// wait: the client may be between members).
func sessionHost(t *testing.T, c *zktest.Cluster, sid int64) *zktest.Member {
	t.Helper()
	want := fmt.Sprintf("sid=0x%x,", sid)
	var host *zktest.Member
	waitFor(t, 2*ttl*time.Second, fmt.Sprintf("find the member holding session 0x%x", sid), func() error {
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			if out, err := m.FourLetter("cons"); err == nil && strings.Contains(out, want) {
				host = m
				return nil
			}
		}
		return fmt.Errorf("no member's cons lists %s", want)
	})
	return host
}

// keepsKey kills -9 victim, checks for keyWatch that the leader key stays
// primary's, owned by session owner, and that primary keeps its timeline
// and stays leader, then restarts victim and checks replication.
func keepsKey(t *testing.T, c *zktest.Cluster, conn *zk.Conn, leaderPath string, owner int64, primary, replica *node, victim *zktest.Member, what string) {
	t.Helper()
	before, err := primary.status()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing member %d (%s)", victim.ID, what)
	victim.Kill()
	reads, failures := 0, 0
	deadline := time.Now().Add(keyWatch)
	for time.Now().Before(deadline) {
		data, stat, err := conn.Get(leaderPath)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			t.Fatalf("leader key %s gone after the crash of member %d (%s)", leaderPath, victim.ID, what)
		case err != nil:
			failures++ // the test's own session moving to another member
		case string(data) != primary.name || stat.EphemeralOwner != owner:
			t.Fatalf("leader key changed after the crash of member %d (%s): %q owned by 0x%x, was %q owned by 0x%x",
				victim.ID, what, data, stat.EphemeralOwner, primary.name, owner)
		default:
			reads++
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("leader key read %d times unchanged over %v (%d failed reads)", reads, keyWatch, failures)
	if reads < 10 {
		t.Fatalf("only %d successful reads of the leader key in %v", reads, keyWatch)
	}
	// A read after sync: the latest state, not a lagging member's.
	if _, err := conn.Sync(leaderPath); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if data, stat, err := conn.Get(leaderPath); err != nil || string(data) != primary.name || stat.EphemeralOwner != owner {
		t.Fatalf("leader key after sync: %q, %+v, %v; want %q owned by 0x%x", data, stat, err, primary.name, owner)
	}
	if err := primary.isLeader(); err != nil {
		t.Fatalf("after the crash of member %d (%s): %v", victim.ID, what, err)
	}
	after, err := primary.status()
	if err != nil {
		t.Fatal(err)
	}
	if after.Timeline != before.Timeline {
		t.Fatalf("primary timeline went from %d to %d: it was demoted or failed over", before.Timeline, after.Timeline)
	}
	victim.Start(t)
	waitFor(t, 20*time.Second, replica.name+" still streams from "+primary.name, func() error { return primary.streamsTo(replica) })
	if _, err := primary.psql(fmt.Sprintf("INSERT INTO ha SELECT max(id)+1, 'after the crash of member %d' FROM ha", victim.ID)); err != nil {
		t.Fatal(err)
	}
}

// checkpointPublished reports whether the member key at path is a primary's
// whose post-promote checkpoint is done: role master or primary, and no
// checkpoint_after_promote field (Patroni writes false until then).
func checkpointPublished(conn *zk.Conn, path string) error {
	data, _, err := conn.Get(path)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s: %w: %s", path, err, data)
	}
	if role := m["role"]; role != "master" && role != "primary" {
		return fmt.Errorf("%s: role %v: %s", path, role, data)
	}
	if _, ok := m["checkpoint_after_promote"]; ok {
		return fmt.Errorf("%s: post-promote checkpoint not done: %s", path, data)
	}
	return nil
}

// hasRow checks that row 1 is on n.
func hasRow(n *node) error { return n.psqlIs("SELECT v FROM ha WHERE id = 1", "before failover") }

// psqlIs runs query on n and checks that its output is want.
func (n *node) psqlIs(query, want string) error {
	out, err := n.psql(query)
	if err != nil {
		return err
	}
	if out != want {
		return fmt.Errorf("%s: %s = %q, want %q", n.name, query, out, want)
	}
	return nil
}

// stopNodes stops every node in parallel (bounded), fails the test if a
// process is left, and logs each node's output tail if the test failed.
func stopNodes(t *testing.T, nodes []*node) {
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.stop(15 * time.Second)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", nodes[i].name, err)
		}
	}
	if t.Failed() {
		for _, n := range nodes {
			t.Logf("tail of %s (%s):\n%s", n.name, n.logPath, n.logTail(80))
		}
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
