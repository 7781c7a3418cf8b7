package main

// The scale run (-scale N): a tree of N znodes of 100 bytes in each server,
// one server at a time (so that neither competes with the other for memory
// or the two cores), measuring
//
//   - the server process's resident memory (VmRSS of /proc/<pid>/status; the
//     java process for ZooKeeper) right after the load, and again after an
//     explicit GC (zkraft: /debug/pprof/heap?gc=1; ZooKeeper: jcmd GC.run)
//     and -scale-settle of idleness;
//   - a restart: SIGTERM, wait for the exit, then start on the same data
//     directory; the time from the exec until srvr answers, and until a new
//     client has read the last znode created;
//   - request latency of a light paced getData/setData load, split into the
//     requests that overlapped a snapshot and those that did not. Both
//     servers are restarted with snapCount=-scale-snapcount so that the
//     load's own writes trigger snapshots: ZooKeeper takes one after
//     snapCount/2 + a random part of snapCount/2 logged txns (in its
//     snapshot thread, a fuzzy snapshot of the live tree); zkraft once
//     snapCount entries were applied since its last snapshot (frozen on the
//     raft loop, encoded and written off it). A snapshot's span is observed
//     by polling every 20 ms: for ZooKeeper from the moment its new
//     snapshot.<zxid> file appears until its size stops growing; for zkraft
//     from the moment mntr shows applied - last snapshot index >= snapCount
//     until the last snapshot index moves;
//   - writes on the large tree: both servers restarted again with their
//     default snapCount, -scale-write-clients synchronous clients run setData
//     on znodes spread over the whole tree as fast as they can, first
//     unmeasured for writeWarmup (ZooKeeper's JVM starts cold after the
//     restart), then for -scale-write: the rate and latency to compare with
//     the same workload on the small tree of the workload run (the snapshots
//     of a large tree and a large heap's GC are in them).

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// procMem is the memory of a process as /proc/<pid>/status reports it, in
// kB.
type procMem struct {
	rss, anon, file int64 // VmRSS, RssAnon, RssFile
	peak            int64 // VmHWM: the largest VmRSS so far
}

// parseProcStatus reads VmRSS (required), VmHWM, RssAnon and RssFile
// (optional; the last two Linux >= 4.5) from the text of /proc/<pid>/status.
func parseProcStatus(text string) (procMem, error) {
	var m procMem
	found := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst, found = &m.rss, true
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		case "VmHWM":
			dst = &m.peak
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return procMem{}, fmt.Errorf("proc status: %s: want \"<n> kB\", got %q", key, strings.TrimSpace(val))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("proc status: %s: %w", key, err)
		}
		*dst = n
	}
	if !found {
		return procMem{}, errors.New("proc status: no VmRSS line (process gone?)")
	}
	return m, nil
}

func readProcMem(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, fmt.Errorf("read proc status: %w", err)
	}
	return parseProcStatus(string(b))
}

// span is a time interval [from, to].
type span struct{ from, to time.Time }

// scaleFigures are one server's results of the scale run.
type scaleFigures struct {
	target           zktest.Target
	nodes            int
	load             time.Duration // creating the nodes
	rssLoad, rssIdle procMem
	ready, readable  time.Duration // restart: exec to srvr, and to the last znode read
	quiet, during    result        // light load latencies outside and overlapping snapshots
	snapshots        []span
	writes           result // full-speed setData on the large tree (ops, dur, latencies)
}

func (f *scaleFigures) longestSnapshot() time.Duration {
	var d time.Duration
	for _, s := range f.snapshots {
		d = max(d, s.to.Sub(s.from))
	}
	return d
}

// scaleOptions are the -scale-* flags.
type scaleOptions struct {
	nodes     int
	parents   int
	conns     int
	inflight  int // goroutines per connection issuing creates
	settle    time.Duration
	snapCount int
	lightRate int // light load: requests per second per client
	clients   int
	maxWait   time.Duration // light load: give up waiting for a snapshot after this
	heapFile  string        // zkraft: write a heap profile after the load here ("" = none)
	logDir    string        // keep each server's log here ("" = none)
	keep      bool          // keep the servers' directories (zoo.cfg, data, log)
	// Full-speed setData on the large tree: measured time (0: skipped) and
	// clients.
	writeDur     time.Duration
	writeClients int
}

