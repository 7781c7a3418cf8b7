package locktool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// serverOptions: a short tick, so sessions may be 1-10 s.
var serverOptions = zktest.Options{TickMs: 500}

// eachTarget runs f against a fresh server of every target.
func eachTarget(t *testing.T, f func(t *testing.T, srv *zktest.Server)) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			f(t, zktest.Start(t, target, serverOptions))
		})
	}
}

// holderScript is a zkraft lock CMD that logs its critical section, with its
// token and lock node, to $LOG.
const holderScript = `echo "begin $WHO $ZKRAFT_LOCK_TOKEN ${ZKRAFT_LOCK_NODE##*/}" >> "$LOG"; sleep 0.015; echo "end $WHO $ZKRAFT_LOCK_TOKEN" >> "$LOG"`

// contend runs `zkraft lock --layout layout` rounds times from each of two
// loops against a peer program (Curator or kazoo) on the same path, and
// checks the shared log.
func contend(t *testing.T, srv *zktest.Server, layout string, peer func(lockPath, log string) *proc, peerName string, rounds int) {
	bin := zkraftBin(t)
	lockPath := "/locktool/" + layout + "/lock"
	log := filepath.Join(t.TempDir(), "sections.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := peer(lockPath, log)
	p.expect(t, 30*time.Second, "ready")
	var wg sync.WaitGroup
	errs := make(chan string, 2*rounds)
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := fmt.Sprintf("zk%d", i)
			for r := 0; r < rounds; r++ {
				h := start(t, []string{"LOG=" + log, "WHO=" + who}, false,
					bin, "lock", "--server", srv.Addr, "--layout", layout, "--wait", "30s", lockPath, "--", "sh", "-c", holderScript)
				select {
				case <-h.done:
				case <-time.After(40 * time.Second):
					errs <- who + ": zkraft lock still running after 40 s"
					return
				}
				if h.code != 0 {
					errs <- fmt.Sprintf("%s round %d: zkraft lock exited %d: %s", who, r, h.code, h.Stderr())
					return
				}
			}
		}()
	}
	wg.Wait()
	p.expect(t, 60*time.Second, "done")
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	secs := checkLog(t, log)
	if n := countBy(secs, "zk"); n != 2*rounds {
		t.Errorf("%d critical sections of zkraft lock, want %d", n, 2*rounds)
	}
	if n := countBy(secs, peerName); n != 2*rounds {
		t.Errorf("%d critical sections of %s, want %d", n, peerName, 2*rounds)
	}
	// The turns must interleave, or nothing was excluded.
	switches := 0
	for i := 1; i < len(secs); i++ {
		if strings.HasPrefix(secs[i].who, "zk") != strings.HasPrefix(secs[i-1].who, "zk") {
			switches++
		}
	}
	if switches < 2 {
		t.Errorf("the lock passed between zkraft lock and %s only %d times", peerName, switches)
	}
	for _, s := range secs {
		if strings.HasPrefix(s.who, "zk") && !nodeLayouts[layout].MatchString(s.node) {
			t.Errorf("zkraft lock --layout %s made node %q", layout, s.node)
		}
	}
	conn, _ := srv.Connect(t)
	if left := children(t, conn, lockPath); len(left) > 0 {
		t.Errorf("lock nodes left after every holder exited: %v", left)
	}
	t.Logf("%d critical sections, %d hand-overs between zkraft lock and %s, tokens %d..%d", len(secs), switches, peerName, secs[0].token, secs[len(secs)-1].token)
}

// TestLockWithCurator: zkraft lock (Curator layout) and Curator 5's
// InterProcessMutex (two sessions each) take turns on one path: no two
// critical sections overlap, fencing tokens strictly increase, every
// acquisition completes, no node is left.
func TestLockWithCurator(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		const rounds = 12
		env := javaPeerEnv(t)
		contend(t, srv, "curator", func(lockPath, log string) *proc {
			return start(t, env, false, peerScript(t, "peer.sh"), "mutex", srv.Addr, lockPath, log, fmt.Sprint(rounds), "curator1", "curator2")
		}, "curator", rounds)
	})
}

// TestLockWithKazoo: the same with kazoo's Lock and --layout kazoo.
func TestLockWithKazoo(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		const rounds = 12
		contend(t, srv, "kazoo", func(lockPath, log string) *proc {
			return start(t, nil, false, "/usr/bin/python3", peerScript(t, "kazoo_peer.py"), srv.Addr, lockPath, log, fmt.Sprint(rounds), "kazoo1", "kazoo2")
		}, "kazoo", rounds)
	})
}

