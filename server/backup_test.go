package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/backup"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// snapshotGet fetches <admin>/commands/snapshot with an optional
// Authorization header.
func snapshotGet(t *testing.T, s *Server, query, auth string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.AdminAddr().String()+"/commands/snapshot"+query, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestAdminSnapshot: the snapshot command streams a backup holding every
// acknowledged write, and needs ALL on / as ZooKeeper 3.9.4's does.
func TestAdminSnapshot(t *testing.T) {
	super := znode.DigestID("super:secret")
	s := startServer(t, func(c *Config) { withAdmin(c); c.SuperDigest = super })
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var last int64
	for _, p := range []string{"/a", "/a/b", "/c"} {
		_, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	st, err := c.Set("/c", []byte("v2"), 0)
	require.NoError(t, err)
	last = st.Mzxid

	// Open root ACL: anyone may take it, as in ZooKeeper.
	code, body := snapshotGet(t, s, "?streaming=true", "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	h, payload, err := backup.Read(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, h.Zxid, uint64(last))
	require.GreaterOrEqual(t, h.Index, h.Zxid)
	require.Equal(t, []uint64{1}, h.Voters)
	sum, err := InspectSnapshot(h.Index, payload)
	require.NoError(t, err)
	require.Equal(t, h.Zxid, sum.Zxid)
	require.Equal(t, 7, sum.Nodes) // /, /zookeeper, /zookeeper/quota, /zookeeper/config, /a, /a/b, /c
	require.Equal(t, 0, sum.Sessions, "a backup holds no session")

	code, body = snapshotGet(t, s, "", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"last_zxid"`)

	// Root restricted to a digest user: only ALL on / (or super) passes.
	admin := zk.DigestACL(zk.PermAll, "admin", "pw")
	require.NoError(t, c.AddAuth("digest", []byte("admin:pw")))
	_, err = c.SetACL("/", append(admin, zk.WorldACL(zk.PermRead)...), -1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, auth string
		code       int
	}{
		{"no credentials", "", http.StatusUnauthorized},
		{"wrong password", "digest admin:nope", http.StatusForbidden},
		{"other scheme", "Basic YWRtaW46cHc=", http.StatusUnauthorized},
		{"user with ALL on /", "digest admin:pw", http.StatusOK},
		{"super user", "digest super:secret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := snapshotGet(t, s, "?streaming=true", tc.auth)
			require.Equal(t, tc.code, code, "%s", body)
			if code == http.StatusOK {
				_, _, err := backup.Read(bytes.NewReader(body), int64(len(body)))
				require.NoError(t, err)
			} else {
				require.Contains(t, string(body), `"error"`)
			}
		})
	}
}

func TestAdminSnapshotDisabled(t *testing.T) {
	s := startServer(t, func(c *Config) { withAdmin(c); c.AdminSnapshotEnabled = false })
	code, body := snapshotGet(t, s, "?streaming=true", "")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, string(body), "admin.snapshot.enabled")
}

func TestInspectSnapshotRefusesGarbage(t *testing.T) {
	_, err := InspectSnapshot(10, []byte("ZKRAFTS1 not a snapshot"))
	require.Error(t, err)
	_, err = InspectSnapshot(10, nil)
	require.Error(t, err)
}

// TestAdminSnapshotFromFollower: a follower's snapshot holds a write
// acknowledged by the leader just before (the command runs a ReadIndex
// first) and names the ensemble's voters.
func TestAdminSnapshotFromFollower(t *testing.T) {
	servers, _ := startEnsemble(t, 3, withAdmin)
	var leader *Server
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.lead.isLeader() {
				leader = s
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond)
	c, _, err := zk.Connect([]string{leader.Addr().String()}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Create("/n", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for _, f := range servers {
		if f == leader {
			continue
		}
		for i := range 5 {
			st, err := c.Set("/n", []byte{byte(i)}, -1)
			require.NoError(t, err)
			code, body := snapshotGet(t, f, "?streaming=true", "")
			require.Equal(t, http.StatusOK, code, "%s", body)
			h, _, err := backup.Read(bytes.NewReader(body), int64(len(body)))
			require.NoError(t, err)
			require.GreaterOrEqual(t, h.Zxid, uint64(st.Mzxid), "member %d's snapshot lacks an acknowledged write", f.cfg.ServerID)
			require.Equal(t, []uint64{1, 2, 3}, h.Voters)
		}
	}
}

// TestAdminSnapshotHoldsNoSessions: a backup holds neither a live session's
// password nor its id, and its ephemerals are gone as after a close of the
// session (the parent's cversion grew, its pzxid is the backup's zxid).
func TestAdminSnapshotHoldsNoSessions(t *testing.T) {
	s := startServer(t, withAdmin)
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Create("/p", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = c.Create("/p/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, before, err := c.Get("/p")
	require.NoError(t, err)
	sess, ok := s.sm.session(c.SessionID())
	require.True(t, ok)
	require.Len(t, sess.Password, 16)

	code, body := snapshotGet(t, s, "?streaming=true", "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.False(t, bytes.Contains(body, sess.Password), "the backup holds a live session's password")
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(sess.ID))
	require.False(t, bytes.Contains(body, id[:]), "the backup holds a live session's id")

	h, payload, err := backup.Read(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	sum, err := InspectSnapshot(h.Index, payload)
	require.NoError(t, err)
	require.Zero(t, sum.Sessions)
	require.Zero(t, sum.Ephemerals)
	sm := newStateMachine(znode.Options{}, nil, inspectHooks{}, zerolog.Nop())
	require.NoError(t, sm.Restore(h.Index, payload))
	_, st, ok := sm.tree.GetData("/p")
	require.True(t, ok)
	require.Equal(t, before.Cversion+1, st.Cversion)
	require.Equal(t, int64(h.Zxid), st.Pzxid)
	require.Zero(t, st.NumChildren)
}

// TestAdminSnapshotNeedsReadOnEveryNode: a caller with ALL on / but not
// READ on some node gets no backup (it would reveal that node); super does.
func TestAdminSnapshotNeedsReadOnEveryNode(t *testing.T) {
	s := startServer(t, func(c *Config) { withAdmin(c); c.SuperDigest = znode.DigestID("super:secret") })
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Create("/secret", []byte("hidden"), 0, zk.DigestACL(zk.PermAll, "owner", "pw"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, method, auth string
		code               int
	}{
		{"open root, restricted node", http.MethodGet, "", http.StatusForbidden},
		{"other digest user", http.MethodGet, "digest someone:else", http.StatusForbidden},
		{"the node's owner", http.MethodGet, "digest owner:pw", http.StatusOK},
		{"super user", http.MethodGet, "digest super:secret", http.StatusOK},
		{"HEAD, super", http.MethodHead, "digest super:secret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://"+s.AdminAddr().String()+"/commands/snapshot?streaming=true", nil)
			require.NoError(t, err)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode, "%s", body)
			if tc.code == http.StatusOK && tc.method == http.MethodGet {
				_, _, err := backup.Read(bytes.NewReader(body), int64(len(body)))
				require.NoError(t, err)
				require.True(t, bytes.Contains(body, []byte("hidden")))
			} else {
				require.False(t, bytes.Contains(body, []byte("hidden")))
			}
		})
	}
}

// TestPrepareRestore: a restored state has no sessions, no ephemerals and
// an empty /zookeeper/config (the source's members and addresses), even
// from a backup that held them.
func TestPrepareRestore(t *testing.T) {
	sm := newStateMachine(znode.Options{}, nil, inspectHooks{}, zerolog.Nop())
	ctx := znode.TxnContext{Zxid: 5, Options: &sm.treeOpts}
	sm.tree.SetConfig(ctx, []byte("server.1=old-host:2888:3888:participant;old-host:2181\nversion=5"))
	require.True(t, sm.sessions.Add(session.Session{ID: 77, TimeoutMs: 30000, Password: bytes.Repeat([]byte{0xAB}, 16)}))
	ctx.SessionID = 77
	res, _ := sm.tree.Apply(ctx, &znode.Write{Type: jute.OpCreate, Path: "/e", Create: &jute.CreateTTLRequest{
		Path: "/e", Flags: jute.FlagEphemeral, ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}})
	require.Zero(t, res.Err)
	sm.lastZxid.Store(5)
	payload, err := sm.Snapshot()
	require.NoError(t, err)
	require.True(t, bytes.Contains(payload, []byte("old-host")))

	out, err := PrepareRestore(9, payload, 0)
	require.NoError(t, err)
	require.False(t, bytes.Contains(out, []byte("old-host")), "the source's members survive a restore")
	require.False(t, bytes.Contains(out, bytes.Repeat([]byte{0xAB}, 16)), "a session password survives a restore")
	sum, err := InspectSnapshot(9, out)
	require.NoError(t, err)
	require.Zero(t, sum.Sessions)
	require.Zero(t, sum.Ephemerals)
	require.Equal(t, uint64(5), sum.Zxid)
}

// TestAdminSnapshotHead: HEAD is answered after the checks with headers
// only; it never enters the snapshot path (a snapshot being streamed, which
// makes GET answer 429, does not matter to it).
func TestAdminSnapshotHead(t *testing.T) {
	s := startServer(t, withAdmin)
	s.ops.snapshotBusy.Store(true)
	t.Cleanup(func() { s.ops.snapshotBusy.Store(false) })
	for _, tc := range []struct {
		method string
		code   int
	}{{http.MethodHead, http.StatusOK}, {http.MethodGet, http.StatusTooManyRequests}} {
		req, err := http.NewRequest(tc.method, "http://"+s.AdminAddr().String()+"/commands/snapshot?streaming=true", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, tc.code, resp.StatusCode, "%s: %s", tc.method, body)
		if tc.method == http.MethodHead {
			require.Empty(t, body)
			require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
		}
	}
}
