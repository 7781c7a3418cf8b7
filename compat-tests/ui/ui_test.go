package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// sessionHex prints a session id as ZooKeeper and the page do.
func sessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// lockState is what the page shows for one lock directory.
type lockState struct {
	Path    string
	Holders []string // session ids
	Waiters []string // session ids, in queue order
	Tokens  []string // holders' tokens
}

// lockStateJS reads the lock tables from the page's DOM.
const lockStateJS = `[...document.querySelectorAll('.lock')].map(l => ({
	Path: l.dataset.path,
	Holders: [...l.querySelectorAll('tr.holder')].map(r => r.dataset.session),
	Waiters: [...l.querySelectorAll('tr.waiter')].map(r => r.dataset.session),
	Tokens: [...l.querySelectorAll('tr.holder td:nth-child(6)')].map(td => td.textContent),
}))`

func screenshotDir(t *testing.T) string {
	dir := os.Getenv("ZKRAFT_UI_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "zkraft-ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLiveLocks: see the package documentation.
func TestLiveLocks(t *testing.T) {
	b := startBrowser(t) // first: a missing chromium fails before anything starts
	adminPort, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.Zkraft, zktest.Options{Extra: map[string]string{
		"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1", "admin.serverPort": strconv.Itoa(adminPort),
	}})
	acl := zk.WorldACL(zk.PermAll)
	conns := make([]*zk.Conn, 3)
	for i := range conns {
		conns[i], _ = srv.Connect(t)
	}
	a, bc, c := conns[0], conns[1], conns[2]
	locks := []*zk.Lock{zk.NewLock(a, "/locks/job", acl), zk.NewLock(bc, "/locks/job", acl), zk.NewLock(c, "/locks/job", acl)}
	if err := locks[0].Lock(); err != nil {
		t.Fatal(err)
	}
	// B and C queue up, in that order; their goroutines end when they get
	// the lock or, on failure, when the cleanup closes their connections.
	acquired := make([]chan error, 3)
	for i := 1; i <= 2; i++ {
		acquired[i] = make(chan error, 1)
		go func() { acquired[i] <- locks[i].Lock() }()
		waitChildren(t, a, "/locks/job", i+1)
	}
	t.Cleanup(func() {
		for i := 1; i <= 2; i++ {
			conns[i].Close()
			<-acquired[i]
		}
	})

	url := fmt.Sprintf("http://127.0.0.1:%d/ui/", adminPort)
	p, err := b.open(url)
	if err != nil {
		t.Fatal(err)
	}
	shots := screenshotDir(t)
	stamp := time.Now().Format("20060102-150405")
	kids, _, err := a.Children("/locks/job")
	if err != nil {
		t.Fatal(err)
	}
	tokenOf := func(session int64) string {
		for _, k := range kids {
			_, s, err := a.Exists("/locks/job/" + k)
			if err == nil && s.EphemeralOwner == session {
				return strconv.FormatInt(s.Czxid, 10)
			}
		}
		return "?"
	}

	want := lockState{Path: "/locks/job", Holders: []string{sessionHex(a.SessionID())},
		Waiters: []string{sessionHex(bc.SessionID()), sessionHex(c.SessionID())}, Tokens: []string{tokenOf(a.SessionID())}}
	waitLocks(t, p, "A holding, B then C waiting", want)
	shot1 := filepath.Join(shots, "locks-held-"+stamp+".png")
	if err := p.screenshot(shot1); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot, A holds and B, C wait: %s", shot1)

	// The rest of the page: this member, its sessions, the znode browser.
	var sessions []string
	p.waitFor(t, 10*time.Second, "the three sessions", `[...document.querySelectorAll('#sessions tr[data-session]')].map(r => r.dataset.session)`,
		func(v json.RawMessage) bool {
			sessions = nil
			_ = json.Unmarshal(v, &sessions)
			return slices.Contains(sessions, want.Holders[0]) && slices.Contains(sessions, want.Waiters[0]) && slices.Contains(sessions, want.Waiters[1])
		})
	p.waitFor(t, 10*time.Second, "the standalone member", `document.querySelector('#members td.role-standalone') ? "yes" : "no"`,
		func(v json.RawMessage) bool { return string(v) == `"yes"` })
	var ignored any
	if err := p.eval(`browse("/locks/job"), true`, &ignored); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, 10*time.Second, "the lock nodes in the znode browser", `[...document.querySelectorAll('#children a')].map(a => a.textContent).sort()`,
		func(v json.RawMessage) bool {
			var got []string
			_ = json.Unmarshal(v, &got)
			sorted := slices.Clone(kids)
			slices.Sort(sorted)
			return slices.Equal(got, sorted)
		})

	// A releases: the open page (no reload) shows B holding and C waiting.
	if err := p.eval(`window.__marker = 1, true`, &ignored); err != nil {
		t.Fatal(err)
	}
	if err := locks[0].Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired[1]; err != nil {
		t.Fatal(err)
	}
	acquired[1] <- nil // for the cleanup
	want = lockState{Path: "/locks/job", Holders: []string{sessionHex(bc.SessionID())},
		Waiters: []string{sessionHex(c.SessionID())}, Tokens: []string{tokenOf(bc.SessionID())}}
	waitLocks(t, p, "B holding, C waiting", want)
	var marker int
	if err := p.eval(`window.__marker || 0`, &marker); err != nil || marker != 1 {
		t.Fatalf("the page was reloaded (marker %d, %v); it must update itself", marker, err)
	}
	shot2 := filepath.Join(shots, "locks-released-"+stamp+".png")
	if err := p.screenshot(shot2); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot, after A released, B holds and C waits: %s", shot2)

	// B and C release in turn: the lock disappears from the page.
	if err := locks[1].Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired[2]; err != nil {
		t.Fatal(err)
	}
	acquired[2] <- nil
	if err := locks[2].Unlock(); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, 10*time.Second, "no locks", `document.querySelectorAll('.lock').length`,
		func(v json.RawMessage) bool { return string(v) == "0" })
}

