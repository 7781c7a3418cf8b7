// Command zkbench measures zkraft against Apache ZooKeeper 3.8 side by side,
// in one run on one machine, and prints each result as a ratio.
//
//	go run ./cmd/zkbench                       # both servers, default workloads
//	go run ./cmd/zkbench -clients 32 -duration 20s
//
// Each server is started fresh (standalone, on loopback, fsync on) by the
// same harness the tests use. Every workload runs with N clients (separate
// sessions), each sending synchronous requests back to back; the figures are
// operations per second and latency percentiles. Apache ZooKeeper runs in a
// JVM, so each target is warmed up with the same workload first.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

type result struct {
	ops  int64
	secs float64
	p50  time.Duration
	p99  time.Duration
}

func (r result) rate() float64 { return float64(r.ops) / r.secs }

type workload struct {
	name string
	op   func(c *zk.Conn, client, i int, value []byte) error
}

var workloads = []workload{
	{"create", func(c *zk.Conn, client, i int, v []byte) error {
		_, err := c.Create(fmt.Sprintf("/bench/c%d-%d", client, i), v, 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return nil
		}
		return err
	}},
	{"setData", func(c *zk.Conn, client, i int, v []byte) error {
		_, err := c.Set(fmt.Sprintf("/bench/s%d", client), v, -1)
		return err
	}},
	{"getData", func(c *zk.Conn, client, i int, v []byte) error {
		_, _, err := c.Get(fmt.Sprintf("/bench/s%d", client))
		return err
	}},
	{"mixed 90% read", func(c *zk.Conn, client, i int, v []byte) error {
		if i%10 == 0 {
			_, err := c.Set(fmt.Sprintf("/bench/s%d", client), v, -1)
			return err
		}
		_, _, err := c.Get(fmt.Sprintf("/bench/s%d", client))
		return err
	}},
}

func main() {
	clients := flag.Int("clients", 16, "concurrent clients (sessions)")
	duration := flag.Duration("duration", 10*time.Second, "measured time per workload")
	warmup := flag.Duration("warmup", 5*time.Second, "unmeasured time per workload before measuring")
	valueSize := flag.Int("value", 100, "bytes of data per write")
	only := flag.String("workloads", "", "comma-separated workload names (default all)")
	targets := flag.String("targets", "zkraft,apache", "servers to measure")
	flag.Parse()

	value := make([]byte, *valueSize)
	results := map[string]map[zktest.Target]result{}
	var names []string
	for _, w := range workloads {
		if *only == "" || strings.Contains(","+*only+",", ","+w.name+",") {
			names = append(names, w.name)
			results[w.name] = map[zktest.Target]result{}
		}
	}
	var ts []zktest.Target
	for _, t := range strings.Split(*targets, ",") {
		ts = append(ts, zktest.Target(strings.TrimSpace(t)))
	}
	for _, target := range ts {
		dir, err := os.MkdirTemp("", "zkbench-")
		if err != nil {
			fail(err)
		}
		srv, err := zktest.Launch(target, dir, zktest.Options{})
		if err != nil {
			fail(fmt.Errorf("start %s: %w", target, err))
		}
		conns := connect(srv.Addr, *clients)
		setup(conns[0], *clients, value)
		for _, w := range workloads {
			if _, ok := results[w.name]; !ok {
				continue
			}
			run(conns, w, *warmup, value)
			results[w.name][target] = run(conns, w, *duration, value)
			r := results[w.name][target]
			fmt.Fprintf(os.Stderr, "%-8s %-16s %10.0f ops/s  p50 %-8v p99 %v\n", target, w.name, r.rate(), r.p50, r.p99)
		}
		for _, c := range conns {
			c.Close()
		}
		srv.Close()
		_ = os.RemoveAll(dir)
	}
	fmt.Printf("\n%d clients, %d-byte values, %v per workload (after %v warm-up), standalone, fsync on\n\n", *clients, *valueSize, *duration, *warmup)
	fmt.Printf("| workload | zkraft ops/s | ZooKeeper ops/s | ratio | zkraft p50/p99 | ZooKeeper p50/p99 |\n|---|---|---|---|---|---|\n")
	for _, n := range names {
		z, a := results[n][zktest.Zkraft], results[n][zktest.Apache]
		ratio := "-"
		if a.ops > 0 && z.ops > 0 {
			ratio = fmt.Sprintf("%.2fx", z.rate()/a.rate())
		}
		fmt.Printf("| %s | %.0f | %.0f | %s | %v / %v | %v / %v |\n", n, z.rate(), a.rate(), ratio, z.p50, z.p99, a.p50, a.p99)
	}
}

func connect(addr string, n int) []*zk.Conn {
	conns := make([]*zk.Conn, n)
	for i := range conns {
		c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
		if err != nil {
			fail(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for c.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				fail(fmt.Errorf("no session with %s", addr))
			}
			time.Sleep(10 * time.Millisecond)
		}
		conns[i] = c
	}
	return conns
}

func setup(c *zk.Conn, clients int, value []byte) {
	if _, err := c.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		fail(err)
	}
	for i := 0; i < clients; i++ {
		if _, err := c.Create(fmt.Sprintf("/bench/s%d", i), value, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			fail(err)
		}
	}
}

var seq atomic.Int64 // distinct node names across runs of the create workload

func run(conns []*zk.Conn, w workload, d time.Duration, value []byte) result {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, len(conns))
	var ops atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	for ci, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				i := int(seq.Add(1))
				t0 := time.Now()
				if err := w.op(c, ci, i, value); err != nil {
					fail(fmt.Errorf("%s: %w", w.name, err))
				}
				lat[ci] = append(lat[ci], time.Since(t0))
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r := result{ops: ops.Load(), secs: time.Since(start).Seconds()}
	if len(all) > 0 {
		r.p50 = all[len(all)/2].Round(time.Microsecond)
		r.p99 = all[len(all)*99/100].Round(time.Microsecond)
	}
	return r
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "zkbench:", err)
	os.Exit(1)
}
