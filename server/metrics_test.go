package server

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func withMetrics(c *Config) {
	c.MetricsEnabled = true
	c.MetricsHost = "127.0.0.1"
	c.MetricsPort = 0
}

// scrape fetches and parses the Prometheus endpoint.
func scrape(t *testing.T, s *Server, path string) map[string]*dto.MetricFamily {
	t.Helper()
	require.NotNil(t, s.MetricsAddr(), "metrics endpoint not running")
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + s.MetricsAddr().String() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType) float64 {
	t.Helper()
	f := fams[name]
	require.NotNil(t, f, "metric %s missing", name)
	require.Equal(t, typ, f.GetType(), name)
	require.Len(t, f.GetMetric(), 1, name)
	m := f.GetMetric()[0]
	switch typ {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	default:
		return float64(m.GetSummary().GetSampleCount())
	}
}

func TestMetricsEndpoint(t *testing.T) {
	s := startServer(t, func(c *Config) { withAdmin(c); withMetrics(c) })
	workload(t, s)
	settle(t, s, 1)
	fams := scrape(t, s, "/metrics")
	gauges := map[string]float64{
		"znode_count": 7, "watch_count": 3, "ephemerals_count": 1, "global_sessions": 1, "local_sessions": 0,
		"num_alive_connections": 1, "zkraft_raft_is_leader": 1, "zkraft_raft_voters": 1, "zkraft_raft_leader_id": 1,
	}
	for name, want := range gauges {
		require.Equal(t, want, value(t, fams, name, dto.MetricType_GAUGE), name)
	}
	for _, name := range []string{"outstanding_requests", "packets_received", "packets_sent", "approximate_data_size", "uptime",
		"avg_latency", "min_latency", "max_latency", "zkraft_raft_term", "zkraft_raft_commit_index", "zkraft_raft_applied_index",
		"zkraft_raft_last_snapshot_index", "zkraft_raft_log_entries", "zkraft_snapshot_size_bytes", "zkraft_raft_log_db_size_bytes"} {
		value(t, fams, name, dto.MetricType_GAUGE)
	}
	require.Positive(t, value(t, fams, "zkraft_raft_term", dto.MetricType_GAUGE))
	// The raft log is the WAL beside raft.db: both count.
	db, err := os.Stat(filepath.Join(s.cfg.LogDir(), "raft.db"))
	require.NoError(t, err)
	require.Greater(t, value(t, fams, "zkraft_raft_log_db_size_bytes", dto.MetricType_GAUGE), float64(db.Size()))
	require.Positive(t, value(t, fams, "zkraft_raft_applied_index", dto.MetricType_GAUGE))
	require.Positive(t, value(t, fams, "approximate_data_size", dto.MetricType_GAUGE))
	require.Positive(t, value(t, fams, "zkraft_raft_persisted_entries_total", dto.MetricType_COUNTER))
	require.Positive(t, value(t, fams, "zkraft_raft_persist_batches_total", dto.MetricType_COUNTER))
	value(t, fams, "zkraft_raft_snapshots_taken_total", dto.MetricType_COUNTER)
	info := fams["zkraft_info"].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range info.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, "standalone", labels["server_state"])
	require.Contains(t, labels["version"], Version)

	// Request latency summaries with ZooKeeper's names and quantiles.
	for _, name := range []string{"readlatency", "updatelatency"} {
		f := fams[name]
		require.NotNil(t, f, name)
		require.Equal(t, dto.MetricType_SUMMARY, f.GetType())
		var qs []float64
		for _, q := range f.GetMetric()[0].GetSummary().GetQuantile() {
			qs = append(qs, q.GetQuantile())
		}
		require.Subset(t, qs, []float64{0.5, 0.9, 0.99}, name)
	}
	// Go runtime and process metrics stand in for ZooKeeper's JVM metrics.
	require.Contains(t, fams, "go_goroutines")
	require.Contains(t, fams, "process_open_fds")

	// Like ZooKeeper's provider, any path serves the metrics.
	require.Contains(t, scrape(t, s, "/"), "znode_count")
}

func TestMetricsRequestLatency(t *testing.T) {
	s := startServer(t, func(c *Config) { withAdmin(c); withMetrics(c) })
	for _, d := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond} {
		s.observeRequest(true, d, time.Now())
	}
	s.observeRequest(false, 7*time.Millisecond, time.Now())
	fams := scrape(t, s, "/metrics")
	require.Equal(t, 3.0, value(t, fams, "readlatency", dto.MetricType_SUMMARY))
	require.Equal(t, 9.0, fams["readlatency"].GetMetric()[0].GetSummary().GetSampleSum())
	require.Equal(t, 1.0, value(t, fams, "updatelatency", dto.MetricType_SUMMARY))

	sum := s.ops.latencySummary(true)
	require.Equal(t, latencySummary{avg: 3, min: 1, max: 5, count: 3, sum: 9, p50: 3, p95: 5, p99: 5, p999: 5}, sum)
	mntr := fourLetter(t, s, "mntr")
	require.Contains(t, mntr, "zk_avg_readlatency\t3.0\n")
	require.Contains(t, mntr, "zk_cnt_readlatency\t3\n")
	require.Contains(t, mntr, "zk_max_updatelatency\t7\n")

	// srst resets min/avg/max, not the Prometheus summary.
	require.Equal(t, "Server stats reset.\n", fourLetter(t, s, "srst"))
	require.Zero(t, s.ops.latencySummary(true).count)
	require.Equal(t, 3.0, value(t, scrape(t, s, "/metrics"), "readlatency", dto.MetricType_SUMMARY))
}

func TestMetricsConfig(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		s := startServer(t, func(c *Config) { c.AdminEnabled = false })
		require.Nil(t, s.MetricsAddr())
	})
	t.Run("exportJvmInfo=false", func(t *testing.T) {
		s := startServer(t, func(c *Config) { withMetrics(c); c.MetricsExportJvm = false })
		fams := scrape(t, s, "/metrics")
		require.Contains(t, fams, "znode_count")
		require.NotContains(t, fams, "go_goroutines")
	})
	t.Run("registries are per server", func(t *testing.T) {
		a := startServer(t, withMetrics)
		b := startServer(t, withMetrics)
		require.Contains(t, scrape(t, a, "/metrics"), "znode_count")
		require.Contains(t, scrape(t, b, "/metrics"), "znode_count")
	})
	t.Run("port in use fails the start", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		cfg := Default()
		cfg.ClientPort, cfg.ClientPortAddress, cfg.DataDir, cfg.AdminEnabled = 0, "127.0.0.1", t.TempDir(), false
		withMetrics(&cfg)
		cfg.MetricsPort = ln.Addr().(*net.TCPAddr).Port
		s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
		err = s.Start()
		require.ErrorContains(t, err, "metrics")
		// Nothing is left listening: the client port can be taken again.
		require.NoError(t, s.Stop())
	})
}
