package locks

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// contender is one entry of the locks command.
type contender struct {
	Node      string `json:"node"`
	Recipe    string `json:"recipe"`
	Mode      string `json:"mode"`
	SessionID string `json:"session_id"`
	Token     string `json:"token"`
}

type lockDir struct {
	Path    string      `json:"path"`
	Holders []contender `json:"holders"`
	Waiters []contender `json:"waiters"`
}

// startServer runs zkraft with its AdminServer on a free loopback port and
// returns the server and the locks command's URL.
func startServer(t *testing.T) (*zktest.Server, string) {
	t.Helper()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.Zkraft, zktest.Options{Extra: map[string]string{
		"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1", "admin.serverPort": strconv.Itoa(port),
	}})
	return srv, fmt.Sprintf("http://127.0.0.1:%d/commands/locks", port)
}

func getLocks(t *testing.T, url string) map[string]lockDir {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Locks []lockDir `json:"locks"`
		Error any       `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error != nil {
		t.Fatalf("locks command: %v, error field %v", err, body.Error)
	}
	out := map[string]lockDir{}
	for _, d := range body.Locks {
		out[d.Path] = d
	}
	return out
}

// holdLocks runs a lock-holding program until it prints READY and returns
// the roles' session ids and a release function that ends it (bounded).
func holdLocks(t *testing.T, name string, args ...string) (map[string]string, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	cmd := exec.CommandContext(ctx, name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	lines := make(chan string)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var released bool
	finish := func() {
		if released {
			return
		}
		released = true
		_, _ = io.WriteString(stdin, "release\n")
		_ = stdin.Close()
		var out []string
		for l := range lines {
			out = append(out, l)
		}
		<-readDone
		err := cmd.Wait()
		cancel()
		if err != nil || !slices.Contains(out, "DONE") {
			t.Errorf("%s ended with %v, output %q, stderr:\n%s", name, err, out, stderr.String())
		}
	}
	t.Cleanup(finish)
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				finish()
				t.Fatalf("%s exited before READY; stderr:\n%s", name, stderr.String())
			}
			t.Logf("%s: %s", name, l)
			if rest, ok := strings.CutPrefix(l, "READY "); ok {
				ids := map[string]string{}
				if err := json.Unmarshal([]byte(rest), &ids); err != nil {
					t.Fatalf("READY line %q: %v", l, err)
				}
				return ids, finish
			}
		case <-timeout:
			cancel()
			t.Fatalf("%s printed no READY within 90 s; stderr:\n%s", name, stderr.String())
		}
	}
}

func sessions(cs []contender) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.SessionID)
	}
	return out
}

func modes(cs []contender) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Recipe+"/"+c.Mode)
	}
	return out
}

type want struct {
	path                   string
	holders, waiters       []string // roles
	holderMode, waiterMode []string // recipe/mode
}

func check(t *testing.T, locks map[string]lockDir, ids map[string]string, w want) {
	t.Helper()
	d, ok := locks[w.path]
	if !ok {
		t.Fatalf("%s not listed; got %v", w.path, locks)
	}
	role := func(roles []string) []string {
		var out []string
		for _, r := range roles {
			out = append(out, ids[r])
		}
		return out
	}
	if got := sessions(d.Holders); !slices.Equal(got, role(w.holders)) {
		t.Errorf("%s holders %v, want %v (%v)", w.path, got, role(w.holders), w.holders)
	}
	if got := sessions(d.Waiters); !slices.Equal(got, role(w.waiters)) {
		t.Errorf("%s waiters %v, want %v (%v)", w.path, got, role(w.waiters), w.waiters)
	}
	if got := modes(d.Holders); !slices.Equal(got, w.holderMode) {
		t.Errorf("%s holder modes %v, want %v", w.path, got, w.holderMode)
	}
	if got := modes(d.Waiters); !slices.Equal(got, w.waiterMode) {
		t.Errorf("%s waiter modes %v, want %v", w.path, got, w.waiterMode)
	}
}

func TestKazooLocks(t *testing.T) {
	if _, err := exec.Command("/usr/bin/python3", "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Fatalf("kazoo missing for /usr/bin/python3 (%v): apt-get install -y python3-kazoo (scripts/install-deps.sh)", err)
	}
	srv, url := startServer(t)
	ids, release := holdLocks(t, "/usr/bin/python3", "kazoo_locks.py", srv.Addr)
	locks := getLocks(t, url)
	check(t, locks, ids, want{"/kz/lock", []string{"holder"}, []string{"waiter"},
		[]string{"kazoo/exclusive"}, []string{"kazoo/exclusive"}})
	check(t, locks, ids, want{"/kz/rw", []string{"reader1", "reader2"}, []string{"writer"},
		[]string{"kazoo/read", "kazoo/read"}, []string{"kazoo/exclusive"}})
	release()
	if after := getLocks(t, url); len(after) != 0 {
		t.Errorf("locks left after release: %v", after)
	}
}

func TestCuratorLocks(t *testing.T) {
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: apt-get install -y openjdk-17-jdk-headless (scripts/install-deps.sh)", tool)
		}
	}
	srv, url := startServer(t)
	ids, release := holdLocks(t, "./curator_locks.sh", t.TempDir(), srv.Addr)
	locks := getLocks(t, url)
	check(t, locks, ids, want{"/cur/lock", []string{"holder"}, []string{"waiter"},
		[]string{"curator/exclusive"}, []string{"curator/exclusive"}})
	check(t, locks, ids, want{"/cur/rw", []string{"writer"}, []string{"reader"},
		[]string{"curator/write"}, []string{"curator/read"}})
	release()
	if after := getLocks(t, url); len(after) != 0 {
		t.Errorf("locks left after release: %v", after)
	}
}
