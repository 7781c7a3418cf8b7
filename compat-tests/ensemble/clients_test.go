package ensemble

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// python is Debian's interpreter, the one python3-kazoo is installed for.
const python = "/usr/bin/python3"

// clientLockTimeout bounds one run of a real-client lock program (each
// budgets itself under 90 s).
const clientLockTimeout = 120 * time.Second

// progressLogEvery is how often a "progress N" line is logged: every line
// would flood the test log.
const progressLogEvery = 25

// TestKazooLockFailover: eight kazoo clients (kazoo_lock.py) contend on
// kazoo's Lock over the multi-host string while the leader is killed and
// later restarted; the program checks mutual exclusion, increasing fencing
// tokens and that every client completes its quota.
func TestKazooLockFailover(t *testing.T) {
	script, err := filepath.Abs("kazoo_lock.py")
	if err != nil {
		t.Fatalf("locate kazoo_lock.py: %v", err)
	}
	if out, err := exec.Command(python, "-c", "import kazoo.client, kazoo.recipe.lock").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		lockFailover(t, c, nil, python, "-u", script, c.ConnectString())
	})
}

// TestCuratorLockFailover is TestKazooLockFailover with Curator's
// InterProcessMutex (curatorlock/CuratorLock.java, run by curator_lock.sh).
func TestCuratorLockFailover(t *testing.T) {
	script, err := filepath.Abs("curator_lock.sh")
	if err != nil {
		t.Fatalf("locate curator_lock.sh: %v", err)
	}
	classes := t.TempDir()
	env := []string{"CURATOR_LOCK_BUILD_DIR=" + classes}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, script, "--build-only")
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("compile CuratorLock.java: %v\n%s", err, out)
	}
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		lockFailover(t, c, env, script, c.ConnectString())
	})
}

// lockFailover runs a lock program (argv, which prints "progress <total>"
// after each acquisition) against c: once the first acquisitions are made
// it kills the leader with SIGKILL, waits for acquisitions to resume under
// the new leader, restarts the old leader, and fails unless the program
// passes all its checks.
func lockFailover(t *testing.T, c *zktest.Cluster, env []string, argv ...string) {
	t.Helper()
	var progress atomic.Int64
	onLine := func(line string) {
		if v, ok := strings.CutPrefix(line, "progress "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				progress.Store(max(progress.Load(), n))
				if n%progressLogEvery != 0 {
					return
				}
			}
		}
		t.Log(line)
	}
	p := zktest.StartSuite(t, clientLockTimeout, env, onLine, argv...)
	waitProgress := func(d time.Duration, what string, want int64) {
		t.Helper()
		deadline := time.Now().Add(d)
		for progress.Load() < want {
			select {
			case <-p.Done():
				p.Wait(t) // reports the program's failure, if any
				t.Fatalf("%s: the program ended after %d acquisitions, want %d", what, progress.Load(), want)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d acquisitions after %v, want %d (ensemble %s)", what, progress.Load(), d, want, c.Modes())
			}
		}
	}

	const clients = 8
	waitProgress(45*time.Second, "first acquisitions", clients)
	leader := c.Leader(t)
	leader.Kill()
	atKill := progress.Load()
	t.Logf("killed leader %d after %d acquisitions", leader.ID, atKill)
	c.Leader(t)
	waitProgress(45*time.Second, "acquisitions after the leader kill", atKill+clients)
	t.Logf("acquisitions resumed: %d", progress.Load())
	leader.Start(t)
	atRestart := progress.Load()
	t.Logf("restarted member %d after %d acquisitions", leader.ID, atRestart)
	p.Wait(t)
	if final := progress.Load(); final == atRestart {
		t.Logf("note: the program finished before member %d was back (%d acquisitions)", leader.ID, final)
	}
}
