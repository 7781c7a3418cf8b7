package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

func TestParseLockName(t *testing.T) {
	tests := []struct {
		name   string
		recipe string
		mode   lockMode
		seq    int64
	}{
		{"_c_7f0e0b2a-4d0e-4a53-9f0b-2b0c8d5a1e33-lock-0000000003", "curator", modeExclusive, 3},
		{"lock-0000000012", "lock", modeExclusive, 12},
		{"8f3c9a-lock-0000000000", "lock", modeExclusive, 0},
		{"x-72057594037927936-0000000007", "zookeeper-recipe", modeExclusive, 7},
		{"x--72057594037927936-0000000007", "zookeeper-recipe", modeExclusive, 7},
		{"2f8b2c0e6f3b4b0d__lock__0000000001", "kazoo", modeExclusive, 1},
		{"2f8b2c0e6f3b4b0d__rlock__0000000002", "kazoo", modeRead, 2},
		{"_c_2f8b-__READ__0000000004", "curator", modeRead, 4},
		{"__WRIT__0000000005", "curator", modeWrite, 5},
		{"_c_2f8b-__WRIT__2147483647", "curator", modeWrite, 2147483647},
		// Not locks.
		{"latch-0000000001", "", "", 0},
		{"lock-", "", "", 0},
		{"lock-000000001", "", "", 0}, // 9 digits
		{"lock-00000000x1", "", "", 0},
		{"x-abc-0000000001", "", "", 0},
		{"member_0000000001", "", "", 0},
		{"0000000001", "", "", 0},
		{"foo__READ__0000000001", "", "", 0}, // Curator names are protected or bare
	}
	for _, tc := range tests {
		recipe, mode, seq, ok := parseLockName(tc.name)
		require.Equal(t, tc.recipe != "", ok, tc.name)
		require.Equal(t, tc.recipe, recipe, tc.name)
		require.Equal(t, tc.mode, mode, tc.name)
		require.Equal(t, tc.seq, seq, tc.name)
	}
}

// lockClient connects a go-zookeeper client to s.
func lockClient(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Sync("/") // wait for the session
	require.NoError(t, err)
	return c
}

type lockEntry struct {
	Node, Recipe, Mode, SessionID, ClientAddress, Token string
	HeldOrWaiting                                       int64
}

func lockEntries(t *testing.T, v any, since string) []lockEntry {
	t.Helper()
	var out []lockEntry
	for _, x := range v.([]any) {
		m := x.(map[string]any)
		ms, ok := m[since].(float64)
		require.True(t, ok, "%s missing in %v", since, m)
		out = append(out, lockEntry{m["node"].(string), m["recipe"].(string), m["mode"].(string),
			m["session_id"].(string), m["client_address"].(string), m["token"].(string), int64(ms)})
	}
	return out
}

// locksByPath runs the locks command and indexes its directories.
func locksByPath(t *testing.T, s *Server) map[string][2][]lockEntry {
	t.Helper()
	m := getCommand(t, s, "locks")
	require.Nil(t, m["error"])
	require.Equal(t, false, m["truncated"])
	out := map[string][2][]lockEntry{}
	for _, x := range m["locks"].([]any) {
		d := x.(map[string]any)
		out[d["path"].(string)] = [2][]lockEntry{lockEntries(t, d["holders"], "held_for_ms"), lockEntries(t, d["waiters"], "waiting_for_ms")}
	}
	return out
}

func nodeNames(es []lockEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Node)
	}
	return out
}

