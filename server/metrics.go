package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkraft/zkraft/internal/lathist"
)

// operability runs the two HTTP endpoints of a server, the AdminServer
// (admin.go) and the Prometheus endpoint (this file), and keeps the request
// latency figures that mntr and the endpoints report. Each server has its
// own registry: nothing is registered globally, so several servers live in
// one process (tests).
type operability struct {
	s   *Server
	reg *prometheus.Registry

	read, update requestLatency
	traceMask    atomic.Int64 // get/set_trace_mask; zkraft has no tracing
	snapshotBusy atomic.Bool  // a snapshot command is running (backup.go)

	mu          sync.Mutex
	servers     []*http.Server
	adminAddr   net.Addr
	metricsAddr net.Addr
}

// requestLatency is one kind of request's latency: min/avg/max in ms since
// the last srst, and a sliding window of log-linear histograms for the
// percentiles, with a count and sum since start (never reset, as
// Prometheus expects of a summary). Recording one is a few atomic adds and
// one read of the monotonic clock (lathist.Window.Observe).
type requestLatency struct {
	stats  latencyStats
	window *lathist.Window
}

// latencyQuantiles are the summaries' quantiles: ZooKeeper's Prometheus
// quantiles (0.5, 0.9, 0.99) and mntr's percentiles (p50, p95, p99, p999).
var latencyQuantiles = []float64{0.5, 0.9, 0.95, 0.99, 0.999}

// The quantiles cover the last 8 to 10 minutes: a ring of 5 windows of 2
// minutes each, as client_golang's default Summary (MaxAge 10 minutes, 5
// AgeBuckets) that zkraft used before.
const (
	latencyWindowSteps = 5
	latencyWindowStep  = 2 * time.Minute
)

// defaultTraceMask is ZooKeeper's default trace mask, which gtmk reports.
const defaultTraceMask = 306