// writeWarmup is the unmeasured start of the full-speed setData.
const writeWarmup = 5 * time.Second

// scaleValue is the 100-byte value of every scale znode.
var scaleValue = []byte(strings.Repeat("0123456789", 10))

func scalePath(parents, i int) string {
	return fmt.Sprintf("/scale/p%d/n%d", i%parents, i)
}

// runScale measures target and returns its figures.
func runScale(target zktest.Target, o scaleOptions) (*scaleFigures, error) {
	dir, err := os.MkdirTemp("", "zkbench-scale-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "%s: data kept in %s\n", target, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	opts := zktest.Options{}
	if target == zktest.Apache {
		opts.JVMFlags = zookeeperJVM
	} else {
		opts.Extra = map[string]string{"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1",
			"admin.serverPort": "0", "zkraft.pprof": "true"}
	}
	srv, err := zktest.Launch(target, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", target, err)
	}
	defer srv.Close()
	if o.logDir != "" {
		defer func() {
			srv.Close()
			if b, err := os.ReadFile(srv.LogPath); err == nil {
				_ = os.WriteFile(filepath.Join(o.logDir, string(target)+".log"), b, 0o644)
			}
		}()
	}
	f := &scaleFigures{target: target, nodes: o.nodes}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s %-7s "+format+"\n", append([]any{time.Now().Format("15:04:05"), target}, args...)...)
	}

	// 1. The tree.
	t0 := time.Now()
	if err := createTree(srv.Addr, o, logf); err != nil {
		return nil, fmt.Errorf("%s: create: %w", target, err)
	}
	f.load = time.Since(t0)
	logf("%d znodes in %v (%.0f creates/s)", o.nodes, f.load.Round(time.Millisecond), float64(o.nodes)/f.load.Seconds())

	// 2. Memory.
	if f.rssLoad, err = readProcMem(srv.Pid()); err != nil {
		return nil, err
	}
	logf("RSS after load %d MB (anon %d, file %d, peak %d)", f.rssLoad.rss>>10, f.rssLoad.anon>>10, f.rssLoad.file>>10, f.rssLoad.peak>>10)
	if o.heapFile != "" && target == zktest.Zkraft {
		fetch(adminAddr(srv.LogPath)+"/debug/pprof/heap", o.heapFile)
		logf("heap profile in %s", o.heapFile)
	}
	if err := forceGC(srv); err != nil {
		return nil, fmt.Errorf("%s: GC: %w", target, err)
	}
	time.Sleep(o.settle)
	if f.rssIdle, err = readProcMem(srv.Pid()); err != nil {
		return nil, err
	}
	logf("RSS after GC + %v: %d MB (anon %d, file %d, peak %d)", o.settle, f.rssIdle.rss>>10, f.rssIdle.anon>>10, f.rssIdle.file>>10, f.rssIdle.peak>>10)

	// 3. Restart.
	srv.Stop()
	t0 = time.Now()
	if err := srv.Relaunch(map[string]string{"snapCount": strconv.Itoa(o.snapCount)}); err != nil {
		return nil, err
	}
	f.ready = time.Since(t0)
	last := scalePath(o.parents, o.nodes-1)
	if err := readUntil(srv.Addr, last, 60*time.Second); err != nil {
		return nil, fmt.Errorf("%s: after restart: %w", target, err)
	}
	f.readable = time.Since(t0)
	logf("restart: serving after %v, %s read after %v", f.ready.Round(time.Millisecond), last, f.readable.Round(time.Millisecond))

	// 4. Latency with and without a snapshot.
	if err := lightLoad(srv, o, f, logf); err != nil {
		return nil, fmt.Errorf("%s: light load: %w", target, err)
	}

	// 5. Writes on the large tree, with the default snapCount again.
	if o.writeDur > 0 {
		if err := srv.Relaunch(map[string]string{}); err != nil {
			return nil, err
		}
		if err := readUntil(srv.Addr, last, 60*time.Second); err != nil {
			return nil, fmt.Errorf("%s: after the second restart: %w", target, err)
		}
		if f.writes, err = writeBurst(srv, o, writeWarmup); err != nil {
			return nil, fmt.Errorf("%s: setData on the large tree: %w", target, err)
		}
		logf("setData on the large tree: %.0f ops/s, p50 %v, p99 %v (%d clients, %v)", f.writes.rate(), f.writes.pct(50),
			f.writes.pct(99), o.writeClients, o.writeDur)
	}
	return f, nil
}