// TestLocksCommand: a go-zookeeper lock held by A and waited for by B, a
// kazoo read/write lock, a Curator read/write lock and a ZooKeeper-recipe
// lock show with their holders and waiters in order; a latch, persistent
// "lock-" nodes and nodes of other names do not. Releasing A's lock makes B
// the holder.
func TestLocksCommand(t *testing.T) {
	s := startServer(t, withAdmin)
	a, b, c := lockClient(t, s), lockClient(t, s), lockClient(t, s)
	acl := zk.WorldACL(zk.PermAll)

	la := zk.NewLock(a, "/locks/job", acl)
	require.NoError(t, la.Lock())
	lb := zk.NewLock(b, "/locks/job", acl)
	bDone := make(chan error, 1)
	go func() { bDone <- lb.Lock() }()
	t.Cleanup(func() {
		b.Close() // ends lb.Lock if it still waits
		<-bDone
	})
	require.Eventually(t, func() bool {
		kids, _, err := c.Children("/locks/job")
		return err == nil && len(kids) == 2
	}, 10*time.Second, 10*time.Millisecond)

	mkSeq := func(dir, prefix string) string {
		p, err := c.Create(dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		require.NoError(t, err)
		return p[strings.LastIndexByte(p, '/')+1:]
	}
	for _, dir := range []string{"/rw", "/crw", "/recipe", "/other", "/persistent"} {
		_, err := c.Create(dir, nil, 0, acl)
		require.NoError(t, err)
	}
	k1, k2 := mkSeq("/rw", "aa__rlock__"), mkSeq("/rw", "bb__rlock__")
	k3, k4 := mkSeq("/rw", "cc__lock__"), mkSeq("/rw", "dd__rlock__")
	c1, c2 := mkSeq("/crw", "_c_u1-__WRIT__"), mkSeq("/crw", "_c_u2-__READ__")
	r1 := mkSeq("/recipe", fmt.Sprintf("x-%d-", c.SessionID()))
	mkSeq("/other", "latch-")
	mkSeq("/other", "member_")
	_, err := c.Create("/persistent/lock-", nil, zk.FlagSequence, acl)
	require.NoError(t, err)

	locks := locksByPath(t, s)
	require.ElementsMatch(t, []string{"/locks/job", "/rw", "/crw", "/recipe"}, keysOf(locks))

	job := locks["/locks/job"]
	require.Len(t, job[0], 1)
	require.Len(t, job[1], 1)
	holder, waiter := job[0][0], job[1][0]
	require.Equal(t, "curator", holder.Recipe)
	require.Equal(t, "exclusive", holder.Mode)
	require.Equal(t, sessionHex(a.SessionID()), holder.SessionID)
	require.Equal(t, sessionHex(b.SessionID()), waiter.SessionID)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, holder.ClientAddress)
	require.NotEqual(t, holder.ClientAddress, waiter.ClientAddress)
	_, st, err := c.Exists("/locks/job/" + holder.Node)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(st.Czxid, 10), holder.Token, "token is the lock node's czxid")
	require.GreaterOrEqual(t, holder.HeldOrWaiting, int64(0))
	require.Less(t, holder.HeldOrWaiting, int64(60_000))

	require.Equal(t, []string{k1, k2}, nodeNames(locks["/rw"][0]), "readers before the first writer share the lock")
	require.Equal(t, []string{k3, k4}, nodeNames(locks["/rw"][1]))
	require.Equal(t, []string{"read", "read"}, []string{locks["/rw"][0][0].Mode, locks["/rw"][0][1].Mode})
	require.Equal(t, []string{c1}, nodeNames(locks["/crw"][0]), "a writer first holds alone")
	require.Equal(t, []string{c2}, nodeNames(locks["/crw"][1]))
	require.Equal(t, "write", locks["/crw"][0][0].Mode)
	require.Equal(t, []string{r1}, nodeNames(locks["/recipe"][0]))
	require.Equal(t, "zookeeper-recipe", locks["/recipe"][0][0].Recipe)

	// A releases: B holds, nobody waits.
	require.NoError(t, la.Unlock())
	require.NoError(t, <-bDone)
	bDone <- nil // for the cleanup
	job = locksByPath(t, s)["/locks/job"]
	require.Len(t, job[0], 1)
	require.Empty(t, job[1])
	require.Equal(t, sessionHex(b.SessionID()), job[0][0].SessionID)
	require.NoError(t, lb.Unlock())
	_, ok := locksByPath(t, s)["/locks/job"]
	require.False(t, ok, "an empty lock directory is not listed")
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestLocksFourLetterWord: lcks is refused unless listed by name ("*"
// does not enable it), and prints holders and waiters when listed.
func TestLocksFourLetterWord(t *testing.T) {
	require.NotContains(t, knownFourLetterWords, "lcks")
	s := startServer(t, withAdmin)
	require.Equal(t, "lcks is not executed because it is not in the whitelist.\n", fourLetter(t, s, "lcks"))

	s = startServer(t, func(c *Config) { withAdmin(c); c.FourLetterWords["lcks"] = true })
	a, b := lockClient(t, s), lockClient(t, s)
	acl := zk.WorldACL(zk.PermAll)
	_, err := a.Create("/l", nil, 0, acl)
	require.NoError(t, err)
	pa, err := a.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	require.NoError(t, err)
	pb, err := b.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	require.NoError(t, err)
	_, st, err := a.Exists(pa)
	require.NoError(t, err)
	out := fourLetter(t, s, "lcks")
	re := fmt.Sprintf(`^/l\n\tholder %s exclusive session=%s client=127\.0\.0\.1:\d+ token=%d held=\d+ms\n`+
		`\twaiter %s exclusive session=%s client=127\.0\.0\.1:\d+ token=\d+ waiting=\d+ms\n$`,
		pa[3:], sessionHex(a.SessionID()), st.Czxid, pb[3:], sessionHex(b.SessionID()))
	require.Regexp(t, re, out)
}

// TestLockScanBounded: the scan stops after its limit and says so.
func TestLockScanBounded(t *testing.T) {
	s := startServer(t, nil)
	c := lockClient(t, s)
	acl := zk.WorldACL(zk.PermAll)
	_, err := c.Create("/l", nil, 0, acl)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := c.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		require.NoError(t, err)
	}
	v := s.lockScanLimit(3)
	require.True(t, v.truncated)
	require.Equal(t, 3, v.scanned)
	require.Len(t, v.dirs, 1)
	require.True(t, v.dirs[0].incomplete, "a truncated scan saw an arbitrary 3 of 5: its holder may be wrong")
	require.Contains(t, v.text(), "\tincomplete: ")
	b, err := json.Marshal(v.json())
	require.NoError(t, err)
	require.Contains(t, string(b), `"incomplete":true`)
	v = s.lockScanLimit(5)
	require.False(t, v.truncated)
	require.Len(t, v.dirs, 1)
	require.Len(t, v.dirs[0].holders, 1)
	require.Len(t, v.dirs[0].waiters, 4)
	require.False(t, v.dirs[0].incomplete)
	v = s.lockScanLimit(4)
	require.Contains(t, v.text(), "truncated after 4 ephemerals\n")
}

