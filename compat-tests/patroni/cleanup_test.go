package patroni

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillAllFindsDetachedProcesses checks the cleanup's machinery on
// stand-ins: a "Patroni" that starts a "postmaster" in its own session (as
// Patroni does with setsid), each with a child whose command line does not
// name the node. killAll must end all of them, and leave alone the
// processes of a node whose directory name merely starts the same way.
func TestKillAllFindsDetachedProcesses(t *testing.T) {
	base := t.TempDir()
	mk := func(name string) *node {
		n := &node{name: name, dir: filepath.Join(base, name), groups: map[int]bool{}}
		n.dataDir = filepath.Join(n.dir, "data")
		n.logPath = filepath.Join(n.dir, "patroni.log")
		if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		// sh -c SCRIPT $0: $0 names the directory, as Patroni's config path
		// and a postmaster's -D do; the sleeps do not.
		n.argv = []string{"/bin/sh", "-c",
			`setsid /bin/sh -c 'sleep 60 & wait' "$0/postmaster" & sleep 60 & wait`, n.dataDir}
		return n
	}
	victim, bystander := mk("node1"), mk("node10")
	for _, n := range []*node{victim, bystander} {
		n.start(t)
	}
	t.Cleanup(func() {
		for _, n := range []*node{victim, bystander} {
			if err := n.killAll(5 * time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	// Each node: Patroni's group (shell, sleep), the detached group (shell,
	// sleep).
	var mine, others []int
	waitFor(t, 5*time.Second, "stand-ins running", func() error {
		mine, others = processesOf(victim), processesOf(bystander)
		if len(mine) != 4 || len(others) != 4 {
			return fmt.Errorf("node1 has %v, node10 has %v; want 4 each", mine, others)
		}
		return nil
	})
	if err := victim.killAll(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if left := victim.leftovers(); len(left) != 0 {
		t.Fatalf("left after killAll: %v", left)
	}
	for _, pid := range mine {
		if alive(pid) {
			t.Errorf("pid %d (%s) alive after killAll", pid, cmdline(pid))
		}
	}
	for _, pid := range others {
		if !alive(pid) {
			t.Errorf("pid %d of the other node killed", pid)
		}
	}
}

// processesOf lists the live processes of n's stand-ins: those of the
// groups of Patroni and of the process naming n's postmaster.
func processesOf(n *node) []int {
	n.mu.Lock()
	groups := map[int]bool{n.cmd.Process.Pid: true}
	n.mu.Unlock()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && strings.Contains(cmdline(pid), n.dataDir+"/postmaster") {
			groups[pid] = true
		}
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pgid, ok := procStat(pid); ok && state != "Z" && groups[pgid] {
			out = append(out, pid)
		}
	}
	return out
}
