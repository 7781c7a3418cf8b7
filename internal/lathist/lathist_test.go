package lathist

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuckets checks that every value falls in the bucket whose bounds hold
// it, that buckets are contiguous, and that a bucket is at most 1/64 of its
// lowest value wide, at the edges and at random.
func TestBuckets(t *testing.T) {
	values := []int64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, 1<<20 - 1, 1<<40 + 12345, math.MaxInt64, math.MaxInt64 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		values = append(values, r.Int64N(1<<(1+r.IntN(62))))
	}
	for _, v := range values {
		i := bucketOf(v)
		require.GreaterOrEqual(t, i, 0, v)
		require.Less(t, i, Buckets, v)
		require.LessOrEqual(t, bucketLow(i), uint64(v), "bucket %d of %d", i, v)
		if i+1 < Buckets {
			require.Greater(t, bucketLow(i+1), uint64(v), "bucket %d of %d", i, v)
		}
	}
	for i := 1; i < Buckets; i++ {
		require.Equal(t, i, bucketOf(int64(bucketLow(i))), "bucket %d starts at its low", i)
		require.Equal(t, i-1, bucketOf(int64(bucketLow(i)-1)), "bucket %d ends before %d's low", i-1, i)
		width := bucketLow(i) - bucketLow(i-1)
		require.LessOrEqual(t, float64(width), math.Max(1, float64(bucketLow(i-1))/subCount), "bucket %d", i-1)
	}
	require.Equal(t, 0, bucketOf(-5), "negative durations count as 0")
}

// exactQuantile is the nearest-rank q-quantile of sorted.
func exactQuantile(sorted []int64, q float64) float64 {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return float64(sorted[min(rank, len(sorted))-1])
}

// TestQuantileAccuracy compares the histogram's quantiles with the exact
// ones of the same data: within 1/128 of the exact value, for values from
// 1 µs to minutes.
func TestQuantileAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := func(n int, f func(i int) time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	logUniform := func(lo, hi time.Duration) func(int) time.Duration {
		return func(int) time.Duration {
			return time.Duration(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
		}
	}
	cases := []struct {
		name string
		data []time.Duration
	}{
		{"one value", []time.Duration{3 * time.Millisecond}},
		{"log-uniform 1µs to 10min", gen(100000, logUniform(time.Microsecond, 10*time.Minute))},
		{"uniform 0 to 5ms", gen(50000, func(int) time.Duration { return time.Duration(r.Int64N(int64(5 * time.Millisecond))) })},
		{"exponential, mean 700µs", gen(50000, func(int) time.Duration { return time.Duration(r.ExpFloat64() * float64(700*time.Microsecond)) })},
		{"all equal", gen(10000, func(int) time.Duration { return 1234567 * time.Nanosecond })},
		{"bimodal 1ms and 1s", gen(10000, func(i int) time.Duration {
			if i%10 == 0 {
				return time.Second + time.Duration(r.Int64N(int64(time.Millisecond)))
			}
			return time.Millisecond + time.Duration(r.Int64N(int64(time.Microsecond)))
		})},
		{"one huge outlier", gen(10000, func(i int) time.Duration {
			if i == 5000 {
				return 7 * time.Minute
			}
			return 800 * time.Microsecond
		})},
		{"outlier just inside p999", gen(1000, func(i int) time.Duration {
			if i == 0 {
				return 3 * time.Minute
			}
			return 2 * time.Millisecond
		})},
		{"powers of two and their neighbours", gen(3*40, func(i int) time.Duration {
			return time.Duration(int64(1)<<(i/3+10) + int64(i%3) - 1)
		})},
		{"ms 1 3 5", []time.Duration{time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}},
	}
	quantiles := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			sorted := make([]int64, len(tc.data))
			for i, d := range tc.data {
				h.Add(d)
				sorted[i] = int64(d)
			}
			slices.Sort(sorted)
			var c Counts
			c.Merge(&h)
			require.Equal(t, uint64(len(tc.data)), c.Total())
			for _, q := range quantiles {
				want := exactQuantile(sorted, q)
				got := c.Quantile(q)
				require.InDelta(t, want, got, want/128, "q=%v: exact %v, histogram %v", q, want, got)
			}
		})
	}
	var empty Counts
	require.True(t, math.IsNaN(empty.Quantile(0.5)), "no observations: NaN")
}

// fakeClock is a clock the test moves; safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func snapshot(w *Window) *Counts {
	var c Counts
	w.Snapshot(&c)
	return &c
}

