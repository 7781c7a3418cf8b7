// Command zkbench measures zkraft against Apache ZooKeeper 3.8 side by side,
// in one run on one machine, and prints each result as a ratio.
//
//	go run ./cmd/zkbench                                  # standalone, every workload
//	go run ./cmd/zkbench -members 3 -svg ratios-3.svg     # 3-member ensembles
//	go run ./cmd/zkbench -targets zkraft -pprof /tmp/prof # profiles of zkraft only
//	go run ./cmd/zkbench -scale 1000000                   # memory, restart and snapshots of 1 M znodes
//
// Both servers (or both ensembles) are started fresh on loopback, fsync on,
// by the harness the tests use, and stay up for the whole run. ZooKeeper runs
// with its own JVM defaults (-Xmx1000m, as zkServer.sh; not the tests' quick
// C1-only JVM), and every workload is first run unmeasured on both
// (-warmup) so that the JVM is compiled and warm. Each workload is then
// measured -rounds times per server, alternating which server goes first,
// and the rounds are summed: noise from other work on the machine falls on
// both. Every workload runs N clients (separate sessions), each sending
// synchronous requests back to back; in an ensemble client i talks to
// member i mod 3. Figures are operations per second and latency
// percentiles of one operation. The nodes a create workload made are
// deleted after each of its runs (untimed, multis of 500 deletes), so that
// every run starts from the same tree on both servers; each round's line
// shows the znode count it started with. (Before, the faster server carried
// twice as many znodes into every later workload, with the larger
// snapshots and GC work that come with them.)
//
// Workloads:
//
//	create          create a persistent node (128-byte value)
//	create-pipelined  create persistent nodes, 4 sessions with 32 creates in
//	                flight on each (as the -scale run builds its tree): how
//	                far batching carries writes
//	setData         set the client's own node
//	getData         read the client's own node
//	mixed 90% read  getData, and setData every 10th operation
//	lock            Curator's InterProcessMutex recipe, uncontended (a lock per
//	                client): acquire (create ephemeral-sequential, getChildren,
//	                lowest wins) + release (delete) is one operation
//	lock hand-offs  the same recipe, all clients contending for one lock; a
//	                waiter watches its predecessor (getData with a watch); one
//	                operation is one acquisition+release, so ops/s counts
//	                hand-offs; latency is from request to release
//	session         open a session (connect, wait for it) and close it. By
//	                default (-session-client wire) each client speaks the
//	                protocol itself: dial, write the ConnectRequest
//	                go-zookeeper writes (protocol 0, timeout 10000 ms, session
//	                0, zero password), read the ConnectResponse and require a
//	                session (id != 0, timeout > 0), write closeSession (xid 1),
//	                require its reply with err 0, close the socket; all within
//	                20 s. go-zookeeper's Connect burns 160-310 µs of CPU per
//	                session (a 1.5 MiB buffer zeroed, goroutines, an event
//	                loop), which on 2 cores bounds the rate before either
//	                server does; -session-client gozk uses it anyway, for
//	                comparison (see session.go)
//
// Each round also reads the CPU time it used (cpu.go, Linux /proc): the
// server's processes (every member of an ensemble; the java process for
// ZooKeeper), zkbench's own (the clients, the same against either server)
// and the machine's busy share. The round's line shows them per operation,
// and a table after the results sums them over the rounds, so that a ratio
// of rates can be read beside the ratio of CPU a server spent on an
// operation: on a busy machine the clients' share and the kernel's TCP work
// bound how far the second can carry the first.
//
// With -svg, a bar chart of the ratios (zkraft / ZooKeeper) with the targets
// of issue 11 is written to that file. With -pprof DIR, zkraft runs with
// zkraft.pprof=true and, during its first measured round of each workload,
// a CPU profile, an execution trace of its first second (go tool trace) and
// the allocations (heap profiles before and after, for
// `go tool pprof -sample_index=alloc_space -diff_base before after`) of the
// server (the leader in an ensemble) are written to DIR.
//
// With -scale N, zkbench runs none of the workloads: it builds a tree of N
// znodes of 100 bytes in each server, one server at a time, and reports
// resident memory, restart time and request latency during snapshots (see
// scale.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// zookeeperJVM is what Debian's zkServer.sh starts ZooKeeper with
// (ZK_SERVER_HEAP=1000); everything else is the JVM's default (G1, C2).
var zookeeperJVM = []string{"-Xmx1000m"}