// TestLockExitStatus: zkraft lock exits with CMD's status (128+signal if
// CMD was killed) and leaves no lock node.
func TestLockExitStatus(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		bin := zkraftBin(t)
		conn, _ := srv.Connect(t)
		tests := []struct {
			name   string
			script string
			want   int
		}{
			{"success", "exit 0", 0},
			{"failure", "exit 3", 3},
			{"status 42", "exit 42", 42},
			{"killed", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
			{"environment", `test -n "$ZKRAFT_LOCK_TOKEN" && test "$ZKRAFT_LOCK_TOKEN" -gt 0 && case "$ZKRAFT_LOCK_NODE" in /locktool/status/_c_*-lock-*) exit 5;; esac; exit 1`, 5},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				p := start(t, nil, false, bin, "lock", "--server", srv.Addr, "/locktool/status", "--", "sh", "-c", tc.script)
				if got := p.wait(t, 20*time.Second); got != tc.want {
					t.Errorf("exit status %d, want %d; stderr: %s", got, tc.want, p.Stderr())
				}
				if left := children(t, conn, "/locktool/status"); len(left) > 0 {
					t.Errorf("lock nodes left: %v", left)
				}
			})
		}
		t.Run("ZKRAFT_SERVER", func(t *testing.T) {
			p := start(t, []string{"ZKRAFT_SERVER=" + srv.Addr}, false, bin, "lock", "/locktool/status", "--", "sh", "-c", "exit 6")
			if got := p.wait(t, 20*time.Second); got != 6 {
				t.Errorf("exit status %d, want 6; stderr: %s", got, p.Stderr())
			}
		})
		t.Run("no server", func(t *testing.T) {
			port, err := freeport.Port()
			if err != nil {
				t.Fatal(err)
			}
			p := start(t, nil, false, bin, "lock", "--server", fmt.Sprintf("127.0.0.1:%d", port), "--session-timeout", "1s", "/locktool/status", "--", "true")
			if got := p.wait(t, 20*time.Second); got != 1 {
				t.Errorf("exit status %d, want 1; stderr: %s", got, p.Stderr())
			}
			if !strings.Contains(p.Stderr(), "cannot connect to 127.0.0.1:") {
				t.Errorf("stderr: %q", p.Stderr())
			}
		})
		t.Run("cannot start", func(t *testing.T) {
			p := start(t, nil, false, bin, "lock", "--server", srv.Addr, "/locktool/status", "--", "/nonexistent/cmd")
			if got := p.wait(t, 20*time.Second); got != 127 {
				t.Errorf("exit status %d, want 127; stderr: %s", got, p.Stderr())
			}
		})
	})
}

