package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Paths of Debian's packages (patroni, postgresql-15).
const (
	patroniBin  = "/usr/bin/patroni"
	pgBinDir    = "/usr/lib/postgresql/15/bin"
	installHint = "run scripts/install-deps.sh (apt-get install -y patroni postgresql-15)"
)

// Patroni's timing (bootstrap.dcs): the leader key is an ephemeral znode of a
// session of ttl seconds. Patroni needs ttl >= loop_wait + 2*retry_timeout.
const (
	ttl          = 10
	loopWait     = 1
	retryTimeout = 4
)

// Passwords of the roles Patroni creates.
const (
	superPassword = "sup3r"
	replPassword  = "rep1"
	rewindPass    = "rew1"
)

// node is one Patroni process and the PostgreSQL it manages, in dir.
type node struct {
	name    string
	dir     string
	dataDir string
	cfgPath string
	logPath string
	apiPort int
	pgPort  int
	cred    *syscall.Credential // nil when the test does not run as root
	argv    []string            // the command start runs: Patroni, or a stand-in in tests of node

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed once cmd is reaped
	groups map[int]bool  // process groups ever seen: Patroni's and postmasters'
}

// checkPrereqs fails the test unless Patroni and PostgreSQL 15 are installed.
func checkPrereqs(t *testing.T) {
	t.Helper()
	for _, p := range []string{patroniBin, filepath.Join(pgBinDir, "postgres"), filepath.Join(pgBinDir, "psql"),
		filepath.Join(pgBinDir, "pg_rewind")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s missing: %s", p, installHint)
		}
	}
}

// runAs returns the credential that Patroni and PostgreSQL run with: the
// postgres user when the test runs as root, nil otherwise.
func runAs(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs the postgres user (created by postgresql-15): %v; %s", err, installHint)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("postgres user ids: %v", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// newNode prepares the directory and configuration of a Patroni node; base
// must be traversable by the node's user.
func newNode(t *testing.T, base, scope, name string, zkHosts []string, apiPort, pgPort int, cred *syscall.Credential) *node {
	t.Helper()
	dir := filepath.Join(base, name)
	n := &node{
		name: name, dir: dir, dataDir: filepath.Join(dir, "data"),
		cfgPath: filepath.Join(dir, "patroni.yml"), logPath: filepath.Join(dir, "patroni.log"),
		apiPort: apiPort, pgPort: pgPort, cred: cred, groups: map[int]bool{},
	}
	n.argv = []string{patroniBin, n.cfgPath}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatalf("node dir: %v", err)
	}
	if err := os.WriteFile(n.cfgPath, []byte(n.config(scope, zkHosts)), 0o600); err != nil {
		t.Fatalf("write %s: %v", n.cfgPath, err)
	}
	if cred != nil {
		for _, p := range []string{dir, n.cfgPath} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatalf("chown %s: %v", p, err)
			}
		}
	}
	return n
}

// config renders the node's patroni.yml.
func (n *node) config(scope string, zkHosts []string) string {
	quoted := make([]string, len(zkHosts))
	for i, h := range zkHosts {
		quoted[i] = "'" + h + "'"
	}
	return fmt.Sprintf(`scope: %[1]s
name: %[2]s
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
zookeeper:
  hosts: [%[4]s]
bootstrap:
  dcs:
    ttl: %[5]d
    loop_wait: %[6]d
    retry_timeout: %[7]d
    maximum_lag_on_failover: 1048576
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 5
        max_replication_slots: 5
        shared_buffers: 16MB
        fsync: 'off'
  initdb:
  - encoding: UTF8
  - locale: C
postgresql:
  listen: 127.0.0.1:%[8]d
  connect_address: 127.0.0.1:%[8]d
  data_dir: %[9]s
  bin_dir: %[10]s
  pgpass: %[11]s
  authentication:
    superuser: {username: postgres, password: %[12]s}
    replication: {username: replicator, password: %[13]s}
    rewind: {username: rewinder, password: %[14]s}
  parameters:
    unix_socket_directories: '%[15]s'
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 md5
  - host replication replicator 127.0.0.1/32 md5
`, scope, n.name, n.apiPort, strings.Join(quoted, ", "), ttl, loopWait, retryTimeout,
		n.pgPort, n.dataDir, pgBinDir, filepath.Join(n.dir, "pgpass"),
		superPassword, replPassword, rewindPass, n.dir)
}

// start runs Patroni in its own process group, output appended to logPath.
func (n *node) start(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.done:
		default:
			t.Fatalf("%s: Patroni already runs", n.name)
		}
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("%s: log: %v", n.name, err)
	}
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Dir = n.dir
	cmd.Env = []string{"HOME=" + n.dir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8", "PYTHONUNBUFFERED=1"}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group; killed by the kernel if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: n.cred}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("%s: start Patroni: %v", n.name, err)
	}
	fmt.Fprintf(logf, "=== test: Patroni started, pid %d, %s\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	n.groups[cmd.Process.Pid] = true
}