type result struct {
	ops int64
	dur time.Duration
	lat []time.Duration
	// rates holds each round's ops/s, in round order (add appends).
	rates []float64
	// handoffs are the lock hand-off workload's phases (nil otherwise).
	handoffs *handoffPhases
	// cpu is the CPU the rounds used (zero without /proc).
	cpu cpuUse
}

func (r result) rate() float64 {
	if r.dur <= 0 {
		return 0
	}
	return float64(r.ops) / r.dur.Seconds()
}

func (r *result) add(o result) {
	r.ops += o.ops
	r.dur += o.dur
	r.lat = append(r.lat, o.lat...)
	r.rates = append(r.rates, o.rate())
	r.cpu.add(o.cpu)
	if o.handoffs != nil {
		if r.handoffs == nil {
			r.handoffs = &handoffPhases{}
		}
		r.handoffs.add(*o.handoffs)
	}
}

// phases returns r's lock hand-off phases; nil for none or a nil r (a
// target not measured).
func (r *result) phases() *handoffPhases {
	if r == nil {
		return nil
	}
	return r.handoffs
}

// roundRatios returns z's rate over a's in each round both ran (the two
// servers of a round run back to back), as "min–max", or "" with fewer
// than two rounds: the spread shows how far one round's ratio moves.
func roundRatios(z, a *result) string {
	n := min(len(z.rates), len(a.rates))
	if n < 2 {
		return ""
	}
	lo, hi := 0.0, 0.0
	for i := 0; i < n; i++ {
		if a.rates[i] <= 0 {
			return ""
		}
		q := z.rates[i] / a.rates[i]
		if i == 0 || q < lo {
			lo = q
		}
		if i == 0 || q > hi {
			hi = q
		}
	}
	return fmt.Sprintf(" (rounds %.2f–%.2f)", lo, hi)
}

func (r result) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), r.lat...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[(len(l)-1)*p/100].Round(10 * time.Microsecond)
}

// client is one session of a benchmark: its connection, the member it talks
// to, and its index.
type client struct {
	id   int
	conn *zk.Conn
	addr string
}

// worker is one caller of a run: the client (session) it uses and the
// persistent nodes it created, which the run deletes once it is over.
type worker struct {
	*client
	created []string
	// locks records each acquisition of the lock hand-off workload.
	locks []lockTimes
}

// errStopped ends a client's run while it waits for a lock.
var errStopped = errors.New("stopped")

type workload struct {
	name   string
	target float64 // issue 11's target ratio
	// op runs one operation; stop closes when the run is over (only
	// operations that wait need it).
	op func(cl *worker, i int, value []byte, stop <-chan struct{}) error
	// sessions, if set, is how many of the clients run the workload, each
	// with inflight callers sharing its session, so that inflight requests
	// are outstanding on each connection at once (go-zookeeper pipelines
	// concurrent calls on one connection).
	sessions, inflight int
}

var acl = zk.WorldACL(zk.PermAll)

