package locktool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/recipe"
	"github.com/zkraft/zkraft/internal/zktest"
)

// TestElectWithCurator: zkraft elect and Curator's LeaderLatch take part
// in one election. zkraft elect runs CMD only while it leads, Curator names
// it as leader while it does, CMD is stopped (SIGTERM, exit 125) when its
// latch node goes, and `zkraft elect --watch` prints each leader's id once
// per change ("" while there is none).
func TestElectWithCurator(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		bin := zkraftBin(t)
		env := javaPeerEnv(t)
		conn, _ := srv.Connect(t)
		const latch = "/locktool/elect"
		const wait = 20 * time.Second
		var printed []string
		watchSaw := func(p *proc, want string) {
			t.Helper()
			if skipped := p.expect(t, wait, want); len(skipped) > 0 {
				t.Errorf("--watch printed %q before %q", skipped, want)
			}
			printed = append(printed, want)
		}

		watch := start(t, nil, false, bin, "elect", "--server", srv.Addr, "--watch", latch)
		watchSaw(watch, "")

		java := start(t, env, true, peerScript(t, "peer.sh"), "latch", srv.Addr, latch)
		java.send(t, "join curator-1")
		java.expect(t, wait, "joined curator-1")
		java.send(t, "await curator-1")
		java.expect(t, wait, "leader curator-1")
		watchSaw(watch, "curator-1")

		out := t.TempDir()
		elect := start(t, []string{"OUT=" + out}, false, bin, "elect", "--server", srv.Addr, "--id", "zk-1", latch, "--", "sh", "-c",
			`trap 'echo TERM > "$OUT/term"; exit 0' TERM; echo "$ZKRAFT_LEADER_ID $ZKRAFT_LEADER_NODE" > "$OUT/leader.tmp"; mv "$OUT/leader.tmp" "$OUT/leader"; while sleep 0.05; do :; done`)
		waitFor(t, wait, "zkraft elect's latch node", func() error {
			if n := len(recipe.Latch.Contenders(children(t, conn, latch))); n != 2 {
				return fmt.Errorf("%d latch nodes", n)
			}
			return nil
		})
		time.Sleep(300 * time.Millisecond)
		if fileText(filepath.Join(out, "leader")) != "" {
			t.Fatal("zkraft elect ran CMD while curator-1 leads")
		}
		java.send(t, "status curator-1")
		java.expect(t, wait, "status curator-1 has=true leader=curator-1")

		// curator-1 leaves: zkraft elect leads, and Curator says so.
		java.send(t, "leave curator-1")
		java.expect(t, wait, "left curator-1")
		waitFor(t, wait, "CMD of zkraft elect running", func() error {
			if fileText(filepath.Join(out, "leader")) == "" {
				return fmt.Errorf("not yet; stderr: %s", elect.Stderr())
			}
			return nil
		})
		f := strings.Fields(fileText(filepath.Join(out, "leader")))
		if len(f) != 2 || f[0] != "zk-1" || !strings.HasPrefix(f[1], latch+"/_c_") || !strings.Contains(f[1], "-latch-") {
			t.Fatalf("CMD's ZKRAFT_LEADER_ID and ZKRAFT_LEADER_NODE: %q", f)
		}
		watchSaw(watch, "zk-1")
		java.send(t, "join curator-2")
		java.expect(t, wait, "joined curator-2")
		java.send(t, "status curator-2")
		java.expect(t, wait, "status curator-2 has=false leader=zk-1")

		// zkraft elect loses its leadership (its node is deleted): CMD is
		// stopped and curator-2 leads.
		if err := conn.Delete(f[1], -1); err != nil {
			t.Fatalf("delete %s: %v", f[1], err)
		}
		if code := elect.wait(t, wait); code != 125 {
			t.Errorf("zkraft elect exit status %d, want 125", code)
		}
		if fileText(filepath.Join(out, "term")) != "TERM\n" {
			t.Error("CMD got no SIGTERM when leadership was lost")
		}
		if !strings.Contains(elect.Stderr(), "lost the leadership at "+f[1]) {
			t.Errorf("stderr: %q", elect.Stderr())
		}
		java.send(t, "await curator-2")
		java.expect(t, wait, "leader curator-2")
		watchSaw(watch, "curator-2")
		java.send(t, "leave curator-2")
		java.expect(t, wait, "left curator-2")
		watchSaw(watch, "")

		watch.signal(syscall.SIGTERM)
		if code := watch.wait(t, wait); code != 0 {
			t.Errorf("--watch exit status %d after SIGTERM, want 0", code)
		}
		t.Logf("--watch printed %q", printed)
		if err := java.stdin.Close(); err != nil && !os.IsNotExist(err) {
			t.Log(err)
		}
		if code := java.wait(t, wait); code != 0 {
			t.Errorf("Curator peer exit status %d", code)
		}
	})
}