// BenchmarkLockScan measures one lock scan over 100,000 ephemerals: 10,000
// lock directories of 10 contenders each (the README quotes its figure).
func BenchmarkLockScan(b *testing.B) {
	cfg := Default()
	cfg.ClientPort, cfg.ClientPortAddress, cfg.DataDir, cfg.AdminEnabled = 0, "127.0.0.1", b.TempDir(), false
	cfg.MaxClientCnxns = 0
	s := New(cfg, zerolog.Nop())
	require.NoError(b, s.Start())
	defer func() { require.NoError(b, s.Stop()) }()
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(b, err)
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	const dirs, per = 10_000, 10
	var ops []any
	flush := func() {
		if len(ops) > 0 {
			_, err := c.Multi(ops...)
			require.NoError(b, err)
			ops = ops[:0]
		}
	}
	for d := 0; d < dirs; d++ {
		dir := fmt.Sprintf("/l%d", d)
		ops = append(ops, &zk.CreateRequest{Path: dir, Acl: acl})
		for i := 0; i < per; i++ {
			ops = append(ops, &zk.CreateRequest{Path: dir + "/lock-", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
		if len(ops) >= 1000 {
			flush()
		}
	}
	flush()
	var locked time.Duration
	n := 0
	for b.Loop() {
		v := s.lockScan()
		if len(v.dirs) != dirs || v.scanned != dirs*per {
			b.Fatalf("scan found %d dirs, %d ephemerals", len(v.dirs), v.scanned)
		}
		locked += v.locked
		n++
	}
	b.ReportMetric(float64(locked.Microseconds())/float64(n)/1000, "read-lock-ms/op")
}

// TestLocksViewLockDelay: with lock-delay, a holder whose session expired
// stays listed as the holder, marked expired with its removal deadline
// (locks command and lcks); a waiter whose session expired is gone at
// once; a live waiter is not marked.
func TestLocksViewLockDelay(t *testing.T) {
	const delayMs = 60_000
	s := startServer(t, func(c *Config) {
		withAdmin(c)
		c.FourLetterWords["lcks"] = true
		c.TickTimeMs, c.MinSessionTimeoutMs = 100, 200
		c.LockDelayMs, c.LockDelayPaths = delayMs, []string{"/l"}
	})
	c := lockClient(t, s)
	acl := zk.WorldACL(zk.PermAll)
	_, err := c.Create("/l", nil, 0, acl)
	require.NoError(t, err)
	// Two raw sessions of 200 ms that never ping: the holder and a waiter.
	mk := func(timeoutMs int32) (*zktest.RawConn, int64, string) {
		rc, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, timeoutMs, false)
		t.Cleanup(rc.Close)
		var cr jute.CreateResponse
		hdr, err := rc.Call(jute.OpCreate, &jute.CreateRequest{Path: "/l/lock-", ACL: openACL(),
			Flags: jute.FlagEphemeralSequential}, &cr)
		require.NoError(t, err)
		require.Zero(t, hdr.Err)
		return rc, resp.SessionID, cr.Path[len("/l/"):]
	}
	_, holder, held := mk(200)
	_, _, dying := mk(200)
	live, err := c.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	require.NoError(t, err)
	live = live[len("/l/"):]

	var l [2][]lockEntry
	var m map[string]any
	require.Eventually(t, func() bool {
		m = getCommand(t, s, "locks")
		locks := m["locks"].([]any)
		if len(locks) != 1 {
			return false
		}
		d := locks[0].(map[string]any)
		l = [2][]lockEntry{lockEntries(t, d["holders"], "held_for_ms"), lockEntries(t, d["waiters"], "waiting_for_ms")}
		return len(l[1]) == 1 // the dying waiter's node is gone
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{held}, nodeNames(l[0]), "the expired holder's node is kept")
	require.Equal(t, []string{live}, nodeNames(l[1]))
	require.NotContains(t, append(nodeNames(l[0]), nodeNames(l[1])...), dying)

	d := m["locks"].([]any)[0].(map[string]any)
	h := d["holders"].([]any)[0].(map[string]any)
	require.Equal(t, sessionHex(holder), h["session_id"])
	require.Equal(t, true, h["expired"])
	until := int64(h["lock_delay_until"].(float64))
	require.InDelta(t, time.Now().UnixMilli()+delayMs, until, 10_000)
	w := d["waiters"].([]any)[0].(map[string]any)
	require.Equal(t, false, w["expired"])
	require.NotContains(t, w, "lock_delay_until")
	require.Equal(t, false, d["incomplete"])

	out := fourLetter(t, s, "lcks")
	stamp := time.UnixMilli(until).UTC().Format("2006-01-02T15:04:05.000Z")
	require.Regexp(t, fmt.Sprintf(`\tholder %s exclusive session=%s .* held=\d+ms expired; lock-delay until %s\n`,
		held, sessionHex(holder), regexp.QuoteMeta(stamp)), out)
	require.Regexp(t, fmt.Sprintf(`\twaiter %s exclusive session=%s .* waiting=\d+ms\n`, live, sessionHex(c.SessionID())), out)
}

// TestIncompleteDirs: after a truncated scan, a directory is complete only
// if every child of it was found.
func TestIncompleteDirs(t *testing.T) {
	s := startServer(t, nil)
	c := lockClient(t, s)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/a", "/b", "/c"} {
		_, err := c.Create(p, nil, 0, acl)
		require.NoError(t, err)
	}
	var all []lockContender
	for _, dir := range []string{"/a", "/a", "/b", "/b", "/c"} {
		p, err := c.Create(dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		require.NoError(t, err)
		all = append(all, lockContender{path: p, node: p[len(dir)+1:]})
	}
	_, err := c.Create("/c/member", nil, zk.FlagEphemeral, acl)
	require.NoError(t, err)
	for _, tt := range []struct {
		name  string
		found []lockContender
		want  map[string]bool
	}{
		{"all found", all, map[string]bool{"/c": true}}, // /c has a member child
		{"one of /a missing", all[1:], map[string]bool{"/a": true, "/c": true}},
		{"one of /b missing", []lockContender{all[0], all[1], all[3]}, map[string]bool{"/b": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.sm.mu.RLock()
			got := incompleteDirs(s.sm.tree, tt.found)
			s.sm.mu.RUnlock()
			require.Equal(t, tt.want, got)
		})
	}
}