var workloads = []workload{
	{"create", 1.5, func(cl *worker, i int, v []byte, _ <-chan struct{}) error {
		return cl.create(fmt.Sprintf("/bench/c%d-%d", cl.id, i), v)
	}, 0, 0},
	{"create-pipelined", 0, func(cl *worker, i int, v []byte, _ <-chan struct{}) error {
		return cl.create(fmt.Sprintf("/bench/p%d-%d", cl.id, i), v)
	}, 4, 32},
	{"setData", 1.5, func(cl *worker, _ int, v []byte, _ <-chan struct{}) error {
		_, err := cl.conn.Set(fmt.Sprintf("/bench/s%d", cl.id), v, -1)
		return err
	}, 0, 0},
	{"getData", 1.4, func(cl *worker, _ int, _ []byte, _ <-chan struct{}) error {
		_, _, err := cl.conn.Get(fmt.Sprintf("/bench/s%d", cl.id))
		return err
	}, 0, 0},
	{"mixed 90% read", 0, func(cl *worker, i int, v []byte, _ <-chan struct{}) error {
		if i%10 == 0 {
			_, err := cl.conn.Set(fmt.Sprintf("/bench/s%d", cl.id), v, -1)
			return err
		}
		_, _, err := cl.conn.Get(fmt.Sprintf("/bench/s%d", cl.id))
		return err
	}, 0, 0},
	{"lock", 1.5, func(cl *worker, _ int, _ []byte, stop <-chan struct{}) error {
		return lockOnce(cl.conn, fmt.Sprintf("/bench/locks/l%d", cl.id), stop, nil)
	}, 0, 0},
	{"lock hand-offs", 1.5, func(cl *worker, _ int, _ []byte, stop <-chan struct{}) error {
		var t lockTimes
		if err := lockOnce(cl.conn, "/bench/locks/shared", stop, &t); err != nil {
			return err
		}
		cl.locks = append(cl.locks, t)
		return nil
	}, 0, 0},
	{"session", 1.5, func(cl *worker, _ int, _ []byte, _ <-chan struct{}) error {
		return sessionOnce(cl.addr)
	}, 0, 0},
}

// create creates the persistent node p and remembers it for the run's
// clean-up.
func (cl *worker) create(p string, v []byte) error {
	_, err := cl.conn.Create(p, v, 0, acl)
	switch err {
	case nil:
		cl.created = append(cl.created, p)
	case zk.ErrNodeExists:
		err = nil
	}
	return err
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// lockOnce acquires and releases the lock dir as Curator's InterProcessMutex
// does (LockInternals): create an ephemeral-sequential child, list the
// children, own the lock if it is the lowest, otherwise watch the one just
// below with getData and look again when it goes. Release deletes the child.
// If stop closes while waiting, the child is deleted and errStopped
// returned.
// lockConn is what lockOnce uses of a client (*zk.Conn; tests script it).
type lockConn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Delete(path string, version int32) error
}

