package zktest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
)

// clusterReadyTimeout bounds the wait for an ensemble to settle: exactly one
// leader, every other member a follower.
const clusterReadyTimeout = 30 * time.Second

// ClusterOptions tune an ensemble. The zero value is a zkraft ensemble with
// tickTime 500 ms and reconfig enabled.
type ClusterOptions struct {
	// Target is Zkraft (the default) or Apache.
	Target Target
	// TickMs is tickTime in ms (default 500, so that session timeouts, from
	// 2*TickMs to 20*TickMs, stay short).
	TickMs int
	// SuperDigest is "super:<base64 sha1>" (see DigestACLHash); reconfig
	// needs the super user unless SkipACL is set.
	SuperDigest string
	// JVMFlags, when not nil, replace the test JVM flags of Apache members
	// (see Options.JVMFlags).
	JVMFlags []string
	// SkipACL sets skipACL=yes: any client may reconfigure (zkraft applies
	// it to reconfig only; Apache to every ACL check).
	SkipACL bool
	// Extra holds additional zoo.cfg keys; they override the defaults.
	Extra map[string]string
	// Route, when set, gives the loopback peer and election ports member
	// from dials to reach member to (a fault-injecting proxy, say) in from's
	// zoo.cfg. The server lines then carry no client address, so that no
	// member publishes a /zookeeper/config whose addresses would replace
	// these routes; such clusters are not for reconfig tests (AddMember).
	Route func(from, to *Member) (peerPort, electionPort int, err error)
	// Observers makes the last Observers of the n members observers
	// (server.N=...:observer, and peerType=observer in their own zoo.cfg).
	Observers int
}

func (o ClusterOptions) target() Target {
	if o.Target == "" {
		return Zkraft
	}
	return o.Target
}

func (o ClusterOptions) tickMs() int {
	if o.TickMs <= 0 {
		return 500
	}
	return o.TickMs
}

// Cluster is a replicated ensemble of server processes on loopback, each in
// its own directory under Dir.
type Cluster struct {
	Target Target
	Dir    string
	// Members lists the members the test considers part of the ensemble, in
	// id order: StartCluster's, plus AddMember's, minus Remove's.
	Members []*Member

	opts ClusterOptions

	mu  sync.Mutex
	all []*Member // every member ever started, for the cleanup
}

// Member is one process of a Cluster. The embedded Server gives its client
// address (Addr), DataDir (holding myid), LogPath, Kill, FourLetter, Running,
// Connect and LogTail; Stop and Start are redefined for paused members and
// ensemble readiness.
type Member struct {
	*Server
	ID           int
	ClientPort   int
	PeerPort     int // raft
	ElectionPort int // zkraft's session-liveness side channel
	// Join reports that the member was started to join an existing ensemble
	// (zkraft's --join), by AddMember.
	Join bool
	// Observer reports that the member is an observer: srvr says
	// "Mode: observer" and it never votes.
	Observer bool

	mu     sync.Mutex
	paused bool
}

// StartCluster starts an ensemble of n members (ids 1..n) of opts.Target on
// free loopback ports, waits (bounded) until exactly one member reports
// "Mode: leader" and every other one "Mode: follower", and registers a
// cleanup that stops every member it or AddMember started, logging the tail
// of each member's output if the test failed.
func StartCluster(t testing.TB, n int, opts ClusterOptions) *Cluster {
	t.Helper()
	c, err := launchCluster(n, t.TempDir(), opts, func(c *Cluster) { t.Cleanup(func() { c.close(t) }) })
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return c
}