// TestWindowSlides checks that observations leave the quantiles once their
// step is n steps old, while Count and Sum keep them.
func TestWindowSlides(t *testing.T) {
	var clk fakeClock
	clk.advance(time.Hour) // any origin
	w := NewWindow(5, 2*time.Minute, clk.now)
	require.True(t, math.IsNaN(snapshot(w).Quantile(0.5)), "empty window")

	for range 100 {
		w.Observe(time.Millisecond) // step 0
	}
	clk.advance(3 * time.Minute)
	for range 100 {
		w.Observe(100 * time.Millisecond) // step 1
	}
	steps := []struct {
		at       time.Duration // since the first observations
		total    uint64
		p50, p99 float64 // ms; NaN when empty
	}{
		{3 * time.Minute, 200, 1, 100},
		{10*time.Minute - time.Nanosecond, 200, 1, 100}, // step 4: step 0 is still in
		{10 * time.Minute, 100, 100, 100},               // step 5: step 0 left
		{12*time.Minute - time.Nanosecond, 100, 100, 100},
		{12 * time.Minute, 0, math.NaN(), math.NaN()}, // step 6: step 1 left
		{2 * time.Hour, 0, math.NaN(), math.NaN()},    // idle far longer than the ring
	}
	elapsed := 3 * time.Minute
	for _, s := range steps {
		clk.advance(s.at - elapsed)
		elapsed = s.at
		c := snapshot(w)
		require.Equal(t, s.total, c.Total(), "at %v", s.at)
		for _, q := range []struct {
			q    float64
			want float64
		}{{0.5, s.p50}, {0.99, s.p99}} {
			got := c.Quantile(q.q) / 1e6
			if math.IsNaN(q.want) {
				require.True(t, math.IsNaN(got), "at %v q=%v: %v", s.at, q.q, got)
			} else {
				require.InDelta(t, q.want, got, q.want/128, "at %v q=%v", s.at, q.q)
			}
		}
		require.Equal(t, uint64(200), w.Count(), "count is since start")
		require.Equal(t, 100*time.Millisecond+100*100*time.Millisecond, w.Sum(), "sum is since start")
	}

	// A step's slot reused n steps later starts empty.
	w.Observe(7 * time.Second)
	clk.advance(10 * time.Minute)
	w.Observe(9 * time.Second)
	c := snapshot(w)
	require.Equal(t, uint64(1), c.Total())
	require.InDelta(t, 9e9, c.Quantile(0.5), 9e9/128)

	// An observer whose clock reading is a whole window older than the
	// slot's step (descheduled meanwhile) is counted but kept out of the
	// quantiles.
	w.ObserveAt(time.Hour, clk.now().Add(-10*time.Minute))
	require.Equal(t, uint64(1), snapshot(w).Total())
	require.Equal(t, uint64(203), w.Count())

	// ObserveAt counts in the step of the reading it is given, as Observe
	// does in the step of its own reading.
	w.ObserveAt(3*time.Second, clk.now())
	c = snapshot(w)
	require.Equal(t, uint64(2), c.Total())
	require.InDelta(t, 3e9, c.Quantile(0.25), 3e9/128)
}

// TestWindowConcurrent observes from many goroutines while another takes
// snapshots and the clock moves across steps; run with -race. Every
// observation is counted, and those of the window's steps are all in the
// final snapshot.
func TestWindowConcurrent(t *testing.T) {
	var clk fakeClock
	w := NewWindow(5, time.Minute, clk.now)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var snaps sync.WaitGroup
	snaps.Add(1)
	go func() {
		defer snaps.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := snapshot(w)
			assert.LessOrEqual(t, c.Total(), w.Count())
			if i < 200 {
				clk.advance(time.Second) // 200 s in all: three steps begin, nothing leaves
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.Observe(time.Duration(g*each+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	snaps.Wait()
	require.Equal(t, uint64(goroutines*each), w.Count())
	require.Equal(t, uint64(goroutines*each), snapshot(w).Total())
}

// TestObserveAllocatesNothing: recording a latency allocates nothing, even
// when it moves to a new step.
func TestObserveAllocatesNothing(t *testing.T) {
	var clk fakeClock
	w := NewWindow(5, time.Minute, clk.now)
	allocs := testing.AllocsPerRun(1000, func() {
		w.Observe(time.Millisecond)
		clk.advance(time.Second)
	})
	require.Zero(t, allocs)
}

func BenchmarkWindowObserve(b *testing.B) {
	w := NewWindow(5, 2*time.Minute, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(0)
		for pb.Next() {
			w.Observe(d)
			d += 997 * time.Nanosecond
		}
	})
}

func BenchmarkWindowObserveSerial(b *testing.B) {
	w := NewWindow(5, 2*time.Minute, nil)
	b.ReportAllocs()
	d := time.Duration(0)
	for b.Loop() {
		w.Observe(d)
		d += 997 * time.Nanosecond
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		_ = time.Now()
	}
}

func TestNewWindowRejectsBadShapes(t *testing.T) {
	for _, c := range []struct {
		n    int
		step time.Duration
	}{{1, time.Minute}, {0, time.Minute}, {5, 0}, {5, -time.Second}} {
		require.Panics(t, func() { NewWindow(c.n, c.step, nil) }, "n=%d step=%v", c.n, c.step)
	}
}

// BenchmarkWindowLatency is a caller's measuring of a latency and its
// recording with Observe (two clock reads)...
func BenchmarkWindowLatency(b *testing.B) {
	w := NewWindow(5, 2*time.Minute, nil)
	start := time.Now()
	for b.Loop() {
		w.Observe(time.Since(start))
	}
}

// BenchmarkWindowLatencyAt ... and with ObserveAt (one).
func BenchmarkWindowLatencyAt(b *testing.B) {
	w := NewWindow(5, 2*time.Minute, nil)
	start := time.Now()
	for b.Loop() {
		now := time.Now()
		w.ObserveAt(now.Sub(start), now)
	}
}