func lockOnce(c lockConn, dir string, stop <-chan struct{}, t *lockTimes) error {
	p, err := c.Create(dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		return fmt.Errorf("create lock node: %w", err)
	}
	me := path.Base(p)
	for {
		kids, _, err := c.Children(dir)
		if err != nil {
			return fmt.Errorf("list lock: %w", err)
		}
		sort.Strings(kids) // lock-%010d: the name order is the sequence order
		idx := sort.SearchStrings(kids, me)
		if idx == len(kids) || kids[idx] != me {
			return fmt.Errorf("lock node %s vanished", p)
		}
		if idx == 0 {
			break
		}
		_, _, ev, err := c.GetW(dir + "/" + kids[idx-1])
		if err == zk.ErrNoNode {
			if t != nil {
				t.waited = false // an earlier event was not this acquisition's
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch predecessor: %w", err)
		}
		select {
		case <-ev:
			if t != nil {
				t.event, t.waited = time.Now(), true
			}
		case <-stop:
			if err := c.Delete(p, -1); err != nil {
				return fmt.Errorf("give up lock: %w", err)
			}
			return errStopped
		}
	}
	if t != nil {
		t.acquired = time.Now()
	}
	if err := c.Delete(p, -1); err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

// server is one running standalone server or ensemble.
type server struct {
	target  zktest.Target
	addrs   []string // client addresses; client i uses addrs[i%len]
	profile string   // AdminServer address serving pprof (zkraft with -pprof)
	pids    []int    // the server processes (every member; java for ZooKeeper)
	clients []*client
	close   func()
}

func main() {
	nClients := flag.Int("clients", 16, "concurrent clients (sessions)")
	duration := flag.Duration("duration", 5*time.Second, "measured time per workload, server and round")
	warmup := flag.Duration("warmup", 5*time.Second, "unmeasured time per workload and server before measuring")
	rounds := flag.Int("rounds", 2, "measured rounds per workload and server, alternating which server goes first")
	valueSize := flag.Int("value", 128, "bytes of data per write")
	members := flag.Int("members", 1, "1 (standalone) or 3 (ensembles of three members)")
	only := flag.String("workloads", "", "comma-separated workload names (default all)")
	targets := flag.String("targets", "zkraft,apache", "servers to measure")
	svgPath := flag.String("svg", "", "write a bar chart of the ratios to this SVG file")
	pprofDir := flag.String("pprof", "", "write zkraft CPU and heap profiles of each workload to this directory")
	flag.StringVar(&sessionClient, "session-client", sessionClientWire,
		"session workload's client: wire (connect and close written directly, as go-zookeeper frames them) or gozk (go-zookeeper's zk.Connect)")
	scaleN := flag.Int("scale", 0, "instead of the workloads: the scale run with this many znodes of 100 bytes (see scale.go)")
	var so scaleOptions
	flag.IntVar(&so.parents, "scale-parents", 10, "scale run: parent nodes the znodes are spread under")
	flag.IntVar(&so.conns, "scale-conns", 4, "scale run: sessions creating the znodes")
	flag.IntVar(&so.inflight, "scale-inflight", 32, "scale run: outstanding creates per session")
	flag.DurationVar(&so.settle, "scale-settle", 10*time.Second, "scale run: idle time after the forced GC before RSS is read again")
	flag.IntVar(&so.snapCount, "scale-snapcount", 10000, "scale run: snapCount of both servers after the restart")
	flag.IntVar(&so.clients, "scale-clients", 4, "scale run: clients of the light load")
	flag.IntVar(&so.lightRate, "scale-rate", 250, "scale run: requests per second per light-load client (half getData, half setData)")
	flag.DurationVar(&so.maxWait, "scale-max-wait", 90*time.Second, "scale run: longest light load while waiting for a snapshot")
	flag.StringVar(&so.heapFile, "scale-heap", "", "scale run: write zkraft's heap profile after the load to this file")
	flag.StringVar(&so.logDir, "scale-logs", "", "scale run: copy each server's log into this directory")
	flag.DurationVar(&so.writeDur, "scale-write", 10*time.Second, "scale run: measured time of the full-speed setData on the large tree (0: skip it)")
	flag.IntVar(&so.writeClients, "scale-write-clients", 16, "scale run: synchronous clients of the full-speed setData")
	flag.BoolVar(&so.keep, "scale-keep", false, "scale run: keep each server's directory (zoo.cfg, data) for restarts by hand")
	flag.Parse()
	if *scaleN > 0 {
		so.nodes = *scaleN
		figs := map[zktest.Target]*scaleFigures{}
		for _, t := range strings.Split(*targets, ",") {
			t := zktest.Target(strings.TrimSpace(t))
			f, err := runScale(t, so)
			if err != nil {
				fail(err)
			}
			figs[t] = f
		}
		fmt.Printf("\nscale run: one server at a time, standalone, fsync on, loopback; ZooKeeper with %s; "+
			"light load %d clients x %d req/s, snapCount %d after the restart\n\n",
			strings.Join(zookeeperJVM, " "), so.clients, so.lightRate, so.snapCount)
		fmt.Print(formatScaleTable(figs[zktest.Zkraft], figs[zktest.Apache]))
		return
	}
	if sessionClient != sessionClientWire && sessionClient != sessionClientGozk {
		fail(fmt.Errorf("-session-client must be %s or %s, got %q", sessionClientWire, sessionClientGozk, sessionClient))
	}
	if *members != 1 && *members != 3 {
		fail(fmt.Errorf("-members must be 1 or 3, got %d", *members))
	}

	var ws []workload
	for _, w := range workloads {
		if *only == "" || strings.Contains(","+*only+",", ","+w.name+",") {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		fail(fmt.Errorf("no workload matches %q", *only))
	}
	if *pprofDir != "" {
		if err := os.MkdirAll(*pprofDir, 0o755); err != nil {
			fail(err)
		}
	}
	value := make([]byte, *valueSize)
	var servers []*server
	for _, t := range strings.Split(*targets, ",") {
		s, err := start(zktest.Target(strings.TrimSpace(t)), *members, *pprofDir != "")
		if err != nil {
			for _, s := range servers {
				s.close()
			}
			fail(err)
		}
		servers = append(servers, s)
	}
	defer func() {
		for _, s := range servers {
			for _, c := range s.clients {
				c.conn.Close()
			}
			s.close()
		}
	}()
	for _, s := range servers {
		if err := s.connect(*nClients); err != nil {
			fail(err)
		}
		if err := setup(s.clients[0].conn, *nClients, value); err != nil {
			fail(fmt.Errorf("%s: setup: %w", s.target, err))
		}
	}

	results := map[string]map[zktest.Target]*result{}
	cpuWarned := false // a missing /proc is reported once
	for wi, w := range ws {
		results[w.name] = map[zktest.Target]*result{}
		for _, s := range servers {
			results[w.name][s.target] = &result{}
			if *warmup > 0 {
				if _, err := run(s, w, *warmup, value); err != nil {
					fail(err)
				}
			}
		}
		for r := 0; r < *rounds; r++ {
			for k := range servers {
				s := servers[(k+r+wi)%len(servers)]
				var prof *profiler
				if r == 0 && s.profile != "" {
					prof = startProfile(s.profile, *pprofDir, fmt.Sprintf("%dm-%s", *members, fileName(w.name)), *duration)
				}
				znodes := s.znodes()
				b0, e0 := s.raftBatches()
				c0 := s.counters()
				cpu0, cpuErr := readCPU(s.pids)
				res, err := run(s, w, *duration, value)
				if err != nil {
					fail(err)
				}
				cpu1, err := readCPU(s.pids)
				if cpuErr == nil && err == nil {
					res.cpu = cpu1.since(cpu0)
				} else if !cpuWarned {
					cpuWarned = true
					fmt.Fprintf(os.Stderr, "zkbench: no CPU figures: %v\n", errors.Join(cpuErr, err))
				}
				b1, e1 := s.raftBatches()
				c1 := s.counters()
				if prof != nil {
					prof.finish()
				}
				results[w.name][s.target].add(res)
				batch := ""
				if b1 > b0 {
					batch = fmt.Sprintf("  raft: %.0f log writes/s, %.1f entries each", float64(b1-b0)/duration.Seconds(), float64(e1-e0)/float64(b1-b0))
				}
				if s.target == zktest.Zkraft {
					batch += fmt.Sprintf("; snapshots %d", c1.snapshots-c0.snapshots)
				}
				if h := res.handoffs; h != nil && h.n > 0 {
					batch += "; " + h.String()
				}
				batch += cpuRoundNote(res.cpu, res.ops, res.dur)
				fmt.Fprintf(os.Stderr, "%-7s %-15s round %d %9.0f ops/s  p50 %-8v p99 %-8v znodes %d%s\n",
					s.target, w.name, r+1, res.rate(), res.pct(50), res.pct(99), znodes, batch)
			}
		}
	}

	mode := "standalone"
	if *members == 3 {
		mode = "3 members each"
	}
	sessionNote := ""
	for _, w := range ws {
		if w.name == "session" {
			sessionNote = ", session client " + sessionClient
		}
	}
	fmt.Printf("\n%d clients, %d-byte values, %d rounds of %v per workload and server (after %v warm-up), %s, fsync on, loopback%s\n\n",
		*nClients, *valueSize, *rounds, *duration, *warmup, mode, sessionNote)
	fmt.Printf("| workload | zkraft ops/s | ZooKeeper ops/s | zkraft / ZooKeeper | target | zkraft p50 / p99 | ZooKeeper p50 / p99 |\n|---|---|---|---|---|---|---|\n")
	var bars []bar
	for _, w := range ws {
		z, a := results[w.name][zktest.Zkraft], results[w.name][zktest.Apache]
		if z == nil {
			z = &result{}
		}
		if a == nil {
			a = &result{}
		}
		ratio, tgt := "-", "-"
		if w.target > 0 {
			tgt = fmt.Sprintf("≥ %.1fx", w.target)
		}
		if a.ops > 0 && z.ops > 0 {
			q := z.rate() / a.rate()
			ratio = fmt.Sprintf("%.2fx%s", q, roundRatios(z, a))
			bars = append(bars, bar{w.name, q, w.target})
		}
		fmt.Printf("| %s | %.0f | %.0f | %s | %s | %v / %v | %v / %v |\n", w.name, z.rate(), a.rate(), ratio, tgt,
			z.pct(50), z.pct(99), a.pct(50), a.pct(99))
	}
	for _, w := range ws {
		fmt.Print(handoffTable(results[w.name][zktest.Zkraft].phases(), results[w.name][zktest.Apache].phases()))
	}
	var cpuRows []cpuRow
	for _, w := range ws {
		cpuRows = append(cpuRows, cpuRow{w.name, results[w.name][zktest.Zkraft], results[w.name][zktest.Apache]})
	}
	fmt.Print(cpuTable(cpuRows))
	if *svgPath != "" {
		title := fmt.Sprintf("zkraft / ZooKeeper 3.8 throughput, %s, %d clients", mode, *nClients)
		if err := os.WriteFile(*svgPath, []byte(chart(title, bars)), 0o644); err != nil {
			fail(err)
		}
	}
}

// start launches target standalone or as a 3-member ensemble.
func start(target zktest.Target, members int, profile bool) (*server, error) {
	dir, err := os.MkdirTemp("", "zkbench-")
	if err != nil {
		return nil, err
	}
	var extra map[string]string
	if target == zktest.Zkraft && profile {
		extra = map[string]string{"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1",
			"admin.serverPort": "0", "zkraft.pprof": "true"}
	}
	var jvm []string
	if target == zktest.Apache {
		jvm = zookeeperJVM
	}
	s := &server{target: target}
	profile = profile && target == zktest.Zkraft // only zkraft serves pprof
	if members == 1 {
		srv, err := zktest.Launch(target, dir, zktest.Options{Extra: extra, JVMFlags: jvm})
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("start %s: %w", target, err)
		}
		s.addrs = []string{srv.Addr}
		s.pids = []int{srv.Pid()}
		s.close = func() { srv.Close(); _ = os.RemoveAll(dir) }
		if profile {
			s.profile = adminAddr(srv.LogPath)
		}
		return s, nil
	}
	c, err := zktest.LaunchCluster(members, dir, zktest.ClusterOptions{Target: target, TickMs: 2000, Extra: extra, JVMFlags: jvm})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s ensemble: %w", target, err)
	}
	s.addrs = c.Addrs()
	for _, m := range c.Members {
		s.pids = append(s.pids, m.Pid())
	}
	s.close = func() { c.Close(); _ = os.RemoveAll(dir) }
	if profile {
		for _, m := range c.Members {
			if m.Mode() == "leader" {
				s.profile = adminAddr(m.LogPath)
			}
		}
	}
	return s, nil
}

// adminStarted matches the log line, JSON (addr first) or console.
var adminStarted = regexp.MustCompile(`(127\.0\.0\.1:\d+)[^\n]*AdminServer started|AdminServer started[^\n]*?(127\.0\.0\.1:\d+)`)

// adminAddr finds the AdminServer address a zkraft server logged.
func adminAddr(logPath string) string {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		if m := adminStarted.FindSubmatch(b); m != nil {
			return string(m[1]) + string(m[2])
		}
		time.Sleep(50 * time.Millisecond)
	}
	fail(fmt.Errorf("no AdminServer address in %s", logPath))
	return ""
}