// postmasterPID returns the pid in data_dir/postmaster.pid if that process
// still runs PostgreSQL on this node's data directory, else 0.
func (n *node) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	if !alive(pid) || !strings.Contains(cmdline(pid), n.dataDir) {
		return 0
	}
	return pid
}

// notePostmaster records the running postmaster's process group.
func (n *node) notePostmaster() {
	if pid := n.postmasterPID(); pid != 0 {
		n.mu.Lock()
		n.groups[pid] = true
		n.mu.Unlock()
	}
}

// kill is a crash of the machine: SIGKILL to Patroni's process group and to
// the postmaster's (Patroni starts it with setsid), waiting (bounded) until
// none of them runs.
func (n *node) kill(t *testing.T) {
	t.Helper()
	n.notePostmaster()
	if err := n.killAll(10 * time.Second); err != nil {
		t.Fatalf("%s: %v", n.name, err)
	}
	fmt.Fprintf(n.logAppender(), "=== test: node killed, %s\n", time.Now().Format(time.RFC3339Nano))
}

// logAppender returns a writer that appends a line to the node's log.
func (n *node) logAppender() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return f.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// killAll sends SIGKILL to every process group of the node and to any
// process whose command line names the node's directory (initdb,
// pg_basebackup, pg_rewind, a postmaster), until none runs or d passes.
func (n *node) killAll(d time.Duration) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd != nil {
		select {
		case <-done:
			// Reaped: its pid may be reused; what is left of its group is
			// found by leftovers.
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-done:
			case <-time.After(d):
				return fmt.Errorf("Patroni (pid %d) not reaped %v after SIGKILL", cmd.Process.Pid, d)
			}
		}
	}
	deadline := time.Now().Add(d)
	for {
		left := n.leftovers()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left %v after SIGKILL: %v", d, left)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if pg, err := syscall.Getpgid(pid); err == nil && pg == pid {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the node cleanly if it can: SIGTERM to Patroni (which stops
// PostgreSQL), then, after a bounded wait, SIGKILL of everything left.
func (n *node) stop(d time.Duration) error {
	n.notePostmaster()
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(d):
		}
	}
	return n.killAll(10 * time.Second)
}

// leftovers lists the live processes that belong to the node: members of a
// process group it ever had, or processes whose command line names its
// directory.
func (n *node) leftovers() []int {
	n.mu.Lock()
	groups := make(map[int]bool, len(n.groups))
	for g := range n.groups {
		groups[g] = true
	}
	n.mu.Unlock()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, pgid, ok := procStat(pid)
		if !ok || state == "Z" || state == "X" {
			continue
		}
		if groups[pgid] || strings.Contains(cmdline(pid), n.dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return "", 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0], pgid, err == nil
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// cmdline is the process's command line, arguments joined by spaces.
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// logTail returns the last lines of the node's log.
func (n *node) logTail(lines int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// status is the part of Patroni's GET /patroni answer the test reads.
type status struct {
	State       string `json:"state"`
	Role        string `json:"role"`
	Timeline    int    `json:"timeline"`
	Replication []struct {
		ApplicationName string `json:"application_name"`
		State           string `json:"state"`
	} `json:"replication"`
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// get asks the node's REST API for path and returns the status code and
// body.
func (n *node) get(path string) (int, []byte, error) {
	resp, err := httpClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", n.apiPort, path))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// status reads GET /patroni.
func (n *node) status() (status, error) {
	var st status
	_, body, err := n.get("/patroni")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("GET /patroni: %w: %s", err, body)
	}
	return st, nil
}

// isLeader reports whether GET /leader answers 200 (Patroni holds the leader
// key and PostgreSQL runs as primary).
func (n *node) isLeader() error {
	code, body, err := n.get("/leader")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: GET /leader %d: %s", n.name, code, body)
	}
	return nil
}

// streamsTo reports whether the node (a primary) has a walsender in state
// streaming to replica.
func (n *node) streamsTo(replica *node) error {
	if err := replica.isReplica(); err != nil {
		return err
	}
	st, err := n.status()
	if err != nil {
		return err
	}
	for _, r := range st.Replication {
		if r.ApplicationName == replica.name && r.State == "streaming" {
			return nil
		}
	}
	return fmt.Errorf("%s does not stream to %s: %+v", n.name, replica.name, st)
}

// isReplica reports whether GET /replica answers 200 (running replica).
func (n *node) isReplica() error {
	code, body, err := n.get("/replica")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: GET /replica %d: %s", n.name, code, body)
	}
	return nil
}

// psql runs one SQL command on the node's PostgreSQL over TCP as the
// superuser and returns its unaligned output.
func (n *node) psql(sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres connect_timeout=3", n.pgPort)
	cmd := exec.CommandContext(ctx, filepath.Join(pgBinDir, "psql"), conn, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+superPassword)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: psql %q: %w: %s", n.name, sql, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