// LaunchCluster is StartCluster outside a test: the ensemble lives in dir
// (which must exist and be owned by the caller), and the caller must call
// Close. A failed start stops whatever it started.
func LaunchCluster(n int, dir string, opts ClusterOptions) (*Cluster, error) {
	c, err := launchCluster(n, dir, opts, nil)
	if err != nil && c != nil {
		c.Close()
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops every member ever started (LaunchCluster's cleanup).
func (c *Cluster) Close() { c.stopAll() }

// launchCluster starts the ensemble; registered, when set, is called as soon
// as the cluster exists, before any process starts.
func launchCluster(n int, dir string, opts ClusterOptions, registered func(*Cluster)) (*Cluster, error) {
	if n < 1 || opts.Observers < 0 || opts.Observers >= n {
		return nil, fmt.Errorf("cluster with %d members, %d of them observers", n, opts.Observers)
	}
	c := &Cluster{Target: opts.target(), Dir: dir, opts: opts}
	if registered != nil {
		registered(c)
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		return c, err
	}
	for i := 0; i < n; i++ {
		m, err := c.newMember(i+1, ports[3*i], ports[3*i+1], ports[3*i+2], false)
		if err != nil {
			return c, fmt.Errorf("member %d: %w", i+1, err)
		}
		m.Observer = i >= n-opts.Observers
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		if err := m.writeConfig(c.Members, c); err != nil {
			return c, fmt.Errorf("member %d: %w", m.ID, err)
		}
	}
	// Members are started together: none can serve before a quorum runs.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, m := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.start()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return c, fmt.Errorf("start member %d: %w", i+1, err)
		}
	}
	if _, err := c.waitSettled(); err != nil {
		return c, err
	}
	return c, nil
}

// newMember prepares the directory of member id and registers it for the
// cleanup; it does not start it.
func (c *Cluster) newMember(id, clientPort, peerPort, electionPort int, join bool) (*Member, error) {
	dir := filepath.Join(c.Dir, "member"+strconv.Itoa(id))
	s := &Server{
		Target:  c.Target,
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort)),
		Port:    clientPort,
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		LogPath: filepath.Join(dir, "server.log"),
		Opts:    Options{TickMs: c.opts.tickMs(), SuperDigest: c.opts.SuperDigest},
		cfgPath: filepath.Join(dir, "zoo.cfg"),
	}
	m := &Member{Server: s, ID: id, ClientPort: clientPort, PeerPort: peerPort, ElectionPort: electionPort, Join: join}
	s.probe = m.probeListening
	switch c.Target {
	case Zkraft:
		bin, err := zkraftBinary()
		if err != nil {
			return nil, err
		}
		s.bin, s.args = bin, []string{"serve", "--config", s.cfgPath}
		if join {
			s.args = append(s.args, "--join")
		}
	case Apache:
		java, args, err := apacheCommand(Options{SuperDigest: c.opts.SuperDigest, JVMFlags: c.opts.JVMFlags})
		if err != nil {
			return nil, err
		}
		s.bin, s.args = java, append(args, s.cfgPath)
	default:
		return nil, fmt.Errorf("unknown target %q (want %q or %q)", c.Target, Zkraft, Apache)
	}
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.DataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write myid: %w", err)
	}
	c.mu.Lock()
	c.all = append(c.all, m)
	c.mu.Unlock()
	return m, nil
}

// ServerSpec is the member's line as reconfig -add takes it:
// "server.N=127.0.0.1:peer:election;127.0.0.1:client" (with ":observer"
// after the election port for an observer).
func (m *Member) ServerSpec() string {
	return fmt.Sprintf("server.%d=%s", m.ID, m.serverValue())
}

func (m *Member) serverValue() string {
	return fmt.Sprintf("127.0.0.1:%d:%d%s;127.0.0.1:%d", m.PeerPort, m.ElectionPort, m.role(), m.ClientPort)
}

// role is ":observer" for an observer, "" otherwise.
func (m *Member) role() string {
	if m.Observer {
		return ":observer"
	}
	return ""
}

// serving reports whether mode is a srvr Mode of a member in a quorum.
func serving(mode string) bool { return mode == "leader" || mode == "follower" || mode == "observer" }

// writeConfig writes the member's zoo.cfg listing members.
func (m *Member) writeConfig(members []*Member, c *Cluster) error {
	kv := map[string]string{
		"tickTime":               strconv.Itoa(c.opts.tickMs()),
		"initLimit":              "10",
		"syncLimit":              "5",
		"dataDir":                m.DataDir,
		"clientPort":             strconv.Itoa(m.ClientPort),
		"clientPortAddress":      "127.0.0.1",
		"4lw.commands.whitelist": "*",
		"reconfigEnabled":        "true",
		"standaloneEnabled":      "false",
		"admin.enableServer":     "false",
	}
	if c.opts.SkipACL {
		kv["skipACL"] = "yes"
	}
	if m.Observer {
		kv["peerType"] = "observer"
	}
	if c.opts.SuperDigest != "" && c.Target == Zkraft {
		kv["DigestAuthenticationProvider.superDigest"] = c.opts.SuperDigest
	}
	var b strings.Builder
	b.WriteString(formatCfg(kv, c.opts.Extra))
	for _, o := range members {
		switch {
		case c.opts.Route == nil:
			fmt.Fprintf(&b, "server.%d=%s\n", o.ID, o.serverValue())
		case o == m:
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d%s\n", o.ID, o.PeerPort, o.ElectionPort, o.role())
		default:
			peer, election, err := c.opts.Route(m, o)
			if err != nil {
				return fmt.Errorf("route from member %d to %d: %w", m.ID, o.ID, err)
			}
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d%s\n", o.ID, peer, election, o.role())
		}
	}
	if err := os.WriteFile(m.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	return nil
}

// probeListening is a member's readiness check for start: the process
// listens on its election port. A member cannot be asked for more on its
// own: zkraft opens its client port only once a leader is known, and a
// joining member waits for the reconfig that adds it.
func (m *Member) probeListening(_ *Server) (bool, string) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ElectionPort))
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false, "election port: " + err.Error()
	}
	conn.Close()
	return true, ""
}