// TestLockWaitAndSignals: --wait gives up with 124 while another holds the
// lock and removes its node; a SIGTERM to zkraft lock reaches CMD, whose
// status it exits with, and the lock is released.
func TestLockWaitAndSignals(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		bin := zkraftBin(t)
		conn, _ := srv.Connect(t)
		dir := t.TempDir()
		const lockPath = "/locktool/wait"
		holder := start(t, []string{"OUT=" + dir}, false, bin, "lock", "--server", srv.Addr, lockPath, "--",
			"sh", "-c", `trap 'echo TERM > "$OUT/term"; exit 9' TERM; touch "$OUT/held"; while sleep 0.05; do :; done`)
		waitFor(t, 15*time.Second, "holder in its critical section", func() error {
			if _, err := os.Stat(filepath.Join(dir, "held")); err != nil {
				return err
			}
			return nil
		})

		began := time.Now()
		waiter := start(t, nil, false, bin, "lock", "--server", srv.Addr, "--wait", "1s", lockPath, "--", "sh", "-c", "echo ran > "+filepath.Join(dir, "waiter"))
		code := waiter.wait(t, 15*time.Second)
		took := time.Since(began)
		if code != 124 {
			t.Errorf("--wait 1s: exit status %d, want 124; stderr: %s", code, waiter.Stderr())
		}
		if took < time.Second || took > 8*time.Second {
			t.Errorf("--wait 1s gave up after %v", took)
		}
		if !strings.Contains(waiter.Stderr(), "gave up waiting for the lock at "+lockPath+" after 1s") {
			t.Errorf("--wait message: %q", waiter.Stderr())
		}
		if fileText(filepath.Join(dir, "waiter")) != "" {
			t.Error("the waiter's CMD ran without the lock")
		}
		if left := children(t, conn, lockPath); len(left) != 1 {
			t.Errorf("after the waiter gave up: lock nodes %v, want only the holder's", left)
		}

		// A signal while waiting ends the wait (128+signal) and removes
		// the waiter's node.
		waiter = start(t, nil, false, bin, "lock", "--server", srv.Addr, lockPath, "--", "sh", "-c", "echo ran > "+filepath.Join(dir, "waiter"))
		waitFor(t, 15*time.Second, "the second waiter's node", func() error {
			if n := len(children(t, conn, lockPath)); n != 2 {
				return fmt.Errorf("%d lock nodes", n)
			}
			return nil
		})
		waiter.signal(syscall.SIGINT)
		if code := waiter.wait(t, 15*time.Second); code != 128+int(syscall.SIGINT) {
			t.Errorf("SIGINT while waiting: exit status %d, want 130; stderr: %s", code, waiter.Stderr())
		}
		if left := children(t, conn, lockPath); len(left) != 1 {
			t.Errorf("after the interrupted waiter: lock nodes %v, want only the holder's", left)
		}
		if fileText(filepath.Join(dir, "waiter")) != "" {
			t.Error("the interrupted waiter's CMD ran")
		}

		holder.signal(syscall.SIGTERM)
		if code := holder.wait(t, 15*time.Second); code != 9 {
			t.Errorf("holder after SIGTERM: exit status %d, want CMD's 9; stderr: %s", code, holder.Stderr())
		}
		if fileText(filepath.Join(dir, "term")) != "TERM\n" {
			t.Error("CMD did not get the SIGTERM sent to zkraft lock")
		}
		if left := children(t, conn, lockPath); len(left) != 0 {
			t.Errorf("lock nodes left after the holder exited: %v", left)
		}
	})
}

// lostScript is a CMD that records its lock node, runs until stopped and
// records the SIGTERM it gets.
const lostScript = `trap 'echo TERM > "$OUT/term"; exit 7' TERM; echo "$ZKRAFT_LOCK_NODE" > "$OUT/node.tmp"; mv "$OUT/node.tmp" "$OUT/node"; while sleep 0.05; do :; done`

// startLost starts zkraft lock with lostScript via server addr and waits
// until CMD runs; it returns the process, the lock node and OUT.
func startLost(t *testing.T, addr, lockPath string, extra ...string) (*proc, string, string) {
	t.Helper()
	out := t.TempDir()
	args := append([]string{zkraftBin(t), "lock", "--server", addr, "--kill-after", "3s"}, extra...)
	args = append(args, lockPath, "--", "sh", "-c", lostScript)
	p := start(t, []string{"OUT=" + out}, false, args...)
	waitFor(t, 15*time.Second, "CMD running", func() error {
		if fileText(filepath.Join(out, "node")) == "" {
			return fmt.Errorf("no node file; stderr: %s", p.Stderr())
		}
		return nil
	})
	return p, strings.TrimSpace(fileText(filepath.Join(out, "node"))), out
}

