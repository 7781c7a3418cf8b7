// Package lathist records durations into log-linear histograms with atomic
// counters, cheaply enough to count every request a server answers, and
// answers quantiles over a sliding window of recent observations.
//
// A Histogram has 64 buckets per power of two of nanoseconds (values below
// 128 ns have a bucket each): a value's bucket is found from its bit length
// and next six bits, and a quantile is reported as the middle of its
// bucket, within 1/128 (0.8%) of the exact value for every duration from
// 1 ns to 292 years.
//
// A Window keeps a ring of histograms, one per step of time, and records
// each observation into the current step's with one atomic add (after one
// read of the monotonic clock), besides a count and a sum kept since it
// was made. A Histogram is 29 KiB (Buckets counters of 8 bytes). Its quantiles merge the steps
// still in the window: with n steps of length step, they cover the last
// (n-1)*step to n*step, as a client_golang Summary with MaxAge n*step and
// n AgeBuckets does.
package lathist

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

const (
	subBits  = 6            // a bucket is 1/64 of its power of two
	subCount = 1 << subBits // buckets per power of two
	// Buckets is the number of buckets of a Histogram: values below
	// subCount exactly, then subCount for each bit length up to 63.
	Buckets = (63 - subBits + 1) * subCount
)

// bucketOf is the bucket of v ns (negative counts as 0).
//
// Invariant: bucketLow(bucketOf(v)) <= v < bucketLow(bucketOf(v)+1).
func bucketOf(v int64) int {
	if v < subCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	u := uint64(v)
	e := bits.Len64(u) - 1 // >= subBits
	return (e-subBits+1)*subCount + int((u>>(e-subBits))&(subCount-1))
}

// bucketLow is the lowest value of bucket i.
func bucketLow(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	e := i/subCount + subBits - 1
	return uint64(subCount+i%subCount) << (e - subBits)
}

// bucketMid is the middle of bucket i's values, what a quantile falling
// in it reports.
func bucketMid(i int) float64 {
	lo := bucketLow(i)
	if i < subCount {
		return float64(lo)
	}
	width := uint64(1) << (i/subCount - 1)
	return float64(lo) + float64(width-1)/2
}

// Histogram counts durations in Buckets log-linear buckets. Its methods
// may be called from any number of goroutines at once; Add takes no lock
// and allocates nothing.
type Histogram struct {
	counts [Buckets]atomic.Uint64
}

// Add counts one observation of d.
func (h *Histogram) Add(d time.Duration) {
	h.counts[bucketOf(int64(d))].Add(1)
}

// reset zeroes every bucket. An Add running at the same time may be kept.
func (h *Histogram) reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
}

// Counts is a copy of a histogram's buckets, or the sum of several.
type Counts struct {
	n     [Buckets]uint64
	total uint64
}

// Merge adds h's counts to c.
func (c *Counts) Merge(h *Histogram) {
	for i := range h.counts {
		v := h.counts[i].Load()
		c.n[i] += v
		c.total += v
	}
}

// Total is the number of observations counted.
func (c *Counts) Total() uint64 { return c.total }

// Quantile is the q-quantile (0 <= q <= 1) of the counted observations in
// ns, by nearest rank: the middle of the bucket holding the ceil(q*n)-th
// smallest (the smallest for q = 0). NaN when nothing was counted.
func (c *Counts) Quantile(q float64) float64 {
	if c.total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(c.total)))
	rank = max(rank, 1)
	rank = min(rank, c.total)
	var seen uint64
	for i, v := range c.n {
		seen += v
		if seen >= rank {
			return bucketMid(i)
		}
	}
	return bucketMid(Buckets - 1) // unreachable: seen ends at total
}

// Window is a histogram of the observations of a sliding window of time,
// kept as a ring of per-step histograms, with a count and a sum of every
// observation since it was made. Observe may be called from any number of
// goroutines at once, and at the same time as Snapshot.
type Window struct {
	// now is the window's clock (time.Now, or the injected one) and origin
	// its reading when the window was made.
	now    func() time.Time
	origin time.Time
	step   time.Duration

	// count and sum are written by every Observe: on their own cache
	// line, apart from the fields above that every Observe reads.
	_     [64]byte
	count atomic.Uint64
	sum   atomic.Int64 // ns; wraps after 292 years of summed durations
	_     [48]byte

	// mu is held to clear a step's histogram for reuse (once per step,
	// by the first Observe of the new step) and by Snapshot, so that a
	// snapshot sees no half-cleared step. A leaf.
	mu    sync.Mutex
	steps []windowStep
}

type windowStep struct {
	// index is the step this histogram counts, steps since origin; -1 for
	// none yet. Written under Window.mu after the histogram was cleared.
	index atomic.Int64
	hist  Histogram
}

// NewWindow is a Window of n steps of length step (n >= 2), taking time
// from now, or from the monotonic clock when now is nil.
func NewWindow(n int, step time.Duration, now func() time.Time) *Window {
	if n < 2 || step <= 0 {
		panic(fmt.Sprintf("lathist: a window needs at least 2 steps of a positive length, got %d of %v", n, step))
	}
	if now == nil {
		now = time.Now
	}
	w := &Window{now: now, origin: now(), step: step, steps: make([]windowStep, n)}
	for i := range w.steps {
		w.steps[i].index.Store(-1)
	}
	return w
}

// stepIndex is the step the clock is in now.
func (w *Window) stepIndex() int64 {
	return w.stepAt(w.now())
}

// stepAt is the step the clock is in at now.
func (w *Window) stepAt(now time.Time) int64 {
	return max(int64(now.Sub(w.origin)/w.step), 0)
}

// Observe records one observation of d: three atomic adds and one read of
// the clock; the first observation of a step also clears the ring's
// oldest histogram for it, under mu. It allocates nothing.
func (w *Window) Observe(d time.Duration) {
	w.ObserveAt(d, w.now())
}

// ObserveAt is Observe with the clock read by the caller: now is a reading
// of the window's clock (time.Now for a window made with a nil clock), as
// a caller that measured d from it has at hand. It reads no clock.
func (w *Window) ObserveAt(d time.Duration, now time.Time) {
	w.count.Add(1)
	w.sum.Add(int64(d))
	idx := w.stepAt(now)
	s := &w.steps[idx%int64(len(w.steps))]
	if s.index.Load() != idx && !w.rotate(s, idx) {
		return
	}
	s.hist.Add(d)
}

// rotate makes s count step idx, clearing what it counted of an older
// step; false if it already counts a newer step than idx (the observer
// was descheduled for a whole window: its observation is too old to keep).
func (w *Window) rotate(s *windowStep, idx int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := s.index.Load()
	if cur > idx {
		return false
	}
	if cur < idx {
		s.hist.reset()
		s.index.Store(idx)
	}
	return true
}

// Count is the number of observations since the window was made.
func (w *Window) Count() uint64 { return w.count.Load() }

// Sum is the sum of the observations since the window was made.
func (w *Window) Sum() time.Duration { return time.Duration(w.sum.Load()) }

// Snapshot adds to c the counts of the steps still in the window: the
// current one and the n-1 before it.
func (w *Window) Snapshot(c *Counts) {
	idx := w.stepIndex()
	oldest := idx - int64(len(w.steps)) + 1
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.steps {
		s := &w.steps[i]
		if si := s.index.Load(); si >= oldest && si <= idx {
			c.Merge(&s.hist)
		}
	}
}
