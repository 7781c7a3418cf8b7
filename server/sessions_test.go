package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
)

// ensembleLeader waits until exactly one of servers reports itself leader
// and returns its index.
func ensembleLeader(t *testing.T, servers []*Server) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lead := -1
		n := 0
		for i, s := range servers {
			if s.lead.isLeader() {
				lead, n = i, n+1
			}
		}
		if n == 1 {
			return lead
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no single leader within 10s")
	return -1
}

// TestSessionEndEndsItsConnectionsOnEveryMember: when a session is closed
// through the log, by a client that attached to it on another member or by
// the leader's expiry, every member that holds a connection of the session
// closes it, and the client's reconnect learns that the session expired.
func TestSessionEndEndsItsConnectionsOnEveryMember(t *testing.T) {
	servers, _ := startEnsemble(t, 3, nil)
	lead := ensembleLeader(t, servers)
	follower := func(k int) int { return (lead + 1 + k) % len(servers) }
	tests := []struct {
		name   string
		holder int  // member holding the first client's connection
		closer int  // member where a second client attaches and closes; -1: the leader expires the session
		expire bool // the leader expires the session instead
	}{
		{"closed on a follower, held on another follower", follower(0), follower(1), false},
		{"closed on the leader, held on a follower", follower(0), lead, false},
		{"closed on a follower, held on the leader", lead, follower(0), false},
		{"expired by the leader, held on a follower", follower(1), -1, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holder := servers[tt.holder]
			a, resp := zktest.DialRaw(t, holder.Addr().String(), 0, nil, 30000, false)
			a.SetTimeout(5 * time.Second)
			path := "/eph" + string(rune('a'+i))
			hdr, err := a.Call(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: openACL(), Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
			require.NoError(t, err)
			require.Zero(t, hdr.Err)

			if tt.expire {
				leader := servers[lead]
				require.Eventually(t, func() bool { _, ok := leader.sm.session(resp.SessionID); return ok },
					5*time.Second, 10*time.Millisecond)
				leader.tracker.SetClosing(resp.SessionID)
				leader.lead.proposeExpiry(resp.SessionID, leader.sm.sessionConn(resp.SessionID))
			} else {
				var b *zktest.RawConn
				require.Eventually(t, func() bool {
					// The closer's member may not have applied the session yet.
					c, r, err := zktest.DialRawRequest(servers[tt.closer].Addr().String(), jute.ConnectRequest{
						TimeOut: 30000, SessionID: resp.SessionID, Passwd: resp.Passwd, LastZxidSeen: a.LastZxid()})
					if err != nil || r.TimeOut == 0 {
						return false
					}
					b = c
					return true
				}, 5*time.Second, 20*time.Millisecond)
				t.Cleanup(b.Close)
				hdr, err := b.CloseSession()
				require.NoError(t, err)
				require.Zero(t, hdr.Err)
			}

			require.NoError(t, a.ExpectClosed(10*time.Second),
				"the first client's connection on member %d must end once the session is gone", holder.cfg.ServerID)
			again, r := zktest.DialRaw(t, holder.Addr().String(), resp.SessionID, resp.Passwd, 30000, false)
			again.Close()
			require.Zero(t, r.TimeOut, "reattach of the closed session must be refused (session expired)")
			for _, s := range servers {
				require.Eventually(t, func() bool { _, ok := s.sm.session(resp.SessionID); return !ok },
					5*time.Second, 10*time.Millisecond, "session still on member %d", s.cfg.ServerID)
			}
		})
	}
}

func openACL() []jute.ACL {
	return []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
}

// TestNewLeaderResetsTrackerBeforeExpiring: a member that becomes leader
// holds a tracker no liveness report refreshed while it followed. The expiry
// loop, run at the worst moment of onLeaderChange (between the tracker reset
// and the leader flag), must not propose the expiry of a live session.
func TestNewLeaderResetsTrackerBeforeExpiring(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1_700_000_000, 0))
	cfg := Default()
	cfg.ClientPort = 0
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.DataDir = t.TempDir()
	cfg.AdminEnabled = false
	s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	s.tracker = session.NewTracker(clock, int64(cfg.TickTimeMs))
	s.lead.tracker = s.tracker
	require.NoError(t, s.Start())
	t.Cleanup(func() { require.NoError(t, s.Stop()) })
	c, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
	t.Cleanup(c.Close)
	id := resp.SessionID
	require.NotZero(t, id)

	// This member now follows: its tracker hears of nobody's traffic while
	// the clock runs far past every session timeout.
	s.lead.leader.Store(false)
	clock.Advance(time.Hour)

	var proposed []int64
	hookRan := false
	s.lead.interleave = func() {
		hookRan = true
		proposed = s.lead.expiryRound(clock.Now())
	}
	st := s.node.Status()
	s.onLeaderChange(true, st.ID, st.Term)
	require.True(t, hookRan)
	require.Empty(t, proposed, "expiry proposed from the stale tracker of a new leader")
	require.Empty(t, s.lead.expiryRound(clock.Now()), "expiry proposed right after the reset")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.node.ReadIndex(ctx) // every proposal made so far is applied
	require.NoError(t, err)
	_, ok := s.sm.session(id)
	require.True(t, ok, "live session expired by a new leader")
}