// TestLockLost: when the hold is lost while CMD runs, CMD gets SIGTERM and
// zkraft lock exits 125 with a message; while only disconnected, CMD runs on.
func TestLockLost(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		conn, _ := srv.Connect(t)

		t.Run("node deleted", func(t *testing.T) {
			p, node, out := startLost(t, srv.Addr, "/locktool/lost/deleted")
			if err := conn.Delete(node, -1); err != nil {
				t.Fatalf("delete %s: %v", node, err)
			}
			if code := p.wait(t, 10*time.Second); code != 125 {
				t.Errorf("exit status %d, want 125", code)
			}
			if fileText(filepath.Join(out, "term")) != "TERM\n" {
				t.Error("CMD got no SIGTERM")
			}
			if !strings.Contains(p.Stderr(), "lost the lock at "+node+": lock node "+node+" was deleted") {
				t.Errorf("stderr: %q", p.Stderr())
			}
		})

		t.Run("SIGKILL after kill-after", func(t *testing.T) {
			out := t.TempDir()
			p := start(t, []string{"OUT=" + out}, false, zkraftBin(t), "lock", "--server", srv.Addr, "--kill-after", "500ms", "/locktool/lost/kill", "--",
				"sh", "-c", `trap '' TERM; echo "$ZKRAFT_LOCK_NODE" > "$OUT/node.tmp"; mv "$OUT/node.tmp" "$OUT/node"; while sleep 0.05; do :; done`)
			waitFor(t, 15*time.Second, "CMD running", func() error {
				if fileText(filepath.Join(out, "node")) == "" {
					return fmt.Errorf("no node file")
				}
				return nil
			})
			node := strings.TrimSpace(fileText(filepath.Join(out, "node")))
			if err := conn.Delete(node, -1); err != nil {
				t.Fatalf("delete %s: %v", node, err)
			}
			if code := p.wait(t, 10*time.Second); code != 125 {
				t.Errorf("exit status %d, want 125", code)
			}
			if !strings.Contains(p.Stderr(), "sending SIGKILL") || !strings.Contains(p.Stderr(), "CMD stopped (status 137)") {
				t.Errorf("stderr: %q", p.Stderr())
			}
		})

		t.Run("zkraft lock killed", func(t *testing.T) {
			// CMD gets SIGTERM when its zkraft lock dies; the node goes with
			// the session.
			p, node, out := startLost(t, srv.Addr, "/locktool/lost/killed", "--session-timeout", "1s")
			p.signal(syscall.SIGKILL)
			if code := p.wait(t, 10*time.Second); code != 128+int(syscall.SIGKILL) {
				t.Errorf("exit status %d, want 137", code)
			}
			waitFor(t, 10*time.Second, "CMD's SIGTERM", func() error {
				if fileText(filepath.Join(out, "term")) != "TERM\n" {
					return fmt.Errorf("no term file")
				}
				return nil
			})
			waitFor(t, 15*time.Second, "the dead holder's node gone", func() error {
				if ok, _, err := conn.Exists(node); err != nil || ok {
					return fmt.Errorf("exists %v, err %v", ok, err)
				}
				return nil
			})
		})

		t.Run("session expired", func(t *testing.T) {
			// Through a proxy that then blackholes both directions: the
			// server expires the session after 2 s of silence; zkraft lock
			// must stop CMD without waiting to hear it.
			px, err := faultproxy.Listen(srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			const lockPath = "/locktool/lost/expired"
			p, node, out := startLost(t, px.Addr(), lockPath, "--session-timeout", "2s")
			px.Block(faultproxy.Up, true)
			px.Block(faultproxy.Down, true)
			cut := time.Now()
			if code := p.wait(t, 15*time.Second); code != 125 {
				t.Errorf("exit status %d, want 125", code)
			}
			stopped := time.Since(cut)
			if fileText(filepath.Join(out, "term")) != "TERM\n" {
				t.Error("CMD got no SIGTERM")
			}
			stderr := p.Stderr()
			if !strings.Contains(stderr, "SUSPENDED") || !strings.Contains(stderr, "lost the lock at "+node+": no contact with ZooKeeper for the session timeout (2s)") {
				t.Errorf("stderr: %q", stderr)
			}
			if stopped > 5*time.Second {
				t.Errorf("CMD stopped %v after the cut; the session timeout is 2 s", stopped)
			}
			// The server expires the session: the node goes and another
			// holder gets the lock.
			waitFor(t, 15*time.Second, "the expired session's node gone", func() error {
				if ok, _, err := conn.Exists(node); err != nil || ok {
					return fmt.Errorf("exists %v, err %v", ok, err)
				}
				return nil
			})
			next := start(t, nil, false, zkraftBin(t), "lock", "--server", srv.Addr, "--wait", "10s", lockPath, "--", "true")
			if code := next.wait(t, 15*time.Second); code != 0 {
				t.Errorf("next holder: exit %d: %s", code, next.Stderr())
			}
		})

		t.Run("suspended keeps CMD", func(t *testing.T) {
			// The proxy drops the connection; the client reconnects to the
			// same session at once: CMD keeps running and finishes.
			px, err := faultproxy.Listen(srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			out := t.TempDir()
			p := start(t, []string{"OUT=" + out}, false, zkraftBin(t), "lock", "--server", px.Addr(), "--session-timeout", "4s", "/locktool/lost/suspended", "--",
				"sh", "-c", `touch "$OUT/started"; i=0; while [ $i -lt 30 ]; do echo tick >> "$OUT/ticks"; sleep 0.05; i=$((i+1)); done; exit 4`)
			waitFor(t, 15*time.Second, "CMD running", func() error {
				_, err := os.Stat(filepath.Join(out, "started"))
				return err
			})
			px.Reset()
			if code := p.wait(t, 15*time.Second); code != 4 {
				t.Errorf("exit status %d, want CMD's 4", code)
			}
			if n := strings.Count(fileText(filepath.Join(out, "ticks")), "tick"); n != 30 {
				t.Errorf("CMD ticked %d times of 30", n)
			}
			stderr := p.Stderr()
			if !strings.Contains(stderr, "disconnected from ZooKeeper (SUSPENDED); CMD keeps running") ||
				!strings.Contains(stderr, "reconnected to ZooKeeper, session alive: still holding the lock") {
				t.Errorf("stderr: %q", stderr)
			}
			if left := children(t, conn, "/locktool/lost/suspended"); len(left) != 0 {
				t.Errorf("lock nodes left: %v", left)
			}
		})
	})
}

