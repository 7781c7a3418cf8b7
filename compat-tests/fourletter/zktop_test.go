package fourletter_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// zktopTimeout bounds the wait for zktop's screen to show the server.
const zktopTimeout = 20 * time.Second

// TestZktop runs Debian's zktop, a curses program that polls stat, inside a
// detached tmux session (it needs a terminal) and reads its screen: the
// server's row must show it standalone and parsed (not "Unavailable"), the
// ensemble line must carry srvr's node count, and the session opened by the
// test must be listed as a connection with a session (interest ops 1).
func TestZktop(t *testing.T) {
	for _, bin := range []string{"zktop", "tmux"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not installed (Debian packages zktop and tmux: scripts/install-deps.sh): %v", bin, err)
		}
	}
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, zktest.Options{})
			c, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(discardLogger{}), zk.WithLogInfo(false))
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer c.Close()
			if _, err := c.Create("/zktop", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create: %v", err)
			}
			srvr, err := srv.FourLetter("srvr")
			if err != nil {
				t.Fatalf("srvr: %v", err)
			}
			nodes := regexp.MustCompile(`Node count: (\d+)`).FindStringSubmatch(srvr)
			if nodes == nil {
				t.Fatalf("srvr has no node count:\n%s", srvr)
			}

			sock := filepath.Join(t.TempDir(), "tmux.sock")
			tmux := func(args ...string) (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				out, err := exec.CommandContext(ctx, "tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
				return string(out), err
			}
			if out, err := tmux("new-session", "-d", "-x", "150", "-y", "40",
				"env TERM=screen zktop --servers "+srv.Addr); err != nil {
				t.Fatalf("start zktop under tmux: %v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = tmux("kill-server") })

			host, port := "127.0.0.1", strconv.Itoa(srv.Port)
			wants := map[string]*regexp.Regexp{
				"ensemble line with srvr's node count": regexp.MustCompile(`(?m)^Ensemble -- nodecount:` + nodes[1] + ` zxid:0x[0-9a-f]+ sessions:\d+`),
				"server row, standalone and parsed": regexp.MustCompile(`(?m)^0\s+` + regexp.QuoteMeta(host) + `\s+` + port +
					` S\s+\d+\s+\d+\s+\d+\s+[2-9]\d*\s+\d+\s+\d+(\.\d+)?\s+\d+\s*$`),
				"session row (interest ops 1)": regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(host) + `\s+\d+ 0 1\s+\d+\s+\d+\s+\d+\s*$`),
			}
			deadline := time.Now().Add(zktopTimeout)
			var screen string
			for {
				screen, err = tmux("capture-pane", "-p")
				missing := []string{}
				for name, re := range wants {
					if !re.MatchString(screen) {
						missing = append(missing, name)
					}
				}
				if err == nil && len(missing) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("zktop's screen after %v lacks %s (err %v):\n%s", zktopTimeout, strings.Join(missing, ", "), err, screen)
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("zktop screen:\n%s", strings.TrimRight(screen, "\n"))
			if out, err := tmux("send-keys", "q"); err != nil {
				t.Errorf("send q to zktop: %v\n%s", err, out)
			}
		})
	}
}