// fenceHooks records expiry refusals and touches.
type fenceHooks struct {
	nopHooks
	refused []int64
	touched []int64
}

func (h *fenceHooks) expiryRefused(s session.Session) { h.refused = append(h.refused, s.ID) }
func (h *fenceHooks) sessionTouched(id int64)         { h.touched = append(h.touched, id) }

// TestExpiryIsFencedWhenApplied: an expire entry carries the deciding
// leader's term and the session's connection as that leader saw it; apply
// refuses it when the session attached since or the term is not the entry's
// own, so a live, just-reattached session is never expired.
func TestExpiryIsFencedWhenApplied(t *testing.T) {
	const id = 7
	expire := func(term, conn uint64) *entry {
		return &entry{Type: entryExpireSession, SessionID: id, Body: jute.Marshal(&expireRecord{Term: term, ConnID: conn})}
	}
	attach := func(conn uint64) *entry { return &entry{Type: entryAttachSession, SessionID: id, ConnID: conn} }
	type step struct {
		e    *entry
		term uint64 // raft term of the entry
	}
	tests := []struct {
		name      string
		steps     []step // after createSession of id on connection 1, term 2
		wantAlive bool
	}{
		{"expiry decided on the current connection applies", []step{{expire(2, 1), 2}}, false},
		{"session attached after the decision stays", []step{{attach(2), 2}, {expire(2, 1), 2}}, true},
		{"expiry decided after the attach applies", []step{{attach(2), 2}, {expire(2, 2), 2}}, false},
		{"expiry of a leader whose term ended stays refused", []step{{expire(2, 1), 3}}, true},
		{"entry claiming a later term is refused", []step{{expire(3, 1), 2}}, true},
		{"expiry written before the fence applies", []step{{&entry{Type: entryExpireSession, SessionID: id}, 5}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fenceHooks{}
			sm := newStateMachine(newTestSM(t).treeOpts, newWatchManager(), h, zerolog.New(zerolog.NewTestWriter(t)))
			index := uint64(0)
			apply := func(e *entry, term uint64) {
				enc := jute.NewEncoder(nil)
				e.Encode(enc)
				index++
				sm.Apply(index, term, enc.Bytes())
			}
			apply(&entry{Type: entryCreateSession, SessionID: id, ConnID: 1,
				Body: jute.Marshal(&sessionRecord{ID: id, TimeoutMs: 4000, Password: make([]byte, 16)})}, 2)
			for _, st := range tt.steps {
				apply(st.e, st.term)
			}
			_, alive := sm.session(id)
			require.Equal(t, tt.wantAlive, alive)
			if tt.wantAlive {
				require.Equal(t, []int64{id}, h.refused, "the leader must track the session afresh")
			} else {
				require.Empty(t, h.refused)
			}
		})
	}
}

// TestAttachTouchesTrackerBeforeConnectionChanges: the leader reads a
// session's connection before asking its tracker a second time
// (sessionLeader.expiryRound); for that to fence every attach, an attach must refresh the
// tracker before the new connection is visible in the state.
func TestAttachTouchesTrackerBeforeConnectionChanges(t *testing.T) {
	h := &fenceHooks{}
	sm := newStateMachine(newTestSM(t).treeOpts, newWatchManager(), h, zerolog.New(zerolog.NewTestWriter(t)))
	var connAtTouch []uint64
	touch := &touchProbe{fenceHooks: h, onTouch: func(id int64) { connAtTouch = append(connAtTouch, sm.sessionConn(id)) }}
	sm.hooks = touch
	for i, e := range []*entry{
		{Type: entryCreateSession, SessionID: 7, ConnID: 1, Body: jute.Marshal(&sessionRecord{ID: 7, TimeoutMs: 4000, Password: make([]byte, 16)})},
		{Type: entryAttachSession, SessionID: 7, ConnID: 2},
	} {
		enc := jute.NewEncoder(nil)
		e.Encode(enc)
		sm.Apply(uint64(i+1), 1, enc.Bytes())
	}
	require.Equal(t, []uint64{1}, connAtTouch, "the touch must come while the old connection is still current")
	require.Equal(t, uint64(2), sm.sessionConn(7))
}