// writeBurst runs o.writeClients synchronous clients doing setData of the
// 100-byte value on znodes spread over the whole tree (the i-th operation,
// over all clients, takes the znode at i times a prime stride, which
// crosses parents), as the workload run does (run): unmeasured for warmup,
// then measured for o.writeDur.
func writeBurst(srv *zktest.Server, o scaleOptions, warmup time.Duration) (result, error) {
	s := &server{target: srv.Target, addrs: []string{srv.Addr}}
	defer func() {
		for _, c := range s.clients {
			c.conn.Close()
		}
	}()
	if err := s.connect(o.writeClients); err != nil {
		return result{}, err
	}
	w := workload{name: "setData on the large tree", op: func(cl *worker, i int, v []byte, _ <-chan struct{}) error {
		// 7919 is prime: the stride visits every znode unless the count is a multiple of it.
		p := scalePath(o.parents, (i*7919)%o.nodes)
		if _, err := cl.conn.Set(p, v, -1); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	}}
	if warmup > 0 {
		if _, err := run(s, w, warmup, scaleValue); err != nil {
			return result{}, err
		}
	}
	return run(s, w, o.writeDur, scaleValue)
}

func dial(addr string) (*zk.Conn, error) {
	c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			c.Close()
			return nil, fmt.Errorf("no session with %s", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c, nil
}

// createTree creates /scale, its parents and o.nodes znodes under them,
// pipelined: o.conns sessions with o.inflight synchronous callers each.
func createTree(addr string, o scaleOptions, logf func(string, ...any)) error {
	conns := make([]*zk.Conn, o.conns)
	for i := range conns {
		c, err := dial(addr)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	for _, p := range append([]string{"/scale"}, parentPaths(o.parents)...) {
		if _, err := conns[0].Create(p, nil, 0, acl); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, o.conns*o.inflight)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conns[g%o.conns]
			for {
				i := int(next.Add(1) - 1)
				if i >= o.nodes {
					return
				}
				p := scalePath(o.parents, i)
				if _, err := c.Create(p, scaleValue, 0, acl); err != nil && err != zk.ErrNodeExists {
					errs[g] = fmt.Errorf("create %s: %w", p, err)
					next.Store(int64(o.nodes)) // stop the others
					return
				}
				if n := done.Add(1); n%100000 == 0 {
					logf("%d created", n)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func parentPaths(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("/scale/p%d", i)
	}
	return ps
}

// forceGC asks the server for a full collection: zkraft through its pprof
// heap endpoint (gc=1), ZooKeeper through jcmd.
func forceGC(srv *zktest.Server) error {
	if srv.Target == zktest.Apache {
		out, err := exec.Command("jcmd", strconv.Itoa(srv.Pid()), "GC.run").CombinedOutput()
		if err != nil {
			return fmt.Errorf("jcmd GC.run: %w: %s", err, out)
		}
		return nil
	}
	addr := adminAddr(srv.LogPath)
	fetch(addr+"/debug/pprof/heap?gc=1", os.DevNull)
	return nil
}

// readUntil connects to addr and reads p, retrying until it succeeds or d
// passes.
func readUntil(addr, p string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		c, err := dial(addr)
		if err == nil {
			_, _, err = c.Get(p)
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s not readable after %v: %w", p, d, last)
}

// timedOp is one request of the light load.
type timedOp struct{ start, end time.Time }

// lightLoad runs o.clients clients, each alternating getData and setData
// of its own znode at o.lightRate requests per second, until a snapshot has
// been seen and 3 s more have passed (at least 10 s, at most o.maxWait), and
// splits the latencies by whether a request overlapped a snapshot.
func lightLoad(srv *zktest.Server, o scaleOptions, f *scaleFigures, logf func(string, ...any)) error {
	conns := make([]*zk.Conn, o.clients)
	for i := range conns {
		c, err := dial(srv.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	stop := make(chan struct{})
	var snapMu sync.Mutex
	var spans []span
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		spans = pollSnapshots(srv, o.snapCount, stop, func(s []span) {
			snapMu.Lock()
			spans = s
			snapMu.Unlock()
		})
	}()
	ops := make([][]timedOp, o.clients)
	errs := make([]error, o.clients)
	var wg sync.WaitGroup
	for ci, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := scalePath(o.parents, ci)
			tick := time.NewTicker(time.Second / time.Duration(o.lightRate))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				t0 := time.Now()
				var err error
				if i%2 == 0 {
					_, _, err = c.Get(p)
				} else {
					_, err = c.Set(p, scaleValue, -1)
				}
				if err != nil {
					errs[ci] = fmt.Errorf("%s: %w", p, err)
					return
				}
				ops[ci] = append(ops[ci], timedOp{t0, time.Now()})
			}
		}()
	}
	start := time.Now()
	for {
		time.Sleep(100 * time.Millisecond)
		snapMu.Lock()
		n := len(spans)
		var lastEnd time.Time
		if n > 0 {
			lastEnd = spans[n-1].to
		}
		snapMu.Unlock()
		el := time.Since(start)
		if el > o.maxWait || (el > 10*time.Second && n > 0 && !lastEnd.IsZero() && time.Since(lastEnd) > 3*time.Second) {
			break
		}
	}
	close(stop)
	wg.Wait()
	<-pollDone
	f.snapshots = nil
	for _, s := range spans {
		if !s.to.IsZero() {
			f.snapshots = append(f.snapshots, s)
		}
	}
	for _, l := range ops {
		for _, op := range l {
			d := op.end.Sub(op.start)
			if overlapsAny(op, f.snapshots) {
				f.during.lat = append(f.during.lat, d)
			} else {
				f.quiet.lat = append(f.quiet.lat, d)
			}
		}
	}
	logf("light load %v: %d snapshots (longest %v); %d requests outside, p99 %v; %d during, p99 %v max %v",
		time.Since(start).Round(time.Millisecond), len(f.snapshots), f.longestSnapshot().Round(time.Millisecond),
		len(f.quiet.lat), f.quiet.pct(99), len(f.during.lat), f.during.pct(99), maxLat(f.during.lat))
	return errors.Join(errs...)
}

func overlapsAny(op timedOp, spans []span) bool {
	for _, s := range spans {
		if op.start.Before(s.to) && op.end.After(s.from) {
			return true
		}
	}
	return false
}

func maxLat(l []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range l {
		m = max(m, d)
	}
	return m.Round(10 * time.Microsecond)
}

const snapPoll = 20 * time.Millisecond

// pollSnapshots observes snapshots until stop closes and returns their
// spans (to is zero for one still running at the end); update gets the
// spans so far after every change.
func pollSnapshots(srv *zktest.Server, snapCount int, stop <-chan struct{}, update func([]span)) []span {
	var spans []span
	tick := time.NewTicker(snapPoll)
	defer tick.Stop()
	if srv.Target == zktest.Apache {
		dir := filepath.Join(srv.DataDir, "version-2")
		sizes := map[string]int64{}
		for _, name := range snapFiles(dir) {
			sizes[name] = -1 // before the load: not ours
		}
		current := ""
		var lastGrow time.Time
		for {
			select {
			case <-stop:
				return spans
			case <-tick.C:
			}
			now := time.Now()
			for _, name := range snapFiles(dir) {
				st, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					continue
				}
				old, seen := sizes[name]
				if !seen {
					if current != "" { // the previous one is done
						spans[len(spans)-1].to = lastGrow.Add(snapPoll)
					}
					current, lastGrow = name, now
					spans = append(spans, span{from: now.Add(-snapPoll)})
					sizes[name] = st.Size()
					update(spans)
					continue
				}
				if name == current && st.Size() != old {
					sizes[name], lastGrow = st.Size(), now
				}
			}
			if current != "" && now.Sub(lastGrow) > 200*time.Millisecond {
				spans[len(spans)-1].to = lastGrow.Add(snapPoll)
				current = ""
				update(spans)
			}
		}
	}
	var prevSnap int64 = -1
	inSnap := false
	for {
		select {
		case <-stop:
			return spans
		case <-tick.C:
		}
		now := time.Now()
		kv := mntr(srv.Addr)
		applied, err1 := strconv.ParseInt(kv["zk_raft_applied_index"], 10, 64)
		snap, err2 := strconv.ParseInt(kv["zk_raft_last_snapshot_index"], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if prevSnap >= 0 && snap != prevSnap {
			if !inSnap { // it began and ended between two polls
				spans = append(spans, span{from: now.Add(-2 * snapPoll)})
			}
			spans[len(spans)-1].to = now
			inSnap = false
			update(spans)
		} else if !inSnap && applied-snap >= int64(snapCount) {
			inSnap = true
			spans = append(spans, span{from: now.Add(-snapPoll)})
			update(spans)
		}
		prevSnap = snap
	}
}

func snapFiles(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "snapshot.") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// formatScaleTable renders the figures of zkraft (z) and ZooKeeper (a),
// either of which may be nil, as a Markdown table.
func formatScaleTable(z, a *scaleFigures) string {
	var b strings.Builder
	type row struct {
		name   string
		val    func(*scaleFigures) string
		num    func(*scaleFigures) float64 // for the ratio; nil: none
		target string
	}
	mb := func(kb int64) string { return fmt.Sprintf("%d", kb>>10) }
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	rows := []row{
		{"create N znodes (s)", func(f *scaleFigures) string { return secs(f.load) },
			func(f *scaleFigures) float64 { return f.load.Seconds() }, ""},
		{"RSS after load (MB)", func(f *scaleFigures) string { return mb(f.rssLoad.rss) },
			func(f *scaleFigures) float64 { return float64(f.rssLoad.rss) }, "≤ 0.5x"},
		{"RSS after GC + settle (MB)", func(f *scaleFigures) string { return mb(f.rssIdle.rss) },
			func(f *scaleFigures) float64 { return float64(f.rssIdle.rss) }, "≤ 0.5x"},
		{"  of which anon / file (MB)", func(f *scaleFigures) string {
			return mb(f.rssIdle.anon) + " / " + mb(f.rssIdle.file)
		}, nil, ""},
		{"peak RSS up to then, VmHWM (MB)", func(f *scaleFigures) string { return mb(f.rssIdle.peak) },
			func(f *scaleFigures) float64 { return float64(f.rssIdle.peak) }, ""},
		{"restart: serving (s)", func(f *scaleFigures) string { return secs(f.ready) },
			func(f *scaleFigures) float64 { return f.ready.Seconds() }, ""},
		{"restart: last znode read (s)", func(f *scaleFigures) string { return secs(f.readable) },
			func(f *scaleFigures) float64 { return f.readable.Seconds() }, "zkraft < 5 s"},
		{"light load p99, no snapshot", func(f *scaleFigures) string {
			return fmt.Sprintf("%v (%d req)", f.quiet.pct(99), len(f.quiet.lat))
		}, nil, ""},
		{"light load p99 / max, during a snapshot", func(f *scaleFigures) string {
			if len(f.during.lat) == 0 {
				return "no snapshot seen"
			}
			return fmt.Sprintf("%v / %v (%d req)", f.during.pct(99), maxLat(f.during.lat), len(f.during.lat))
		}, nil, "no stall"},
		{"snapshots seen, longest (s)", func(f *scaleFigures) string {
			return fmt.Sprintf("%d, %s", len(f.snapshots), secs(f.longestSnapshot()))
		}, nil, ""},
		{"setData on the large tree, full speed (ops/s)", func(f *scaleFigures) string {
			if f.writes.ops == 0 {
				return "not run"
			}
			return fmt.Sprintf("%.0f", f.writes.rate())
		}, func(f *scaleFigures) float64 { return f.writes.rate() }, ""},
		{"  its p50 / p99", func(f *scaleFigures) string {
			if f.writes.ops == 0 {
				return "-"
			}
			return fmt.Sprintf("%v / %v", f.writes.pct(50), f.writes.pct(99))
		}, nil, ""},
	}
	nodes := 0
	for _, f := range []*scaleFigures{z, a} {
		if f != nil {
			nodes = f.nodes
		}
	}
	fmt.Fprintf(&b, "| %d znodes of 100 bytes | zkraft | ZooKeeper | zkraft / ZooKeeper | target |\n|---|---|---|---|---|\n", nodes)
	for _, r := range rows {
		zs, as, ratio := "-", "-", "-"
		if z != nil {
			zs = r.val(z)
		}
		if a != nil {
			as = r.val(a)
		}
		if z != nil && a != nil && r.num != nil && r.num(a) > 0 {
			ratio = fmt.Sprintf("%.2fx", r.num(z)/r.num(a))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.name, zs, as, ratio, r.target)
	}
	return b.String()
}
