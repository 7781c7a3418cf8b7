package ensemble

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestPartition simulates partitions with SIGSTOP: a stopped member neither
// answers nor times out anything, as one cut off by the network.
//   - one follower stopped: the other two go on serving writes;
//   - the leader stopped: a new leader is elected and writes go on;
//   - a member alone (the other two stopped) refuses service: srvr says it
//     is not currently serving, its client connections are closed and new
//     sessions refused;
//   - once resumed, every member converges to the same tree.
func TestPartition(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		leader := c.Leader(t)
		fs := c.Followers(leader)

		// One follower stopped: a quorum of two remains.
		fs[0].Pause()
		wl := connectMember(t, leader, 10*time.Second)
		wf := connectMember(t, fs[1], 10*time.Second)
		for i := 0; i < 10; i++ {
			conn := wl
			if i%2 == 1 {
				conn = wf
			}
			p := fmt.Sprintf("/p1-%d", i)
			if _, err := conn.Create(p, []byte(p), 0, openACL); err != nil {
				t.Fatalf("create %s with follower %d stopped: %v (ensemble %s)", p, fs[0].ID, err, c.Modes())
			}
		}
		if m := leader.Mode(); m != "leader" {
			t.Fatalf("leader %d reports mode %q with one follower stopped", leader.ID, m)
		}
		if m := fs[1].Mode(); m != "follower" {
			t.Fatalf("follower %d reports mode %q with the other follower stopped", fs[1].ID, m)
		}
		fs[0].Resume()
		back := connectMember(t, fs[0], 10*time.Second)
		requireData(t, back, "/p1-9", []byte("/p1-9"))

		// The leader stopped: the two others elect a new one.
		leader.Pause()
		newLeader := c.Leader(t)
		if newLeader == leader {
			t.Fatalf("stopped member %d still the leader", leader.ID)
		}
		for _, m := range c.Followers(leader) {
			conn := connectMember(t, m, 10*time.Second)
			p := fmt.Sprintf("/p2-%d", m.ID)
			if _, err := conn.Create(p, []byte(p), 0, openACL); err != nil {
				t.Fatalf("create %s through member %d with the old leader %d stopped: %v (ensemble %s)", p, m.ID, leader.ID, err, c.Modes())
			}
		}
		leader.Resume()
		c.WaitSettled(t)
		requireConverged(t, c)

		// A member alone refuses service.
		lone := c.Leader(t)
		raw, _ := zktest.DialRaw(t, lone.Addr, 0, nil, 10000, false)
		if hdr, err := raw.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/p1-0"}, &jute.StatResponse{}); err != nil || hdr.Err != 0 {
			t.Fatalf("exists on member %d before isolation = %+v, %v", lone.ID, hdr, err)
		}
		others := c.Followers(lone)
		for _, m := range others {
			m.Pause()
		}
		waitFor(t, 15*time.Second, fmt.Sprintf("member %d alone says it is not serving", lone.ID), func() error {
			if mode := lone.Mode(); mode != "not serving" {
				return fmt.Errorf("srvr mode %q", mode)
			}
			return nil
		})
		if err := raw.ExpectClosed(10 * time.Second); err != nil {
			t.Fatalf("client connection of the isolated member %d: %v", lone.ID, err)
		}
		if c2, resp, err := zktest.DialRawRequest(lone.Addr, jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}); err == nil {
			c2.Close()
			if resp.SessionID != 0 && resp.TimeOut > 0 {
				t.Fatalf("isolated member %d granted session %#x", lone.ID, resp.SessionID)
			}
		}
		for _, m := range others {
			m.Resume()
		}
		c.WaitSettled(t)
		w := connectAll(t, c, 10*time.Second)
		mustCreate(t, w, "/p3", []byte("healed"), 0)
		requireConverged(t, c)
	})
}