func newOperability(s *Server) *operability {
	o := &operability{s: s, reg: prometheus.NewRegistry()}
	o.traceMask.Store(defaultTraceMask)
	o.read.window = lathist.NewWindow(latencyWindowSteps, latencyWindowStep, nil)
	o.update.window = lathist.NewWindow(latencyWindowSteps, latencyWindowStep, nil)
	o.resetLatency()
	o.reg.MustRegister(&latencyCollector{o: o}, &serverCollector{s: s}, &peerCollector{s: s}) // peerstats.go
	if s.cfg.MetricsExportJvm {
		o.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return o
}

// observeRequest records the latency of one answered client request, from
// its arrival to its reply: reads feed readlatency, writes updatelatency.
// The connection writer calls it once per reply.
func (s *Server) observeRequest(read bool, d time.Duration, now time.Time) {
	l := &s.ops.update
	if read {
		l = &s.ops.read
	}
	l.stats.recordLatency(d.Milliseconds())
	l.window.ObserveAt(d, now)
}

func (o *operability) resetLatency() {
	o.read.stats.resetLatency()
	o.update.stats.resetLatency()
}

// latencySummary is mntr's avg/min/max/cnt/sum/pNN group for one metric.
type latencySummary struct {
	avg                  float64
	min, max, count, sum int64
	p50, p95, p99, p999  int64
}

func (o *operability) latencySummary(read bool) latencySummary {
	l := &o.update
	if read {
		l = &o.read
	}
	min, avg, max := l.stats.latency()
	out := latencySummary{avg: roundAvg(avg), min: min, max: max, count: l.stats.count.Load(), sum: l.stats.sumLatency.Load()}
	var c lathist.Counts
	l.window.Snapshot(&c)
	if c.Total() > 0 {
		round := func(q float64) int64 { return int64(math.Round(c.Quantile(q) / float64(time.Millisecond))) }
		out.p50, out.p95, out.p99, out.p999 = round(0.5), round(0.95), round(0.99), round(0.999)
	}
	return out
}

// latencyCollector exports readlatency and updatelatency as Prometheus
// summaries: the quantiles of the window (NaN while it is empty), the
// count and the sum in ms since start.
type latencyCollector struct{ o *operability }

var (
	readLatencyDesc   = prometheus.NewDesc("readlatency", "Read request latency in milliseconds, from arrival to reply", nil, nil)
	updateLatencyDesc = prometheus.NewDesc("updatelatency", "Write request latency in milliseconds, from arrival to reply (after quorum commit and fsync)", nil, nil)
)

func (c *latencyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- readLatencyDesc
	ch <- updateLatencyDesc
}

func (c *latencyCollector) Collect(ch chan<- prometheus.Metric) {
	ms := float64(time.Millisecond)
	for _, l := range []struct {
		desc *prometheus.Desc
		lat  *requestLatency
	}{{readLatencyDesc, &c.o.read}, {updateLatencyDesc, &c.o.update}} {
		count, sum := l.lat.window.Count(), l.lat.window.Sum()
		var counts lathist.Counts
		l.lat.window.Snapshot(&counts)
		quantiles := make(map[float64]float64, len(latencyQuantiles))
		for _, q := range latencyQuantiles {
			quantiles[q] = counts.Quantile(q) / ms
		}
		ch <- prometheus.MustNewConstSummary(l.desc, count, float64(sum)/ms, quantiles)
	}
}

// start opens the endpoints the config enables. As in ZooKeeper, an
// AdminServer that cannot start is logged and skipped, while a metrics
// provider that cannot start fails the server.
func (o *operability) start() error {
	cfg := &o.s.cfg
	if cfg.MetricsEnabled {
		addr := net.JoinHostPort(cfg.MetricsHost, strconv.Itoa(cfg.MetricsPort))
		ln, err := o.s.network.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("start Prometheus metrics endpoint on %s: %w", addr, err)
		}
		h := promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
		o.serve(ln, h, 0)
		o.mu.Lock()
		o.metricsAddr = ln.Addr()
		o.mu.Unlock()
		o.s.log.Info().Str("addr", ln.Addr().String()).Msg("Prometheus metrics on /metrics")
	}
	if cfg.AdminEnabled {
		addr := net.JoinHostPort(cfg.AdminAddress, strconv.Itoa(cfg.AdminPort))
		ln, err := o.s.network.Listen("tcp", addr)
		if err != nil {
			o.s.log.Warn().Err(err).Str("addr", addr).Msg("AdminServer not started")
			return nil
		}
		o.serve(ln, o.adminHandler(), cfg.AdminIdleTimeout)
		o.mu.Lock()
		o.adminAddr = ln.Addr()
		o.mu.Unlock()
		o.s.log.Info().Str("addr", ln.Addr().String()).Str("url", cfg.AdminCommandURL).Msg("AdminServer started")
	}
	return nil
}

func (o *operability) serve(ln net.Listener, h http.Handler, idle time.Duration) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle}
	o.mu.Lock()
	o.servers = append(o.servers, srv)
	o.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.s.log.Warn().Err(err).Str("addr", ln.Addr().String()).Msg("HTTP endpoint stopped")
		}
	}()
}

// stop closes the endpoints and their connections.
func (o *operability) stop() {
	o.mu.Lock()
	servers := o.servers
	o.servers = nil
	o.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Close()
	}
}

// AdminAddr is the AdminServer's address, nil when it is not running.
func (s *Server) AdminAddr() net.Addr {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	return s.ops.adminAddr
}

// MetricsAddr is the Prometheus endpoint's address, nil when it is off.
func (s *Server) MetricsAddr() net.Addr {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	return s.ops.metricsAddr
}

// serverCollector computes the gauges at scrape time from the same view as
// mntr. Names are ZooKeeper's where ZooKeeper has the metric, zkraft_* for
// the raft figures.
type serverCollector struct{ s *Server }

type gaugeSpec struct {
	key     string // mntr key without zk_
	name    string
	help    string
	counter bool
}