func waitChildren(t *testing.T, c *zk.Conn, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		kids, _, err := c.Children(dir)
		if err == nil && len(kids) == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never had %d children", dir, n)
}

func waitLocks(t *testing.T, p *page, what string, want lockState) {
	t.Helper()
	p.waitFor(t, 15*time.Second, what, lockStateJS, func(v json.RawMessage) bool {
		var got []lockState
		if json.Unmarshal(v, &got) != nil || len(got) != 1 {
			return false
		}
		g := got[0]
		return g.Path == want.Path && slices.Equal(g.Holders, want.Holders) && slices.Equal(g.Waiters, want.Waiters) &&
			slices.Equal(g.Tokens, want.Tokens)
	})
}

// TestLockDelayShown: with lock-delay on, a holder whose session expired
// stays listed, but the page shows it as expired with the time its node
// goes, not as a live holder; the live waiter behind it is shown as
// waiting.
func TestLockDelayShown(t *testing.T) {
	b := startBrowser(t)
	adminPort, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.Zkraft, zktest.Options{TickMs: 200, Extra: map[string]string{
		"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1", "admin.serverPort": strconv.Itoa(adminPort),
		"zkraft.lockDelayMs": "60000", "zkraft.lockDelayPaths": "/locks",
	}})
	c, _ := srv.Connect(t)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/locks", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	// The holder: a raw session of 400 ms that never pings.
	rc, resp := zktest.DialRaw(t, srv.Addr, 0, nil, 400, false)
	defer rc.Close()
	var cr jute.CreateResponse
	if hdr, err := rc.Call(jute.OpCreate, &jute.CreateRequest{Path: "/locks/lock-", ACL: []jute.ACL{{Perms: jute.PermAll,
		ID: jute.Id{Scheme: "world", ID: "anyone"}}}, Flags: jute.FlagEphemeralSequential}, &cr); err != nil || hdr.Err != 0 {
		t.Fatalf("holder's create: %v, %d", err, hdr.Err)
	}
	if _, err := c.Create("/locks/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}

	p, err := b.open(fmt.Sprintf("http://127.0.0.1:%d/ui/", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	const rowsJS = `[...document.querySelectorAll('.lock tr[data-session]')].map(r =>
		[r.className, r.dataset.session, r.querySelector('td:last-child').dataset.state, r.querySelector('td:last-child').textContent])`
	holder, waiter := sessionHex(resp.SessionID), sessionHex(c.SessionID())
	var rows [][]string
	p.waitFor(t, 20*time.Second, "the expired holder shown as expired", rowsJS, func(v json.RawMessage) bool {
		rows = nil
		if json.Unmarshal(v, &rows) != nil || len(rows) != 2 {
			return false
		}
		h, w := rows[0], rows[1]
		return h[0] == "holder expired" && h[1] == holder && h[2] == "expired" &&
			strings.HasPrefix(h[3], "expired; lock-delay until ") &&
			w[0] == "waiter" && w[1] == waiter && w[2] == "live" && strings.HasPrefix(w[3], "waiting ")
	})
	t.Logf("rows: %q", rows)
	shot := filepath.Join(screenshotDir(t), "locks-lockdelay-"+time.Now().Format("20060102-150405")+".png")
	if err := p.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot, an expired holder kept by lock-delay: %s", shot)
}
