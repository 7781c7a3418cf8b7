package ensemble

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// TestBasic: one leader and two followers; a write through a follower is
// readable on every member after sync; srvr Zxid converges; the trees are
// identical.
func TestBasic(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		leader := c.Leader(t)
		modes := map[string]int{}
		for _, m := range c.Members {
			modes[m.Mode()]++
		}
		if modes["leader"] != 1 || modes["follower"] != 2 {
			t.Fatalf("srvr modes = %v; want one leader and two followers (%s)", modes, c.Modes())
		}

		follower := c.Followers(leader)[0]
		wconn := connectMember(t, follower, 10*time.Second)
		mustCreate(t, wconn, "/basic", []byte("v1"), 0)
		for i := 0; i < 20; i++ {
			mustCreate(t, wconn, fmt.Sprintf("/basic/n%02d", i), []byte{byte(i)}, 0)
		}
		st, err := wconn.Set("/basic", []byte("v2"), 0)
		if err != nil {
			t.Fatalf("setData through follower %d: %v", follower.ID, err)
		}

		for _, m := range c.Members {
			conn := connectMember(t, m, 10*time.Second)
			requireData(t, conn, "/basic", []byte("v2"))
			_, got, err := conn.Get("/basic")
			if err != nil || got.Mzxid != st.Mzxid || got.Version != 1 || got.NumChildren != 20 {
				t.Fatalf("member %d: stat of /basic = %+v, %v; want mzxid %#x version 1 numChildren 20", m.ID, got, err, st.Mzxid)
			}
			children, _, err := conn.Children("/basic")
			if err != nil || len(children) != 20 {
				t.Fatalf("member %d: children of /basic = %v, %v; want 20", m.ID, children, err)
			}
		}

		zxid := requireZxidsConverge(t, c)
		if zxid < st.Mzxid {
			t.Fatalf("converged srvr Zxid %#x is older than the last write %#x", zxid, st.Mzxid)
		}
		requireConverged(t, c)
	})
}

// TestFollowerReadsOwnWrites: a session reading through the member it wrote
// through sees its writes at once (no sync), and a session on another
// member sees them after sync.
func TestFollowerReadsOwnWrites(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		leader := c.Leader(t)
		fs := c.Followers(leader)
		a := connectMember(t, fs[0], 10*time.Second)
		b := connectMember(t, fs[1], 10*time.Second)
		for i := 0; i < 30; i++ {
			p := fmt.Sprintf("/own%02d", i)
			mustCreate(t, a, p, []byte(p), 0)
			if data, _, err := a.Get(p); err != nil || string(data) != p {
				t.Fatalf("read-your-write %s on follower %d = %q, %v", p, fs[0].ID, data, err)
			}
			if _, err := b.Sync(p); err != nil {
				t.Fatalf("sync on follower %d: %v", fs[1].ID, err)
			}
			if data, _, err := b.Get(p); err != nil || string(data) != p {
				t.Fatalf("after sync, %s on follower %d = %q, %v", p, fs[1].ID, data, err)
			}
		}
		if _, err := a.Create("/own00", nil, 0, openACL); err != zk.ErrNodeExists {
			t.Fatalf("second create through a follower = %v; want node exists", err)
		}
	})
}