// raftBatches reads zkraft's leader's mntr counters of log writes (bbolt
// transactions carrying entries) and entries written; zeros for ZooKeeper.
func (s *server) raftBatches() (batches, entries int64) {
	if s.target != zktest.Zkraft {
		return 0, 0
	}
	for _, addr := range s.addrs {
		kv := mntr(addr)
		if st := kv["zk_server_state"]; st == "leader" || st == "standalone" {
			b, _ := strconv.ParseInt(kv["zk_raft_persist_batches"], 10, 64)
			e, _ := strconv.ParseInt(kv["zk_raft_persisted_entries"], 10, 64)
			return b, e
		}
	}
	return 0, 0
}

// znodes is the server's znode count (mntr's zk_znode_count, from the
// first member), -1 if it could not be read.
func (s *server) znodes() int64 {
	n, err := strconv.ParseInt(mntr(s.addrs[0])["zk_znode_count"], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// zkraftCounters are zkraft's mntr counters summed over every member.
type zkraftCounters struct{ snapshots int64 }

// counters reads the local snapshots taken by all of zkraft's members
// (zeros for ZooKeeper), so that a round's line says how many fell inside
// it.
func (s *server) counters() zkraftCounters {
	var c zkraftCounters
	if s.target != zktest.Zkraft {
		return c
	}
	for _, addr := range s.addrs {
		kv := mntr(addr)
		n, _ := strconv.ParseInt(kv["zk_raft_snapshots_taken"], 10, 64)
		c.snapshots += n
	}
	return c
}

// mntr returns the mntr lines of the server at addr (nil on error).
func mntr(addr string) map[string]string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("mntr")); err != nil {
		return nil
	}
	b, _ := io.ReadAll(c)
	kv := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	return kv
}

