package ensemble

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// configLine is a /zookeeper/config member line in ZooKeeper's format.
var configLine = regexp.MustCompile(`^server\.(\d+)=127\.0\.0\.1:(\d+):(\d+):(participant|observer);127\.0\.0\.1:(\d+)$`)

// requireConfig reads /zookeeper/config (after sync) and checks it lists
// exactly the members of c, each as server.N=host:peer:election:role;host:client
// (role participant or observer), plus a version=<hex> line. It returns the
// version.
func requireConfig(t *testing.T, conn *zk.Conn, c *zktest.Cluster) int64 {
	t.Helper()
	if _, err := conn.Sync("/zookeeper/config"); err != nil {
		t.Fatalf("sync /zookeeper/config: %v", err)
	}
	data, st, err := conn.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("get /zookeeper/config: %v", err)
	}
	var want []string
	for _, m := range c.Members {
		role := "participant"
		if m.Observer {
			role = "observer"
		}
		want = append(want, fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", m.ID, m.PeerPort, m.ElectionPort, role, m.ClientPort))
	}
	sort.Strings(want)
	var got []string
	version := int64(-1)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		switch {
		case strings.HasPrefix(line, "version="):
			v, err := strconv.ParseInt(strings.TrimPrefix(line, "version="), 16, 64)
			if err != nil {
				t.Fatalf("/zookeeper/config version line %q: %v", line, err)
			}
			version = v
		case configLine.MatchString(line):
			got = append(got, line)
		default:
			t.Fatalf("/zookeeper/config has a line %q not in ZooKeeper's format:\n%s", line, data)
		}
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("/zookeeper/config lists\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if version <= 0 {
		t.Fatalf("/zookeeper/config has no version line:\n%s", data)
	}
	if version != st.Mzxid {
		t.Fatalf("/zookeeper/config version=%x; want the zxid of its last change %x", version, st.Mzxid)
	}
	return version
}

// reconfig runs an incremental reconfig, retrying (bounded) while the
// ensemble answers that the new configuration has no quorum yet: a member
// that has just started may still be connecting to the leader.
func reconfig(t *testing.T, conn *zk.Conn, joining, leaving []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := conn.IncrementalReconfig(joining, leaving, -1)
		if err == nil {
			return
		}
		// go-zookeeper has no names for these codes: NewConfigNoQuorum (-13)
		// and ReconfigInProgress (-14).
		retry := err.Error() == "unknown error: -13" || err.Error() == "unknown error: -14"
		if !retry || time.Now().After(deadline) {
			t.Fatalf("reconfig joining %v leaving %v: %v", joining, leaving, err)
		}
		t.Logf("reconfig joining %v leaving %v: %v; retrying", joining, leaving, err)
		time.Sleep(500 * time.Millisecond)
	}
}

// requireEverywhere checks that every member of c has path with data, after
// sync.
func requireEverywhere(t *testing.T, c *zktest.Cluster, path string, data []byte) {
	t.Helper()
	for _, m := range c.Members {
		conn := connectMember(t, m, 10*time.Second)
		requireData(t, conn, path, data)
		conn.Close()
	}
}

// TestMembership grows an ensemble from 3 to 5 members with reconfig -add
// and shrinks it back to 3 with reconfig -remove; writes made before,
// between and after are seen by every member, and /zookeeper/config always
// lists the current members.
func TestMembership(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		admin := connectAll(t, c, 10*time.Second)
		if err := admin.AddAuth("digest", []byte(superUser)); err != nil {
			t.Fatalf("addAuth: %v", err)
		}
		mustCreate(t, admin, "/m-three", []byte("3"), 0)
		v3 := requireConfig(t, admin, c)

		// Non-super clients may not reconfigure.
		other := connectAll(t, c, 10*time.Second)
		if _, err := other.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("reconfig without the super user = %v; want not authenticated", err)
		}

		for i := 0; i < 2; i++ {
			m := c.AddMember(t)
			reconfig(t, admin, []string{m.ServerSpec()}, nil)
			t.Logf("added member %d (%s)", m.ID, c.Modes())
		}
		c.WaitSettled(t)
		v5 := requireConfig(t, admin, c)
		if v5 <= v3 {
			t.Fatalf("config version went from %x to %x", v3, v5)
		}
		mustCreate(t, admin, "/m-five", []byte("5"), 0)
		requireEverywhere(t, c, "/m-three", []byte("3"))
		requireEverywhere(t, c, "/m-five", []byte("5"))
		requireConverged(t, c)

		for _, id := range []int{5, 4} {
			m := c.Member(id)
			reconfig(t, admin, nil, []string{strconv.Itoa(id)})
			c.Remove(m)
			m.Stop()
			t.Logf("removed member %d (%s)", id, c.Modes())
		}
		c.WaitSettled(t)
		// admin may have been on a removed member: a fresh session.
		admin = connectAll(t, c, 10*time.Second)
		vBack := requireConfig(t, admin, c)
		if vBack <= v5 {
			t.Fatalf("config version went from %x to %x", v5, vBack)
		}
		mustCreate(t, admin, "/m-back", []byte("3"), 0)
		for _, p := range []string{"/m-three", "/m-five", "/m-back"} {
			data := map[string]string{"/m-three": "3", "/m-five": "5", "/m-back": "3"}[p]
			requireEverywhere(t, c, p, []byte(data))
		}
		requireConverged(t, c)
		requireZxidsConverge(t, c)
	})
}

// TestRemoveLeader removes the current leader with reconfig: the reconfig
// itself succeeds even though it costs the ensemble its leader, the others
// elect a new one, /zookeeper/config lists the two remaining members, and
// writes go on.
func TestRemoveLeader(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		leader := c.Leader(t)
		t.Cleanup(leader.Stop)
		var hosts []string
		for _, m := range c.Members {
			if m != leader {
				hosts = append(hosts, m.Addr)
			}
		}
		admin, _ := zktest.ConnectHosts(t, hosts, 10*time.Second, quiet)
		if err := admin.AddAuth("digest", []byte(superUser)); err != nil {
			t.Fatalf("addAuth: %v", err)
		}
		mustCreate(t, admin, "/before-removal", []byte("b"), 0)
		reconfig(t, admin, nil, []string{strconv.Itoa(leader.ID)})
		c.Remove(leader)
		requireConfig(t, admin, c)
		if now := c.Leader(t); now == leader {
			t.Fatalf("member %d still leads after its removal", leader.ID)
		}
		mustCreate(t, admin, "/after-removal", []byte("a"), 0)
		requireEverywhere(t, c, "/before-removal", []byte("b"))
		requireEverywhere(t, c, "/after-removal", []byte("a"))
	})
}