// ConnectString is the members' client addresses, comma-separated, as a
// ZooKeeper client takes them.
func (c *Cluster) ConnectString() string { return strings.Join(c.Addrs(), ",") }

// Addrs lists the members' client addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.Addr
	}
	return out
}

// Member returns the member with id, or nil.
func (c *Cluster) Member(id int) *Member {
	for _, m := range c.Members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// Followers returns the members other than leader.
func (c *Cluster) Followers(leader *Member) []*Member {
	var out []*Member
	for _, m := range c.Members {
		if m != leader {
			out = append(out, m)
		}
	}
	return out
}

// Remove drops m from Members (after a reconfig -remove); its process keeps
// running until m.Stop or the cleanup.
func (c *Cluster) Remove(m *Member) {
	out := c.Members[:0]
	for _, o := range c.Members {
		if o != m {
			out = append(out, o)
		}
	}
	c.Members = out
}

// Leader polls srvr on every running, unpaused member until exactly one
// reports "Mode: leader", and returns it; it fails the test after 30 s.
func (c *Cluster) Leader(t testing.TB) *Member {
	t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		var leaders []*Member
		for _, m := range c.Members {
			if m.Running() && !m.Paused() && m.Mode() == "leader" {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("zktest: no single leader after %v: %s", clusterReadyTimeout, c.Modes())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitSettled waits (bounded, 30 s) until every member of Members that runs
// and is not paused answers srvr, exactly one as leader, the observers as
// observers and the others as followers, and returns the leader.
func (c *Cluster) WaitSettled(t testing.TB) *Member {
	t.Helper()
	leader, err := c.waitSettled()
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return leader
}

func (c *Cluster) waitSettled() (*Member, error) {
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		var leader *Member
		leaders, followers, live := 0, 0, 0
		for _, m := range c.Members {
			if !m.Running() || m.Paused() {
				continue
			}
			live++
			switch m.Mode() {
			case "leader":
				leaders++
				leader = m
			case "follower":
				if !m.Observer {
					followers++
				}
			case "observer":
				if m.Observer {
					followers++
				}
			}
		}
		if leaders == 1 && leaders+followers == live {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("ensemble not settled after %v: %s", clusterReadyTimeout, c.Modes())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Modes describes every member's state for failure messages, e.g.
// "1=leader 2=follower 3=down".
func (c *Cluster) Modes() string {
	var parts []string
	for _, m := range c.Members {
		state := m.Mode()
		switch {
		case !m.Running():
			state = "down"
		case m.Paused():
			state = "paused"
		case state == "":
			state = "no-answer"
		}
		parts = append(parts, fmt.Sprintf("%d=%s", m.ID, state))
	}
	return strings.Join(parts, " ")
}

// AddMember starts a new member (the next id) with --join and a zoo.cfg
// listing the current members and itself. It is not yet in the ensemble:
// the test then issues reconfig -add with m.ServerSpec(). It returns once
// the process listens on its election port; it is appended to Members.
func (c *Cluster) AddMember(t testing.TB) *Member {
	t.Helper()
	return c.addMember(t, false)
}

// AddObserver is AddMember for an observer: its line (ServerSpec) and its
// zoo.cfg say observer.
func (c *Cluster) AddObserver(t testing.TB) *Member {
	t.Helper()
	return c.addMember(t, true)
}

func (c *Cluster) addMember(t testing.TB, observer bool) *Member {
	t.Helper()
	id := 0
	c.mu.Lock()
	for _, m := range c.all {
		id = max(id, m.ID)
	}
	c.mu.Unlock()
	id++
	ports, err := freePorts(3)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	m, err := c.newMember(id, ports[0], ports[1], ports[2], true)
	if err != nil {
		t.Fatalf("zktest: member %d: %v", id, err)
	}
	m.Observer = observer
	members := append(append([]*Member(nil), c.Members...), m)
	if err := m.writeConfig(members, c); err != nil {
		t.Fatalf("zktest: member %d: %v", id, err)
	}
	if err := m.start(); err != nil {
		t.Fatalf("zktest: start member %d: %v", id, err)
	}
	c.Members = members
	return m
}

// close stops every member ever started, in parallel.
func (c *Cluster) close(t testing.TB) {
	all := c.stopAll()
	if t.Failed() {
		for _, m := range all {
			t.Logf("zktest: tail of member %d output (%s):\n%s", m.ID, m.LogPath, m.LogTail(60))
		}
	}
}

// stopAll stops every member ever started, in parallel, and returns them.
func (c *Cluster) stopAll() []*Member {
	c.mu.Lock()
	all := append([]*Member(nil), c.all...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Stop()
		}()
	}
	wg.Wait()
	return all
}

// Srvr asks the member for srvr and returns its "Key: value" lines; a
// member without quorum answers a single sentence, returned under "".
func (m *Member) Srvr() (map[string]string, error) {
	out, err := m.fourLetter("srvr", 2*time.Second)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if k, v, ok := strings.Cut(line, ": "); ok {
			kv[k] = strings.TrimSpace(v)
		} else {
			kv[""] += line
		}
	}
	return kv, nil
}

// Mode is the Mode line of srvr ("leader", "follower", "observer"), "not serving" when
// the member answers that it is not currently serving requests, or "" when
// it does not answer.
func (m *Member) Mode() string {
	kv, err := m.Srvr()
	switch {
	case err != nil:
		return ""
	case kv["Mode"] != "":
		return kv["Mode"]
	case strings.Contains(kv[""], "not currently serving"):
		return "not serving"
	default:
		return ""
	}
}

// Zxid is the Zxid line of srvr.
func (m *Member) Zxid() (int64, error) {
	kv, err := m.Srvr()
	if err != nil {
		return 0, err
	}
	v, ok := kv["Zxid"]
	if !ok {
		return 0, fmt.Errorf("member %d srvr has no Zxid line: %v", m.ID, kv)
	}
	z, err := strconv.ParseInt(strings.TrimPrefix(v, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("member %d Zxid %q: %w", m.ID, v, err)
	}
	return z, nil
}

// Paused reports whether Pause stopped the process (and Resume did not yet
// continue it).
func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// signal sends sig to the member's process group, if it runs.
func (m *Member) signal(sig syscall.Signal) error {
	p := m.current()
	if p == nil {
		return fmt.Errorf("member %d was never started", m.ID)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal member %d: %w", m.ID, err)
	}
	return nil
}

// Pause freezes the member with SIGSTOP: it neither answers nor times
// anything out, as a partitioned or hung machine.
func (m *Member) Pause() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.signal(syscall.SIGSTOP) == nil {
		m.paused = true
	}
}

// Resume continues a paused member with SIGCONT.
func (m *Member) Resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.paused {
		_ = m.signal(syscall.SIGCONT)
		m.paused = false
	}
}

// Kill sends SIGKILL and waits for the process to exit: a crash.
func (m *Member) Kill() {
	m.Server.Kill()
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
}

// Stop resumes the member if paused, then stops it as Server.Stop does
// (SIGTERM, SIGKILL after 5 s).
func (m *Member) Stop() {
	m.Resume()
	m.Server.Stop()
}

// Start restarts a stopped or killed member with the same directory, ports
// and command, and waits (bounded, 30 s) until srvr reports a Mode line: it
// rejoined a quorum. A running member is stopped first.
func (m *Member) Start(t testing.TB) {
	t.Helper()
	m.StartNoWait(t)
	deadline := time.Now().Add(readyTimeout)
	for {
		if serving(m.Mode()) {
			return
		}
		if !m.Running() {
			t.Fatalf("zktest: member %d exited after restart:\n%s", m.ID, m.LogTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("zktest: member %d not serving %v after restart (srvr mode %q)", m.ID, readyTimeout, m.Mode())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Restart is Start.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.Start(t)
}

// StartNoWait restarts the member like Start but returns as soon as the
// process listens on its election port.
func (m *Member) StartNoWait(t testing.TB) {
	t.Helper()
	m.Stop()
	if err := m.start(); err != nil {
		t.Fatalf("zktest: restart member %d: %v", m.ID, err)
	}
}

// freePorts picks n distinct free loopback ports (see package freeport).
func freePorts(n int) ([]int, error) {
	return freeport.Ports(n)
}

// Connect opens a go-zookeeper connection over every member (see
// ConnectHosts), waits for a session and closes it in t's cleanup.
func (c *Cluster) Connect(t testing.TB, sessionTimeout time.Duration, opts ...ConnOption) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return ConnectHosts(t, c.Addrs(), sessionTimeout, opts...)
}

// SetJoin makes the member's later starts use (or not) zkraft's --join: it
// then starts with whatever its data directory holds and, if that is
// nothing, waits to receive the ensemble's state from the leader.
func (m *Member) SetJoin(join bool) {
	m.Join = join
	if m.Target != Zkraft {
		return
	}
	args := []string{"serve", "--config", m.cfgPath}
	if join {
		args = append(args, "--join")
	}
	m.args = args
}
