package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

func TestParseProcStatus(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    procMem
		wantErr string
	}{
		{"full", "Name:\tzkraft\nVmPeak:\t 900 kB\nVmHWM:\t  600000 kB\nVmRSS:\t  524288 kB\nRssAnon:\t  500000 kB\nRssFile:\t   24288 kB\nThreads:\t9\n",
			procMem{rss: 524288, anon: 500000, file: 24288, peak: 600000}, ""},
		{"old kernel without RssAnon", "VmRSS:\t1024 kB\n", procMem{rss: 1024}, ""},
		{"no VmRSS (a zombie)", "Name:\tjava\nState:\tZ (zombie)\n", procMem{}, "no VmRSS"},
		{"not kB", "VmRSS:\t1024 MB\n", procMem{}, `want "<n> kB"`},
		{"not a number", "VmRSS:\tlots kB\n", procMem{}, "VmRSS"},
		{"empty", "", procMem{}, "no VmRSS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatus(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOverlapsAny(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	spans := []span{{at(100), at(200)}, {at(500), at(900)}}
	tests := []struct {
		name       string
		start, end int
		want       bool
	}{
		{"before all", 0, 50, false},
		{"ends as one starts", 50, 100, false},
		{"crosses the start", 90, 110, true},
		{"inside", 600, 700, true},
		{"spans a whole snapshot", 400, 1000, true},
		{"between", 250, 450, false},
		{"starts as one ends", 900, 950, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overlapsAny(timedOp{at(tt.start), at(tt.end)}, spans); got != tt.want {
				t.Fatalf("overlapsAny = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFormatScaleTable(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var l []time.Duration
		for _, n := range ns {
			l = append(l, time.Duration(n)*time.Millisecond)
		}
		return l
	}
	z := &scaleFigures{nodes: 1000000, load: 100 * time.Second,
		rssLoad: procMem{rss: 400 << 10}, rssIdle: procMem{rss: 300 << 10, anon: 280 << 10, file: 20 << 10, peak: 900 << 10},
		ready: 1500 * time.Millisecond, readable: 2 * time.Second,
		quiet: result{lat: ms(1, 2, 3)}, during: result{lat: ms(4, 5)},
		snapshots: []span{{time.Unix(0, 0), time.Unix(1, 500e6)}},
		writes:    result{ops: 300000, dur: 10 * time.Second, lat: ms(1, 2, 3)}}
	a := &scaleFigures{nodes: 1000000, load: 50 * time.Second,
		rssLoad: procMem{rss: 1000 << 10}, rssIdle: procMem{rss: 600 << 10, peak: 1200 << 10},
		ready: 8 * time.Second, readable: 10 * time.Second, quiet: result{lat: ms(2)}}
	tests := []struct {
		name string
		z, a *scaleFigures
		want []string // lines that must appear
	}{
		{"both", z, a, []string{
			"| 1000000 znodes of 100 bytes | zkraft | ZooKeeper | zkraft / ZooKeeper | target |",
			"| create N znodes (s) | 100.00 | 50.00 | 2.00x |  |",
			"| RSS after load (MB) | 400 | 1000 | 0.40x | ≤ 0.5x |",
			"| RSS after GC + settle (MB) | 300 | 600 | 0.50x | ≤ 0.5x |",
			"|   of which anon / file (MB) | 280 / 20 | 0 / 0 | - |  |",
			"| peak RSS up to then, VmHWM (MB) | 900 | 1200 | 0.75x |  |",
			"| restart: last znode read (s) | 2.00 | 10.00 | 0.20x | zkraft < 5 s |",
			"| light load p99, no snapshot | 2ms (3 req) | 2ms (1 req) | - |  |",
			"| light load p99 / max, during a snapshot | 4ms / 5ms (2 req) | no snapshot seen | - | no stall |",
			"| snapshots seen, longest (s) | 1, 1.50 | 0, 0.00 | - |  |",
			"| setData on the large tree, full speed (ops/s) | 30000 | not run | - |  |",
			"|   its p50 / p99 | 2ms / 2ms | - | - |  |",
		}},
		{"zkraft only", z, nil, []string{
			"| RSS after load (MB) | 400 | - | - | ≤ 0.5x |",
		}},
		{"ZooKeeper only", nil, a, []string{
			"| 1000000 znodes of 100 bytes |",
			"| restart: serving (s) | - | 8.00 | - |  |",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := formatScaleTable(tt.z, tt.a)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
		})
	}
}

// TestWriteBurstSpreadsOverTheTree runs the scale run's full-speed setData
// against each real server on a small tree: it must complete writes, time
// only those inside its window, and spread them over the parents.
func TestWriteBurstSpreadsOverTheTree(t *testing.T) {
	o := scaleOptions{nodes: 200, parents: 4, conns: 2, inflight: 4, writeDur: 300 * time.Millisecond, writeClients: 4}
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			zs := zktest.Start(t, target, zktest.Options{})
			if err := createTree(zs.Addr, o, func(string, ...any) {}); err != nil {
				t.Fatalf("create the tree: %v", err)
			}
			r, err := writeBurst(zs, o, 100*time.Millisecond)
			if err != nil {
				t.Fatalf("writeBurst: %v", err)
			}
			if r.ops == 0 || int64(len(r.lat)) != r.ops || r.dur != o.writeDur {
				t.Fatalf("writeBurst = %d ops, %d latencies over %v; want some, one each, over %v", r.ops, len(r.lat), r.dur, o.writeDur)
			}
			c, err := dial(zs.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			written := map[int]bool{} // parents with a written znode
			for i := 0; i < o.nodes; i++ {
				_, st, err := c.Get(scalePath(o.parents, i))
				if err != nil {
					t.Fatalf("%s: %v", scalePath(o.parents, i), err)
				}
				if st.Version > 0 {
					written[i%o.parents] = true
				}
			}
			if len(written) != o.parents {
				t.Fatalf("znodes written under %d of %d parents, want all", len(written), o.parents)
			}
		})
	}
}