func (s *server) connect(n int) error {
	for i := 0; i < n; i++ {
		addr := s.addrs[i%len(s.addrs)]
		c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
		if err != nil {
			return err
		}
		deadline := time.Now().Add(20 * time.Second)
		for c.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				c.Close()
				return fmt.Errorf("%s: no session with %s", s.target, addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.clients = append(s.clients, &client{id: i, conn: c, addr: addr})
	}
	return nil
}

func setup(c *zk.Conn, clients int, value []byte) error {
	paths := []string{"/bench", "/bench/locks", "/bench/locks/shared"}
	for i := 0; i < clients; i++ {
		paths = append(paths, fmt.Sprintf("/bench/s%d", i), fmt.Sprintf("/bench/locks/l%d", i))
	}
	for _, p := range paths {
		if _, err := c.Create(p, value, 0, acl); err != nil && err != zk.ErrNodeExists {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

var seq atomic.Int64 // distinct node names across runs of the create workload

// run runs w on every client of s for d. A run that has not ended a minute
// after d is a hung server: zkbench exits.
func run(s *server, w workload, d time.Duration, value []byte) (result, error) {
	watchdog := time.AfterFunc(d+time.Minute, func() {
		fail(fmt.Errorf("%s %s: still running a minute after its %v", s.target, w.name, d))
	})
	defer watchdog.Stop()
	var wg sync.WaitGroup
	clients, inflight := s.clients, 1
	if w.sessions > 0 {
		clients, inflight = clients[:min(w.sessions, len(clients))], w.inflight
	}
	lat := make([][]time.Duration, len(clients)*inflight)
	errs := make([]error, len(lat))
	stop := make(chan struct{})
	start := time.Now()
	end := start.Add(d)
	timer := time.AfterFunc(d, func() { close(stop) })
	defer timer.Stop()
	workers := make([]*worker, len(lat))
	for ci := range lat {
		cl := &worker{client: clients[ci%len(clients)]}
		workers[ci] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				i := int(seq.Add(1))
				t0 := time.Now()
				err := w.op(cl, i, value, stop)
				if err == errStopped {
					return
				}
				if err != nil {
					errs[ci] = fmt.Errorf("%s %s: %w", s.target, w.name, err)
					return
				}
				if t1 := time.Now(); t1.Before(end) {
					lat[ci] = append(lat[ci], t1.Sub(t0))
				}
			}
		}()
	}
	wg.Wait()
	r := result{dur: d}
	for _, l := range lat {
		r.ops += int64(len(l))
		r.lat = append(r.lat, l...)
	}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	var created []string
	var locks []lockTimes
	for _, wk := range workers {
		created = append(created, wk.created...)
		locks = append(locks, wk.locks...)
	}
	if len(locks) > 0 {
		r.handoffs = handoffsOf(locks, end)
	}
	if err := deleteNodes(clients, created); err != nil {
		return r, fmt.Errorf("%s %s: delete the %d nodes it created: %w", s.target, w.name, len(created), err)
	}
	return r, nil
}

// deleteBatch is how many deletes one multi carries when a run's nodes are
// deleted.
const deleteBatch = 500

// deleteNodes deletes paths (untimed, after a run) with multis of
// deleteBatch deletes, one caller per client. Every workload then meets the
// same tree on both servers: without it the server that created faster
// would carry more znodes (and larger snapshots, more GC work) into every
// later workload.
func deleteNodes(clients []*client, paths []string) error {
	var batches [][]string
	for len(paths) > 0 {
		n := min(deleteBatch, len(paths))
		batches = append(batches, paths[:n])
		paths = paths[n:]
	}
	var next atomic.Int64
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for ci, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1)) - 1
				if b >= len(batches) {
					return
				}
				ops := make([]any, len(batches[b]))
				for i, p := range batches[b] {
					ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
				}
				if _, err := cl.conn.Multi(ops...); err != nil {
					errs[ci] = fmt.Errorf("multi of %d deletes from %s: %w", len(ops), batches[b][0], err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// profiler fetches a CPU profile over a run, and heap profiles before and
// after it.
type profiler struct {
	addr, prefix string
	done, traced chan struct{}
}

func startProfile(addr, dir, name string, d time.Duration) *profiler {
	p := &profiler{addr: addr, prefix: filepath.Join(dir, name), done: make(chan struct{})}
	fetch(addr+"/debug/pprof/heap", p.prefix+"-heap-before.pprof")
	go func() {
		defer close(p.done)
		secs := max(1, int(d/time.Second))
		fetch(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", addr, secs), p.prefix+"-cpu.pprof")
	}()
	p.traced = make(chan struct{})
	go func() { // an execution trace of the run's first second, alongside
		defer close(p.traced)
		fetch(addr+"/debug/pprof/trace?seconds=1", p.prefix+"-trace.out")
	}()
	return p
}

func (p *profiler) finish() {
	<-p.done
	<-p.traced
	fetch(p.addr+"/debug/pprof/heap", p.prefix+"-heap-after.pprof")
}

func fetch(url, file string) {
	resp, err := http.Get("http://" + url)
	if err != nil {
		fail(fmt.Errorf("profile: %w", err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		fail(fmt.Errorf("profile %s: status %d: %v", url, resp.StatusCode, err))
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		fail(err)
	}
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "zkbench:", err)
	os.Exit(1)
}
