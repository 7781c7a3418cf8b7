package ensemble

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// snapCount is the ensembles' zoo.cfg snapCount in TestSnapshotCatchUp: a
// snapshot every 50 applied entries, so a few hundred writes take several.
const snapCount = 50

// raftLogBound is the most raft entries a zkraft member may keep in memory
// with snapCount: the entries since its last snapshot (under snapCount)
// plus those kept behind it for slow followers, which must not outgrow
// the snapshot interval either.
const raftLogBound = 3 * snapCount

// burstWrites is how many znodes one burst creates; it also sets a third of
// them and deletes a fifth, about 1.5 entries per node.
const burstWrites = 300

// TestSnapshotCatchUp runs an ensemble that snapshots every snapCount
// entries:
//   - a follower is stopped (SIGTERM) while several hundred writes are made,
//     then restarted: it catches up (srvr Zxid equal to the leader's) and
//     holds exactly the leader's tree, every Stat field included;
//   - a follower is frozen (SIGSTOP) while a client connected to it alone
//     watches nodes, several hundred writes are made (touching the watched
//     nodes), and it is resumed: the client gets every watch event, whether
//     the member catches up from the log or installs a snapshot (which
//     closes its client connections: the client reconnects and re-sets its
//     watches);
//   - on zkraft, every member keeps its raft log under raftLogBound entries
//     (mntr zk_raft_log_entries) and has taken a snapshot; on Apache
//     ZooKeeper, every member has written snapshot files.
func TestSnapshotCatchUp(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := zktest.StartCluster(t, 3, zktest.ClusterOptions{
			Target:      target,
			TickMs:      tickMs,
			SuperDigest: zktest.DigestACLHash(superUser),
			Extra:       map[string]string{"snapCount": strconv.Itoa(snapCount)},
		})
		leader := c.Leader(t)
		writer := connectMember(t, leader, 10*time.Second)
		mustCreate(t, writer, "/snap", []byte("root"), 0)

		// A stopped follower misses several hundred writes.
		lagging := c.Followers(leader)[0]
		lagging.Stop()
		t.Logf("stopped follower %d", lagging.ID)
		writeBurst(t, writer, "/snap/a")
		lagging.Start(t)
		t.Logf("restarted follower %d", lagging.ID)
		requireCaughtUp(t, c, lagging)
		requireConverged(t, c)
		requireLogBounded(t, c)

		// A frozen follower, watched through by a client, misses several
		// hundred more, the watched nodes' changes among them.
		leader = c.Leader(t)
		frozen := c.Followers(leader)[0]
		writer = connectMember(t, leader, 10*time.Second)
		mustCreate(t, writer, "/snap/watched", []byte("v0"), 0)
		watcher, events := frozen.ConnectTimeout(t, 10*time.Second, quiet)
		requireData(t, watcher, "/snap/watched", []byte("v0"))
		_, _, dataW, err := watcher.GetW("/snap/watched")
		if err != nil {
			t.Fatalf("getData watch on member %d: %v", frozen.ID, err)
		}
		ok, _, existsW, err := watcher.ExistsW("/snap/born")
		if err != nil || ok {
			t.Fatalf("exists watch on member %d: exists %v, %v; want a watch on an absent node", frozen.ID, ok, err)
		}
		_, _, childW, err := watcher.ChildrenW("/snap")
		if err != nil {
			t.Fatalf("children watch on member %d: %v", frozen.ID, err)
		}
		frozen.Pause()
		t.Logf("froze follower %d", frozen.ID)
		if _, err := writer.Set("/snap/watched", []byte("v1"), -1); err != nil {
			t.Fatalf("set /snap/watched: %v", err)
		}
		writeBurst(t, writer, "/snap/b")
		mustCreate(t, writer, "/snap/born", []byte("late"), 0)
		frozen.Resume()
		t.Logf("resumed follower %d", frozen.ID)

		want := map[string]zk.EventType{"data": zk.EventNodeDataChanged, "exists": zk.EventNodeCreated, "children": zk.EventNodeChildrenChanged}
		deadline := time.After(20 * time.Second)
		reconnects := 0
		for len(want) > 0 {
			var name string
			var ev zk.Event
			select {
			case ev = <-dataW:
				name, dataW = "data", nil
			case ev = <-existsW:
				name, existsW = "exists", nil
			case ev = <-childW:
				name, childW = "children", nil
			case s := <-events:
				if s.Type == zk.EventSession && s.State == zk.StateDisconnected {
					reconnects++
				}
				if s.Type == zk.EventSession && s.State == zk.StateExpired {
					t.Fatalf("the watcher's session expired while member %d was frozen", frozen.ID)
				}
				continue
			case <-deadline:
				t.Fatalf("watch events not delivered by member %d within 20 s: missing %v (ensemble %s)", frozen.ID, want, c.Modes())
			}
			if ev.Type != want[name] {
				t.Fatalf("%s watch on member %d fired %v (%v); want %v", name, frozen.ID, ev.Type, ev.Err, want[name])
			}
			delete(want, name)
		}
		t.Logf("member %d delivered every watch event (%d disconnections on the way)", frozen.ID, reconnects)
		requireData(t, watcher, "/snap/born", []byte("late"))
		requireCaughtUp(t, c, frozen)
		requireConverged(t, c)
		requireLogBounded(t, c)
	})
}

