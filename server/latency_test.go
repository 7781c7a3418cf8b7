package server

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatherLatency is the readlatency or updatelatency summary as the
// Prometheus endpoint serves it, from the server's registry.
func gatherLatency(t *testing.T, o *operability, name string) *dto.Summary {
	t.Helper()
	fams, err := o.reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			require.Equal(t, dto.MetricType_SUMMARY, f.GetType(), name)
			require.Len(t, f.GetMetric(), 1, name)
			return f.GetMetric()[0].GetSummary()
		}
	}
	require.FailNow(t, "metric missing", name)
	return nil
}

// TestLatencyQuantilesAccurate feeds request latencies through
// observeRequest and compares the quantiles the Prometheus summaries and
// mntr report with the exact (nearest-rank) quantiles of the same data:
// within 1% for latencies from 1 µs to minutes.
func TestLatencyQuantilesAccurate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name string
		gen  func(i int) time.Duration
		n    int
	}{
		{"log-uniform 1µs to 5min", func(int) time.Duration {
			return time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(float64(5*time.Minute))-math.Log(1e3))))
		}, 50000},
		{"all equal", func(int) time.Duration { return 2500 * time.Microsecond }, 5000},
		{"bimodal 500µs and 2s", func(i int) time.Duration {
			if i%20 == 0 {
				return 2*time.Second + time.Duration(r.Int64N(int64(10*time.Millisecond)))
			}
			return 500*time.Microsecond + time.Duration(r.Int64N(int64(50*time.Microsecond)))
		}, 20000},
		{"one huge outlier", func(i int) time.Duration {
			if i == 777 {
				return 4 * time.Minute
			}
			return 900 * time.Microsecond
		}, 10000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, withMetrics)
			sorted := make([]float64, tc.n)
			var sum float64
			for i := range sorted {
				d := tc.gen(i)
				s.observeRequest(false, d, time.Now())
				sorted[i] = float64(d) / float64(time.Millisecond)
				sum += sorted[i]
			}
			slices.Sort(sorted)
			exact := func(q float64) float64 {
				return sorted[min(max(int(math.Ceil(q*float64(len(sorted)))), 1), len(sorted))-1]
			}
			sm := gatherLatency(t, s.ops, "updatelatency")
			require.Equal(t, uint64(tc.n), sm.GetSampleCount())
			require.InEpsilon(t, sum, sm.GetSampleSum(), 1e-9)
			var qs []float64
			for _, q := range sm.GetQuantile() {
				qs = append(qs, q.GetQuantile())
				want := exact(q.GetQuantile())
				require.InDelta(t, want, q.GetValue(), want/100, "q=%v: exact %v ms, reported %v ms", q.GetQuantile(), want, q.GetValue())
			}
			require.Equal(t, []float64{0.5, 0.9, 0.95, 0.99, 0.999}, qs)
			got := s.ops.latencySummary(false)
			for _, p := range []struct {
				q   float64
				got int64
			}{{0.5, got.p50}, {0.95, got.p95}, {0.99, got.p99}, {0.999, got.p999}} {
				want := exact(p.q)
				require.InDelta(t, want, float64(p.got), want/100+0.5, "mntr's p%v in rounded ms", p.q*100)
			}
			require.Equal(t, uint64(0), gatherLatency(t, s.ops, "readlatency").GetSampleCount())
		})
	}
}

// TestLatencyObserveConcurrent records latencies from many goroutines, as
// the connection writers do, while others scrape the summaries and build
// mntr's figures and srst resets them; run with -race. Nothing is lost:
// the summaries count every request.
func TestLatencyObserveConcurrent(t *testing.T) {
	s := startServer(t, withMetrics)
	const writers, each = 8, 2000
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				fams, err := s.ops.reg.Gather()
				assert.NoError(t, err)
				assert.NotEmpty(t, fams)
				sum := s.ops.latencySummary(true)
				assert.LessOrEqual(t, sum.p50, sum.p999)
				s.ops.resetLatency()
			}
		}()
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s.observeRequest(i%3 == 0, time.Duration(w*each+i)*time.Microsecond, time.Now())
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	reads := gatherLatency(t, s.ops, "readlatency").GetSampleCount()
	updates := gatherLatency(t, s.ops, "updatelatency").GetSampleCount()
	require.Equal(t, uint64(writers*each), reads+updates)
	require.Equal(t, uint64(writers*((each+2)/3)), reads)
}

// TestObserveRequestAllocatesNothing: the connection writer's latency
// recording allocates nothing.
func TestObserveRequestAllocatesNothing(t *testing.T) {
	s := &Server{}
	s.ops = newOperability(s)
	allocs := testing.AllocsPerRun(10000, func() {
		s.observeRequest(true, 3*time.Millisecond, time.Now())
		s.observeRequest(false, 7*time.Millisecond, time.Now())
	})
	require.Zero(t, allocs)
}
