package ensemble

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// requireEphemeralEverywhere checks, on every running member after sync,
// that path exists as an ephemeral of owner (or, if owner is 0, that it
// does not exist).
func requireEphemeralEverywhere(t *testing.T, c *zktest.Cluster, path string, owner int64) {
	t.Helper()
	for _, m := range c.Members {
		if !m.Running() || m.Paused() {
			continue
		}
		conn := connectMember(t, m, 10*time.Second)
		if _, err := conn.Sync(path); err != nil {
			t.Fatalf("sync on member %d: %v", m.ID, err)
		}
		ok, st, err := conn.Exists(path)
		switch {
		case err != nil:
			t.Fatalf("exists %s on member %d: %v", path, m.ID, err)
		case owner == 0 && ok:
			t.Fatalf("%s still exists on member %d (owner %#x)", path, m.ID, st.EphemeralOwner)
		case owner != 0 && (!ok || st.EphemeralOwner != owner):
			t.Fatalf("%s on member %d: exists %v, owner %#x; want an ephemeral of %#x", path, m.ID, ok, st.EphemeralOwner, owner)
		}
		conn.Close()
	}
}

// rawCreateEphemeral creates path as an ephemeral through a raw client.
func rawCreateEphemeral(t *testing.T, c *zktest.RawConn, path string) {
	t.Helper()
	hdr, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Data: []byte("e"),
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	if err != nil || hdr.Err != 0 {
		t.Fatalf("raw create %s = %+v, %v", path, hdr, err)
	}
}