// writeBurst creates burstWrites znodes under prefix-<i>, sets every third
// and deletes every fifth, one request at a time, each acknowledged.
func writeBurst(t *testing.T, conn *zk.Conn, prefix string) {
	t.Helper()
	start := time.Now()
	n := 0
	for i := 0; i < burstWrites; i++ {
		p := fmt.Sprintf("%s-%04d", prefix, i)
		mustCreate(t, conn, p, []byte(p), 0)
		n++
		if i%3 == 0 {
			if _, err := conn.Set(p, []byte(p+"+"), 0); err != nil {
				t.Fatalf("set %s: %v", p, err)
			}
			n++
		}
		if i%5 == 0 {
			if err := conn.Delete(p, -1); err != nil {
				t.Fatalf("delete %s: %v", p, err)
			}
			n++
		}
	}
	t.Logf("%d writes under %s in %v", n, prefix, time.Since(start).Round(time.Millisecond))
}

// requireCaughtUp syncs a session on m with the leader and requires m's
// srvr Zxid to equal the leader's.
func requireCaughtUp(t *testing.T, c *zktest.Cluster, m *zktest.Member) {
	t.Helper()
	conn := connectMember(t, m, 10*time.Second)
	waitFor(t, 20*time.Second, fmt.Sprintf("member %d Zxid equal to the leader's", m.ID), func() error {
		if _, err := conn.Sync("/"); err != nil {
			return fmt.Errorf("sync on member %d: %w", m.ID, err)
		}
		leader := c.Leader(t)
		lz, err := leader.Zxid()
		if err != nil {
			return err
		}
		mz, err := m.Zxid()
		if err != nil {
			return err
		}
		if mz != lz {
			return fmt.Errorf("member %d Zxid %#x, leader %d Zxid %#x", m.ID, mz, leader.ID, lz)
		}
		return nil
	})
	conn.Close()
}

// mntr returns a member's mntr figures by name (without the zk_ prefix).
func mntr(m *zktest.Member) (map[string]string, error) {
	out, err := m.FourLetter("mntr")
	if err != nil {
		return nil, fmt.Errorf("mntr on member %d: %w", m.ID, err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok {
			kv[strings.TrimPrefix(k, "zk_")] = v
		}
	}
	return kv, nil
}

// requireLogBounded checks that every member snapshots: on zkraft, mntr
// reports a snapshot index and fewer than raftLogBound raft entries kept;
// on Apache ZooKeeper (no raft log), its data directory holds a snapshot
// file beyond the initial one.
func requireLogBounded(t *testing.T, c *zktest.Cluster) {
	t.Helper()
	for _, m := range c.Members {
		if c.Target == zktest.Apache {
			snaps, err := filepath.Glob(filepath.Join(m.DataDir, "version-2", "snapshot.*"))
			if err != nil || len(snaps) < 2 {
				t.Errorf("member %d: snapshot files %v (%v); want at least 2 with snapCount=%d", m.ID, snaps, err, snapCount)
			}
			continue
		}
		kv, err := mntr(m)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := strconv.ParseInt(kv["raft_log_entries"], 10, 64)
		if err != nil {
			t.Fatalf("member %d: mntr zk_raft_log_entries %q: %v", m.ID, kv["raft_log_entries"], err)
		}
		snapIndex, _ := strconv.ParseInt(kv["raft_last_snapshot_index"], 10, 64)
		t.Logf("member %d: raft log %d entries (index %s..%s), last snapshot index %d",
			m.ID, entries, kv["raft_first_index"], kv["raft_last_index"], snapIndex)
		if entries >= raftLogBound {
			t.Errorf("member %d keeps %d raft entries with snapCount=%d; want under %d", m.ID, entries, snapCount, raftLogBound)
		}
		if snapIndex <= 0 {
			t.Errorf("member %d reports no snapshot (zk_raft_last_snapshot_index %q) with snapCount=%d", m.ID, kv["raft_last_snapshot_index"], snapCount)
		}
	}
}