// readLockPeer takes kazoo's ReadLock at argv[2] on server argv[1], prints
// "held", releases it on a line on stdin and prints "released".
const readLockPeer = `
import logging, sys
from kazoo.client import KazooClient
logging.getLogger("kazoo").setLevel(logging.ERROR)
zk = KazooClient(hosts=sys.argv[1], timeout=10.0)
zk.start(timeout=15)
lock = zk.ReadLock(sys.argv[2], "reader")
if not lock.acquire(timeout=15):
    print("error: no read lock", flush=True)
    sys.exit(1)
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
zk.stop()
zk.close()
`

// TestLockKazooReadLock: kazoo's Lock waits for ReadLock holders
// (__rlock__ nodes); so does zkraft lock --layout kazoo.
func TestLockKazooReadLock(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		const lockPath = "/locktool/rlock"
		out := filepath.Join(t.TempDir(), "ran")
		reader := start(t, nil, true, "/usr/bin/python3", "-c", readLockPeer, srv.Addr, lockPath)
		reader.expect(t, 30*time.Second, "held")
		w := start(t, nil, false, zkraftBin(t), "lock", "--server", srv.Addr, "--layout", "kazoo", "--wait", "20s", lockPath, "--", "sh", "-c", "echo ran > "+out)
		time.Sleep(1500 * time.Millisecond)
		if fileText(out) != "" {
			t.Fatal("zkraft lock --layout kazoo ran CMD while a kazoo ReadLock was held")
		}
		reader.send(t, "release")
		reader.expect(t, 15*time.Second, "released")
		if code := w.wait(t, 15*time.Second); code != 0 {
			t.Errorf("zkraft lock: exit %d; stderr: %s", code, w.Stderr())
		}
		if fileText(out) != "ran\n" {
			t.Error("CMD did not run once the read lock was released")
		}
	})
}

// running reports whether process pid is alive (a zombie is not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}

// TestLockStopsWholeGroup: a process of CMD's group that ignores SIGTERM
// gets SIGKILL after --kill-after also when CMD itself has exited: on a
// loss, and when CMD exits on its own (the lock is released only then).
func TestLockStopsWholeGroup(t *testing.T) {
	eachTarget(t, func(t *testing.T, srv *zktest.Server) {
		conn, _ := srv.Connect(t)
		// The background sleep ignores SIGTERM; the shell itself does not.
		const bg = `trap '' TERM; sleep 60 >/dev/null 2>&1 & echo $! > "$OUT/bg"; trap 'exit 7' TERM; echo "$ZKRAFT_LOCK_NODE" > "$OUT/node.tmp"; mv "$OUT/node.tmp" "$OUT/node"; `
		tests := []struct {
			name   string
			script string
			lose   bool
			want   int
		}{
			{"on loss", bg + `while sleep 0.05; do :; done`, true, 125},
			{"on exit", bg + `exit 3`, false, 3},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				out := t.TempDir()
				lockPath := "/locktool/group/" + strings.ReplaceAll(tc.name, " ", "-")
				p := start(t, []string{"OUT=" + out}, false, zkraftBin(t), "lock", "--server", srv.Addr, "--kill-after", "500ms", lockPath, "--", "sh", "-c", tc.script)
				waitFor(t, 15*time.Second, "CMD running", func() error {
					if fileText(filepath.Join(out, "node")) == "" || !strings.HasSuffix(fileText(filepath.Join(out, "bg")), "\n") {
						return fmt.Errorf("no node or bg file; stderr: %s", p.Stderr())
					}
					return nil
				})
				bgPid, err := strconv.Atoi(strings.TrimSpace(fileText(filepath.Join(out, "bg"))))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Kill(bgPid, syscall.SIGKILL) })
				if tc.lose {
					node := strings.TrimSpace(fileText(filepath.Join(out, "node")))
					if err := conn.Delete(node, -1); err != nil {
						t.Fatalf("delete %s: %v", node, err)
					}
				}
				if code := p.wait(t, 15*time.Second); code != tc.want {
					t.Errorf("exit status %d, want %d", code, tc.want)
				}
				if running(bgPid) {
					t.Errorf("a process of CMD's group (pid %d, ignoring SIGTERM) still runs after zkraft lock exited; stderr: %s", bgPid, p.Stderr())
				}
				if !strings.Contains(p.Stderr(), "sending SIGKILL") {
					t.Errorf("stderr: %q", p.Stderr())
				}
				if left := children(t, conn, lockPath); len(left) != 0 {
					t.Errorf("lock nodes left: %v", left)
				}
			})
		}
	})
}