// TestSessions checks session liveness and expiry across members, on one
// ensemble (tickTime 500 ms: session timeouts from 1 s to 10 s).
func TestSessions(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)

		// A client on a follower only pings that follower: its session must
		// live over several timeouts, so liveness reaches the leader.
		t.Run("pinging_client_on_follower_lives", func(t *testing.T) {
			leader := c.Leader(t)
			f := c.Followers(leader)[0]
			var ew expiryWatch
			conn := connectMember(t, f, 2*time.Second, ew.option())
			mustCreate(t, conn, "/s-live", nil, zk.FlagEphemeral)
			id := conn.SessionID()
			time.Sleep(3 * 2 * time.Second) // three session timeouts of pings only
			if ew.Expired() || conn.SessionID() != id {
				t.Fatalf("session %#x on follower %d expired while pinging (now %#x)", id, f.ID, conn.SessionID())
			}
			if _, _, err := conn.Get("/s-live"); err != nil {
				t.Fatalf("get through the pinging session: %v", err)
			}
			requireEphemeralEverywhere(t, c, "/s-live", id)
		})

		// A client that goes silent loses its session; its ephemerals go
		// on every member.
		t.Run("silent_client_expires", func(t *testing.T) {
			leader := c.Leader(t)
			f := c.Followers(leader)[1]
			raw, resp := zktest.DialRaw(t, f.Addr, 0, nil, 2000, false)
			if resp.TimeOut != 2000 {
				t.Fatalf("negotiated timeout %d; want 2000", resp.TimeOut)
			}
			rawCreateEphemeral(t, raw, "/s-silent")
			requireEphemeralEverywhere(t, c, "/s-silent", resp.SessionID)
			// Silence: nothing more is sent on raw.
			check := connectMember(t, leader, 10*time.Second)
			waitFor(t, 15*time.Second, "the silent session's ephemeral is removed", func() error {
				ok, _, err := check.Exists("/s-silent")
				if err != nil {
					return err
				}
				if ok {
					return fmt.Errorf("/s-silent still exists")
				}
				return nil
			})
			requireEphemeralEverywhere(t, c, "/s-silent", 0)
			other := c.Followers(leader)[0]
			_, again := zktest.DialRaw(t, other.Addr, resp.SessionID, resp.Passwd, 2000, false)
			if again.TimeOut != 0 {
				t.Fatalf("reattach of the expired session %#x on member %d = %+v; want refused (timeout 0)", resp.SessionID, other.ID, again)
			}
		})

		// A session moves to another member with its id and password and
		// keeps its ephemerals; a wrong password is refused.
		t.Run("session_moves_between_members", func(t *testing.T) {
			leader := c.Leader(t)
			fs := c.Followers(leader)
			a, resp := zktest.DialRaw(t, fs[0].Addr, 0, nil, 6000, false)
			rawCreateEphemeral(t, a, "/s-move")
			last := a.LastZxid()
			a.Close() // the socket only: the session lives on

			bad := append([]byte(nil), resp.Passwd...)
			bad[0] ^= 0xff
			if c2, r, err := zktest.DialRawRequest(fs[1].Addr, jute.ConnectRequest{TimeOut: 6000, SessionID: resp.SessionID, Passwd: bad, LastZxidSeen: last}); err == nil {
				c2.Close()
				if r.TimeOut != 0 {
					t.Fatalf("reattach with a wrong password = %+v; want refused", r)
				}
			}

			for _, m := range []*zktest.Member{fs[1], leader} {
				// A member that has not yet applied the zxid the session saw
				// closes the connection (the client must try again or
				// elsewhere), as ZooKeeper does: retry until it caught up.
				var b *zktest.RawConn
				var r jute.ConnectResponse
				waitFor(t, 5*time.Second, fmt.Sprintf("reattach session %#x on member %d", resp.SessionID, m.ID), func() error {
					var err error
					b, r, err = zktest.DialRawRequest(m.Addr, jute.ConnectRequest{TimeOut: 6000, SessionID: resp.SessionID, Passwd: resp.Passwd, LastZxidSeen: last})
					return err
				})
				t.Cleanup(b.Close)
				if r.SessionID != resp.SessionID || r.TimeOut <= 0 {
					t.Fatalf("reattach session %#x on member %d = %+v", resp.SessionID, m.ID, r)
				}
				var st jute.StatResponse
				hdr, err := b.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/s-move"}, &st)
				if err != nil || hdr.Err != 0 || st.Stat.EphemeralOwner != resp.SessionID {
					t.Fatalf("exists /s-move on member %d after the move = %+v %+v, %v", m.ID, hdr, st, err)
				}
				if hdr.Zxid < last {
					t.Fatalf("member %d answered at zxid %#x, older than the %#x the session saw", m.ID, hdr.Zxid, last)
				}
				rawCreateEphemeral(t, b, fmt.Sprintf("/s-move-%d", m.ID))
				last = b.LastZxid()
				if m != leader {
					b.Close()
				} else {
					if hdr, err := b.CloseSession(); err != nil || hdr.Err != 0 {
						t.Fatalf("closeSession on member %d = %+v, %v", m.ID, hdr, err)
					}
				}
			}
			for _, p := range []string{"/s-move", fmt.Sprintf("/s-move-%d", fs[1].ID), fmt.Sprintf("/s-move-%d", leader.ID)} {
				requireEphemeralEverywhere(t, c, p, 0)
			}
		})

		// A leader change must not expire the sessions of clients that keep
		// pinging: neither the one connected to the dead leader (it moves)
		// nor the one on a follower.
		t.Run("leader_kill_keeps_sessions", func(t *testing.T) {
			const timeout = 3 * time.Second
			leader := c.Leader(t)
			f := c.Followers(leader)[0]
			var onLeader, onFollower expiryWatch
			cl := connectOrdered(t, c, leader, timeout, onLeader.option())
			cf := connectMember(t, f, timeout, onFollower.option())
			mustCreate(t, cl, "/s-kill-l", nil, zk.FlagEphemeral)
			mustCreate(t, cf, "/s-kill-f", nil, zk.FlagEphemeral)
			idL, idF := cl.SessionID(), cf.SessionID()
			if cl.Server() != leader.Addr {
				t.Fatalf("client meant for the leader connected to %s", cl.Server())
			}
			leader.Kill()
			newLeader := c.Leader(t)
			t.Logf("killed leader %d; member %d leads", leader.ID, newLeader.ID)
			time.Sleep(2 * timeout) // two session timeouts under the new leader
			if onLeader.Expired() || cl.SessionID() != idL {
				t.Fatalf("the session %#x that was on the killed leader expired", idL)
			}
			if onFollower.Expired() || cf.SessionID() != idF {
				t.Fatalf("the session %#x on follower %d expired after the leader change", idF, f.ID)
			}
			if cl.State() != zk.StateHasSession {
				t.Fatalf("client of the killed leader in state %v", cl.State())
			}
			requireEphemeralEverywhere(t, c, "/s-kill-l", idL)
			requireEphemeralEverywhere(t, c, "/s-kill-f", idF)
			leader.Start(t)
			requireEphemeralEverywhere(t, c, "/s-kill-l", idL)
			requireEphemeralEverywhere(t, c, "/s-kill-f", idF)
		})
	})
}