type touchProbe struct {
	*fenceHooks
	onTouch func(id int64)
}

func (p *touchProbe) sessionTouched(id int64) { p.onTouch(id) }

// TestLeaderExpiryEndsFollowerConnection: a client keeps pinging its
// follower, but that follower's liveness reports do not reach the leader
// (its leader address is wrong), so the leader expires the session. The
// follower applies the expiry and must end the client's connection, so the
// client learns its session is gone instead of being answered forever.
func TestLeaderExpiryEndsFollowerConnection(t *testing.T) {
	servers, _ := startEnsemble(t, 3, func(cfg *Config) { cfg.TickTimeMs = 100 }) // sessions of 0.2 s to 2 s
	lead := ensembleLeader(t, servers)
	f := servers[(lead+1)%len(servers)]

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := dead.Addr().(*net.TCPAddr).Port
	require.NoError(t, dead.Close())
	f.memberMu.Lock()
	cut := make(map[uint64]Member, len(f.memberSet))
	for id, m := range f.memberSet {
		if id == servers[lead].cfg.ServerID {
			m.ElectionPort = deadPort
		}
		cut[id] = m
	}
	f.memberSet = cut
	f.memberMu.Unlock()

	a, resp := zktest.DialRaw(t, f.Addr().String(), 0, nil, 1000, false)
	require.Equal(t, int32(1000), resp.TimeOut)
	a.SetTimeout(2 * time.Second)
	closed := make(chan error, 1)
	go func() {
		for {
			if err := a.Ping(); err != nil {
				closed <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	select {
	case err := <-closed:
		require.True(t, zktest.IsClosed(err), "the pinging client's connection must be closed, got %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the follower kept serving a session the leader expired")
	}
	again, r := zktest.DialRaw(t, f.Addr().String(), resp.SessionID, resp.Passwd, 1000, false)
	again.Close()
	require.Zero(t, r.TimeOut, "reattach of the expired session must be refused")
}

// TestReattachAfterExpiryDecisionKeepsSession: the leader decides to expire
// a session (its tracker saw no traffic), then the session's client
// reattaches on a follower before the expire entry is applied. The entry,
// fenced by the connection the leader saw, must be refused: the session,
// its ephemeral and its new connection stay, and the leader tracks it again.
func TestReattachAfterExpiryDecisionKeepsSession(t *testing.T) {
	servers, _ := startEnsemble(t, 3, nil)
	lead := ensembleLeader(t, servers)
	leader, f0, f1 := servers[lead], servers[(lead+1)%3], servers[(lead+2)%3]

	a, resp := zktest.DialRaw(t, f0.Addr().String(), 0, nil, 30000, false)
	hdr, err := a.Call(jute.OpCreate, &jute.CreateRequest{Path: "/held", ACL: openACL(), Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	id := resp.SessionID
	require.Eventually(t, func() bool { _, ok := leader.sm.session(id); return ok }, 5*time.Second, 10*time.Millisecond)

	// The leader's decision, as sessionLeader.expiryRound makes it.
	fence := leader.sm.sessionConn(id)
	leader.tracker.SetClosing(id)

	// The client moves to another follower meanwhile.
	a.Close()
	var b *zktest.RawConn
	require.Eventually(t, func() bool {
		c, r, err := zktest.DialRawRequest(f1.Addr().String(), jute.ConnectRequest{
			TimeOut: 30000, SessionID: id, Passwd: resp.Passwd, LastZxidSeen: a.LastZxid()})
		if err != nil || r.TimeOut == 0 {
			return false
		}
		b = c
		return true
	}, 5*time.Second, 20*time.Millisecond)
	t.Cleanup(b.Close)

	leader.lead.proposeExpiry(id, fence)
	// A write of the new connection is ordered after the expire entry.
	hdr, err = b.Call(jute.OpCreate, &jute.CreateRequest{Path: "/after", ACL: openACL(), Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	require.NoError(t, err, "the reattached connection must stay")
	require.Zero(t, hdr.Err, "a write of the reattached session")
	var st jute.StatResponse
	hdr, err = b.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/held"}, &st)
	require.NoError(t, err)
	require.Zero(t, hdr.Err, "the session's ephemeral must still exist")
	require.Equal(t, id, st.Stat.EphemeralOwner)
	require.Eventually(t, func() bool { return !leader.tracker.IsClosing(id) }, 5*time.Second, 10*time.Millisecond,
		"the leader must track the session again after the refused expiry")
}

// TestSessionChurnAllocations opens and closes sessions one after another
// and bounds the bytes allocated per session (server and raw client in this
// process). A connection used to allocate and clear a 64 KiB read buffer and
// a 64 KiB write buffer of its own; they are pooled now. It also used to
// allocate a request ring of maxInFlight slots (8 KiB), a reply encoder and
// a logger context: 26 KiB per session then, 17 KiB since (the raw
// client's share is about 4.5 KiB). It bounds the heap objects per session
// too (sessionChurnObjects).
func TestSessionChurnAllocations(t *testing.T) {
	skipAllocationBoundsUnderInvariants(t)
	s := startServer(t, nil)
	churn := func(n int) {
		for i := 0; i < n; i++ {
			c, resp, err := zktest.DialRawRequest(s.Addr().String(), jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
			require.NoError(t, err)
			require.NotZero(t, resp.SessionID)
			_, err = c.CloseSession()
			require.NoError(t, err)
		}
	}
	churn(20) // raft, bbolt and the pools warm up
	const n = 200
	objects, bytes := allocationsBy(func() { churn(n) })
	perSession := bytes / n
	t.Logf("%d bytes, %d objects allocated per session", perSession, objects/n)
	// sessionChurnBytes: 20 KiB, 128 KiB under -race, whose sync.Pool drops
	// a quarter of what is put back (race_on_test.go).
	require.Less(t, perSession, uint64(sessionChurnBytes))
	// sessionChurnObjects: the objects per session, so that a context, a
	// timer or a channel made again for every session is seen (bytes would
	// not show it next to the buffers).
	require.LessOrEqual(t, objects/n, uint64(sessionChurnObjects))
}

// readerWaiting reports whether a connection's reader waits for a request
// (readLoop) among gs.
func readerWaiting(gs []string) bool {
	for _, g := range gs {
		if strings.Contains(g, "server.(*conn).readLoop") {
			return true
		}
	}
	return false
}

// TestWriterStartsWithFirstRequest: a connection's writer goroutine starts
// with its first request other than closeSession (startWriter). A session
// whose first request is closeSession, as every one of zkbench's session
// workload, is answered by its reader (awaitLastReply): the close is
// committed, answered, and the connection closed, with no writer started.
func TestWriterStartsWithFirstRequest(t *testing.T) {
	tests := []struct {
		name    string
		request func(t *testing.T, c *zktest.RawConn)
		writer  bool // a writer goroutine runs once the request was answered
	}{
		{"none", func(*testing.T, *zktest.RawConn) {}, false},
		{"ping", func(t *testing.T, c *zktest.RawConn) { require.NoError(t, c.Ping()) }, true},
		{"exists", func(t *testing.T, c *zktest.RawConn) {
			_, err := c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
			require.NoError(t, err)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, nil)
			c := dial(t, s)
			tt.request(t, c)
			// Once the reader waits for the next request, the writer it
			// started, if any, exists (started before the request was
			// handled).
			require.Eventually(t, func() bool { return readerWaiting(connGoroutines()) }, 10*time.Second, time.Millisecond)
			n := len(connGoroutines())
			want := 1
			if tt.writer {
				want = 2
			}
			require.Equal(t, want, n, "goroutines of the connection (reader, writer)")
		})
	}
	// closeSession first: answered with no writer, then the connection
	// closes; refused (enforce.auth) without ending the session.
	closeFirst := []struct {
		name    string
		mutate  func(*Config)
		wantErr int32
	}{
		{"closeSession first", nil, 0},
		{"closeSession first, not authenticated as enforced", func(c *Config) {
			c.SASL.EnforceAuthEnabled = true
			c.SASL.EnforceAuthSchemes = []string{"digest"}
		}, jute.ErrSessionClosedRequireAuth},
	}
	for _, tt := range closeFirst {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, tt.mutate)
			c, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
			require.NotZero(t, resp.SessionID)
			writers := s.writersStarted.Load()
			hdr, err := c.Call(jute.OpCloseSession, nil, nil)
			require.NoError(t, err)
			require.Equal(t, tt.wantErr, hdr.Err)
			require.NoError(t, c.ExpectClosed(10*time.Second))
			_, live := s.sm.session(resp.SessionID)
			require.Equal(t, tt.wantErr != 0, live, "the session lives on unless its close was answered")
			if tt.wantErr == 0 {
				require.NotZero(t, hdr.Zxid, "the close's own zxid")
			}
			waitNoConns(t, s)
			require.Equal(t, writers, s.writersStarted.Load(), "a writer started for a connection whose first request was its close")
		})
	}
}