var gaugeSpecs = func() []gaugeSpec {
	specs := []gaugeSpec{
		{key: "znode_count", help: "Number of znodes"},
		{key: "watch_count", help: "Number of watches (data and child)"},
		{key: "ephemerals_count", help: "Number of ephemeral znodes"},
		{key: "num_alive_connections", help: "Number of open client connections"},
		{key: "outstanding_requests", help: "Requests received and not yet answered"},
		{key: "packets_received", help: "Packets received since the last stat reset"},
		{key: "packets_sent", help: "Packets sent since the last stat reset"},
		{key: "global_sessions", help: "Number of sessions"},
		{key: "local_sessions", help: "Number of local sessions (zkraft has none)"},
		{key: "approximate_data_size", help: "Approximate size of znode paths and data in bytes"},
		{key: "uptime", help: "Time since the server started in milliseconds"},
		{key: "avg_latency", help: "Average request latency in milliseconds since the last stat reset"},
		{key: "min_latency", help: "Minimum request latency in milliseconds since the last stat reset"},
		{key: "max_latency", help: "Maximum request latency in milliseconds since the last stat reset"},
		{key: "open_file_descriptor_count", help: "Open file descriptors"},
		{key: "max_file_descriptor_count", help: "Maximum number of open file descriptors"},
		{key: "raft_term", name: "zkraft_raft_term", help: "Current raft term"},
		{key: "raft_commit_index", name: "zkraft_raft_commit_index", help: "Highest raft log index known committed"},
		{key: "raft_applied_index", name: "zkraft_raft_applied_index", help: "Highest raft log index applied to the state"},
		{key: "raft_last_snapshot_index", name: "zkraft_raft_last_snapshot_index", help: "Raft log index of the last snapshot"},
		{key: "raft_log_entries", name: "zkraft_raft_log_entries", help: "Raft log entries kept since the last compaction"},
		{key: "raft_leader_id", name: "zkraft_raft_leader_id", help: "Member id of the raft leader, 0 when none is known"},
		{key: "raft_is_leader", name: "zkraft_raft_is_leader", help: "1 when this member is the raft leader"},
		{key: "raft_voters", name: "zkraft_raft_voters", help: "Voting members of the raft group"},
		{key: "raft_learners", name: "zkraft_raft_learners", help: "Non-voting members of the raft group"},
		{key: "raft_persist_batches", name: "zkraft_raft_persist_batches_total", help: "bbolt transactions that wrote raft log entries", counter: true},
		{key: "raft_persisted_entries", name: "zkraft_raft_persisted_entries_total", help: "Raft log entries written to bbolt", counter: true},
		{key: "raft_snapshots_taken", name: "zkraft_raft_snapshots_taken_total", help: "Local snapshots this member took since it started", counter: true},
		{key: "raft_snapshot_size", name: "zkraft_snapshot_size_bytes", help: "Size of the newest snapshot file in bytes"},
		{key: "raft_log_db_size", name: "zkraft_raft_log_db_size_bytes", help: "Size of the raft log on disk (WAL segments and raft.db) in bytes"},
	}
	for i := range specs {
		if specs[i].name == "" {
			specs[i].name = specs[i].key
		}
	}
	return specs
}()

var (
	gaugeDescs = func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{}
		for _, g := range gaugeSpecs {
			m[g.key] = prometheus.NewDesc(g.name, g.help, nil, nil)
		}
		return m
	}()
	infoDesc = prometheus.NewDesc("zkraft_info", "zkraft version and server state (always 1)", []string{"version", "server_state"}, nil)
)

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range gaugeSpecs {
		ch <- gaugeDescs[g.key]
	}
	ch <- infoDesc
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	values := map[string]any{}
	for _, m := range c.s.monitorMetrics() {
		values[m.k] = m.v
	}
	for _, g := range gaugeSpecs {
		var f float64
		switch v := values[g.key].(type) {
		case int64:
			f = float64(v)
		case float64:
			f = v
		default:
			continue // not available on this platform
		}
		typ := prometheus.GaugeValue
		if g.counter {
			typ = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(gaugeDescs[g.key], typ, f)
	}
	version, _ := values["version"].(string)
	state, _ := values["server_state"].(string)
	ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1, version, state)
}