// TestLockExpiredLockDelay: the server expires the session and the client
// then hears it (Expired, not the LOST timer): CMD is stopped and zkraft
// lock exits 125 without deleting the lock node from the new session
// go-zookeeper opens, so that lock-delay keeps it for the dead session.
//
// Only the client's pings are cut (a one-way link) and the lock node's
// data is changed meanwhile: the watch event it then reads moves the
// client's LOST deadline (last read + timeout) past the server's expiry,
// so the Expired reply on reconnection comes first. zkraft only (Apache
// ZooKeeper has no lock-delay).
func TestLockExpiredLockDelay(t *testing.T) {
	srv := zktest.Start(t, zktest.Zkraft, zktest.Options{TickMs: 500, Extra: map[string]string{
		"zkraft.lockDelayMs": "10000", "zkraft.lockDelayPaths": "/locktool",
	}})
	conn, _ := srv.Connect(t)
	px, err := faultproxy.Listen(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	out := t.TempDir()
	// CMD takes a second to stop: zkraft lock releases after go-zookeeper
	// has its new session.
	p := start(t, []string{"OUT=" + out}, false, zkraftBin(t), "lock", "--server", px.Addr(), "--session-timeout", "8s", "/locktool/expired", "--",
		"sh", "-c", `trap 'echo TERM > "$OUT/term"; sleep 1; exit 7' TERM; echo "$ZKRAFT_LOCK_NODE" > "$OUT/node.tmp"; mv "$OUT/node.tmp" "$OUT/node"; while sleep 0.05; do :; done`)
	waitFor(t, 15*time.Second, "CMD running", func() error {
		if fileText(filepath.Join(out, "node")) == "" {
			return fmt.Errorf("no node file; stderr: %s", p.Stderr())
		}
		return nil
	})
	node := strings.TrimSpace(fileText(filepath.Join(out, "node")))
	_, st, err := conn.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	owner := st.EphemeralOwner

	px.Block(faultproxy.Up, true)
	cut := time.Now()
	time.Sleep(4 * time.Second)
	if _, err := conn.Set(node, []byte("x"), -1); err != nil { // a watch event for the client
		t.Fatal(err)
	}
	// The server expires the session 8 s (and a tick) after the last ping,
	// at most cut+8.5 s; the client's LOST deadline is about cut+12 s.
	time.Sleep(time.Until(cut.Add(9500 * time.Millisecond)))
	px.Block(faultproxy.Up, false)
	code := p.wait(t, 15*time.Second)
	ok, st, err := conn.Exists(node)
	if code != 125 {
		t.Errorf("exit status %d, want 125", code)
	}
	if fileText(filepath.Join(out, "term")) != "TERM\n" {
		t.Error("CMD got no SIGTERM")
	}
	if !strings.Contains(p.Stderr(), "lost the lock at "+node+": session expired") {
		t.Errorf("stderr: %q", p.Stderr())
	}
	if err != nil || !ok || st.EphemeralOwner != owner {
		t.Errorf("right after zkraft lock exited: node %s exists %v (err %v); lock-delay must keep it for the dead session %#x", node, ok, err, owner)
	}
}
