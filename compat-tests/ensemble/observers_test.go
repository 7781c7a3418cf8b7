package ensemble

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// startObserverCluster starts 3 voters (ids 1-3) and n observers (4...).
func startObserverCluster(t *testing.T, target zktest.Target, observers int) *zktest.Cluster {
	t.Helper()
	return zktest.StartCluster(t, 3+observers, zktest.ClusterOptions{
		Target:      target,
		TickMs:      tickMs,
		SuperDigest: zktest.DigestACLHash(superUser),
		Observers:   observers,
	})
}

// mustMntr is mntr failing the test on error.
func mustMntr(t *testing.T, m *zktest.Member) map[string]string {
	t.Helper()
	kv, err := mntr(m)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// requireObserverMode checks srvr, mntr and conf on m say observer (and, on
// zkraft, that raft counts 3 voters and the observers as learners).
func requireObserverMode(t *testing.T, target zktest.Target, m *zktest.Member, learners int) {
	t.Helper()
	if mode := m.Mode(); mode != "observer" {
		t.Fatalf("srvr on member %d: Mode %q, want observer", m.ID, mode)
	}
	kv := mustMntr(t, m)
	if kv["server_state"] != "observer" {
		t.Fatalf("mntr on member %d: zk_server_state %q, want observer", m.ID, kv["server_state"])
	}
	conf, err := m.FourLetter("conf")
	if err != nil || !strings.Contains(conf, "\npeerType=1\n") {
		t.Fatalf("conf on member %d: want peerType=1, got %v:\n%s", m.ID, err, conf)
	}
	if target == zktest.Zkraft {
		waitFor(t, 10*time.Second, "raft voters and learners on the observer", func() error {
			kv := mustMntr(t, m)
			if kv["raft_voters"] != "3" || kv["raft_learners"] != strconv.Itoa(learners) {
				return fmt.Errorf("zk_raft_voters %q zk_raft_learners %q, want 3 and %d", kv["raft_voters"], kv["raft_learners"], learners)
			}
			return nil
		})
	}
}

// TestObserver runs 3 voters and 1 observer: srvr and mntr on the observer
// say observer, /zookeeper/config lists it as ZooKeeper does; go-zookeeper
// and kazoo clients on the observer alone write (forwarded), read and get
// the watches that writes through a voter fire. After a restart of every
// voter the observer is still one. Killing the observer
// (SIGKILL) does not disturb the voters: the leader stays, writes go on;
// with a voter killed too, the two voters left still commit (the observer
// never counted for the quorum). A session on the observer lives on its
// pings and expires once the observer is killed. The observer restarts as
// one.
func TestObserver(t *testing.T) {
	script, err := filepath.Abs("kazoo_observer.py")
	if err != nil {
		t.Fatalf("locate kazoo_observer.py: %v", err)
	}
	if out, err := exec.Command(python, "-c", "import kazoo.client").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startObserverCluster(t, target, 1)
		obs := c.Member(4)
		requireObserverMode(t, target, obs, 1)
		leader := c.Leader(t)
		voter := connectMember(t, leader, 10*time.Second)
		mustCreate(t, voter, "/obs", nil, 0)
		requireConfig(t, voter, c)

		// go-zookeeper on the observer alone.
		oc := connectMember(t, obs, 10*time.Second)
		mustCreate(t, oc, "/obs/gozk", []byte("from-observer"), 0)
		requireData(t, oc, "/obs/gozk", []byte("from-observer"))
		requireData(t, voter, "/obs/gozk", []byte("from-observer"))
		mustCreate(t, voter, "/obs/watched", []byte("v0"), 0)
		requireData(t, oc, "/obs/watched", []byte("v0"))
		_, _, ch, err := oc.GetW("/obs/watched")
		if err != nil {
			t.Fatalf("getW on the observer: %v", err)
		}
		if _, err := voter.Set("/obs/watched", []byte("v1"), -1); err != nil {
			t.Fatalf("set through the leader: %v", err)
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged || ev.Path != "/obs/watched" {
				t.Fatalf("watch on the observer: %+v, want NodeDataChanged /obs/watched", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the data watch set on the observer did not fire within 10 s")
		}
		requireData(t, oc, "/obs/watched", []byte("v1"))

		// kazoo on the observer alone; the watched node is changed through
		// a voter once the program says it watches.
		var watching atomic.Bool
		var fired, data string
		onLine := func(line string) {
			t.Log("kazoo: " + line)
			switch {
			case line == "watching":
				watching.Store(true)
			case strings.HasPrefix(line, "fired "):
				fired = line
			case strings.HasPrefix(line, "data "):
				data = line
			}
		}
		p := zktest.StartSuite(t, 60*time.Second, nil, onLine, python, "-u", script, obs.Addr, "/obs")
		waitFor(t, 30*time.Second, "kazoo watching on the observer", func() error {
			select {
			case <-p.Done():
				return nil
			default:
			}
			if !watching.Load() {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		if _, err := voter.Set("/obs/watched", []byte("v2"), -1); err != nil {
			t.Fatalf("set through the leader: %v", err)
		}
		p.Wait(t)
		if fired != "fired CHANGED /obs/watched" || data != "data v2" {
			t.Fatalf("kazoo on the observer saw %q and %q; want the CHANGED event and v2", fired, data)
		}
		requireData(t, voter, "/obs/kazoo", []byte("from-kazoo"))
		requireConverged(t, c)

		// Restart every voter: whichever leads next knows the observer from
		// its own storage and config only, and must not promote it.
		voter.Close()
		for _, m := range c.Members[:3] {
			m.Stop()
		}
		for _, m := range c.Members[:3] {
			m.StartNoWait(t)
		}
		leader = c.WaitSettled(t)
		time.Sleep(3 * time.Second) // time enough for a (wrong) promotion
		requireObserverMode(t, target, obs, 1)
		voter = connectMember(t, leader, 10*time.Second)
		requireData(t, voter, "/obs/kazoo", []byte("from-kazoo"))

		// A session held on the observer alone stays alive through its
		// pings (the observer reports them to the leader) for three
		// timeouts; once the observer is killed it expires.
		short := connectMember(t, obs, 2*time.Second)
		mustCreate(t, short, "/obs/eph", nil, zk.FlagEphemeral)
		sid := short.SessionID()
		time.Sleep(6 * time.Second)
		if _, _, err := short.Get("/obs/eph"); err != nil || short.SessionID() != sid {
			t.Fatalf("session on the observer after 3 timeouts: %v (session %x, was %x)", err, short.SessionID(), sid)
		}
		requireData(t, voter, "/obs/eph", nil)

		// Kill the observer: the voters do not notice.
		obs.Kill()
		c.Remove(obs)
		start := time.Now()
		for i := 0; i < 20; i++ {
			mustCreate(t, voter, fmt.Sprintf("/obs/after-observer-%d", i), nil, 0)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("20 writes with the observer killed took %v", took)
		}
		if now := c.Leader(t); now != leader {
			t.Fatalf("leader changed from %d to %d when the observer was killed", leader.ID, now.ID)
		}
		waitFor(t, 15*time.Second, "the observer's session expired", func() error {
			if ok, _, err := voter.Exists("/obs/eph"); err != nil || ok {
				return fmt.Errorf("/obs/eph exists %v, %v", ok, err)
			}
			return nil
		})
		// Kill a voter too: 2 of the 3 voters still commit.
		down := c.Followers(leader)[0]
		down.Kill()
		c.Remove(down)
		for i := 0; i < 20; i++ {
			mustCreate(t, voter, fmt.Sprintf("/obs/after-voter-%d", i), nil, 0)
		}
		requireEverywhere(t, c, "/obs/after-voter-19", nil)

		// The observer restarts as an observer and catches up.
		obs.Start(t)
		c.Members = append(c.Members, obs)
		requireObserverMode(t, target, obs, 1)
		requireEverywhere(t, c, "/obs/after-voter-19", nil)
	})
}

// TestObserverReconfig adds an observer with reconfig -add
// server.4=...:observer;... (go-zookeeper's IncrementalReconfig): it serves
// clients as an observer and never becomes a voter; reconfig -remove 4
// removes it. Turning a participant into an observer is refused on zkraft.
func TestObserverReconfig(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		admin := connectAll(t, c, 10*time.Second)
		if err := admin.AddAuth("digest", []byte(superUser)); err != nil {
			t.Fatalf("addAuth: %v", err)
		}
		mustCreate(t, admin, "/r", []byte("before"), 0)
		obs := c.AddObserver(t)
		reconfig(t, admin, []string{obs.ServerSpec()}, nil)
		c.WaitSettled(t)
		requireConfig(t, admin, c)
		// Time enough for a (wrong) promotion: six election timeouts.
		time.Sleep(6 * 10 * tickMs * time.Millisecond / 5)
		requireObserverMode(t, target, obs, 1)
		oc := connectMember(t, obs, 10*time.Second)
		requireData(t, oc, "/r", []byte("before"))
		mustCreate(t, oc, "/r/from-observer", []byte("o"), 0)
		requireEverywhere(t, c, "/r/from-observer", []byte("o"))
		oc.Close()

		if target == zktest.Zkraft {
			v := c.Member(3)
			spec := fmt.Sprintf("server.3=127.0.0.1:%d:%d:observer;127.0.0.1:%d", v.PeerPort, v.ElectionPort, v.ClientPort)
			if _, err := admin.IncrementalReconfig([]string{spec}, nil, -1); err != zk.ErrBadArguments {
				t.Fatalf("reconfig turning participant 3 into an observer = %v, want bad arguments", err)
			}
		}

		reconfig(t, admin, nil, []string{strconv.Itoa(obs.ID)})
		c.Remove(obs)
		obs.Stop()
		requireConfig(t, admin, c)
		mustCreate(t, admin, "/r/after", []byte("a"), 0)
		requireEverywhere(t, c, "/r/after", []byte("a"))
		requireConverged(t, c)
	})
}
