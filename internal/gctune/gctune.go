// Package gctune paces Go's garbage collector for a process whose live heap
// is its data set (zkraft's znode tree and sessions): the heap may grow to
// live + max(Floor, live × Fraction) before the next collection, instead of
// Go's default live × 2 (GOGC=100). Small trees get more headroom than
// GOGC=100 gives them (fewer collections), large ones less (RSS about 1.33×
// live instead of 2×).
//
// It uses only the runtime's own knob, debug.SetGCPercent: a goroutine polls
// runtime/metrics every PollInterval and, after each completed GC cycle,
// sets the percent that turns the live heap that cycle measured into the
// goal above (Percent). A ticker rather than a GC-cycle sentinel (a
// finalizer re-armed each cycle): a finalizer runs on the runtime's single
// finalizer goroutine, which no owner can stop or wait for, and a stale
// percent between two polls only matters if the live heap grew by more than
// its headroom within PollInterval. Reading the metrics does not stop the
// world; SetGCPercent is called only when the percent changes.
//
// During the startup restore (Tuner.Restoring) nearly everything allocated
// stays live, so collecting is wasted work: the percent is raised to
// RestorePercent until the restore ends. The heap then never exceeds what
// the restore allocated, the same peak as with the GC off.
//
// Invariants:
//   - The policy never runs when the user chose the collector's settings:
//     GOGC or GOMEMLIMIT in the environment, or Options.Disabled
//     (zkraft.gcPolicy=runtime). Start logs once which policy is in force.
//   - It touches process-wide runtime settings only; nothing replicated and
//     nothing on the apply path reads it, so apply stays deterministic.
//   - Its one goroutine is owned by the Tuner: Stop ends it, waits for it,
//     and puts back the GC percent found at Start.
package gctune

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// The trade-off: a collection costs CPU in proportion to the live heap, and
// the number of collections is allocation volume / headroom. A larger
// Fraction means fewer collections (less GC CPU, more throughput under
// writes) and a higher RSS (live × (1+Fraction) at the peak of a cycle);
// Floor keeps small trees from collecting every few MB, at a fixed cost of
// at most Floor bytes of RSS. Measured at 1 M znodes (README, Scale): 1/2
// cut RSS after the load by about 17% and the peak under writes with
// snapshots from about 1050 MB to 676 MB, for about +37% CPU per setData;
// 3/4 cut them by about 8% and to 680–760 MB, for about +13%. Since then a
// write allocates less (1.36 KB instead of 3.5 KB in the server) and a
// znode holds fewer pointers and objects, so collections cost less: with
// 1 KB values on a 300–400 MB tree (zkbench, shared machine, two runs
// each), setData's process CPU per request at 1/3 was within the noise of
// 1/2's (4.08 against 4.48 CPU-s per 100 k), at 1/4 about +40% (6.25).
const (
	// Floor is the least headroom above the live heap: 64 MiB.
	Floor = 64 << 20
	// FractionNum / FractionDen is the headroom as a fraction of the live
	// heap once that is above Floor / Fraction (192 MiB): 1/3, so RSS peaks
	// near 1.33× live instead of Go's 2×, for up to three times Go's GC
	// CPU on a large tree under a steady write load.
	FractionNum, FractionDen = 1, 3
	// MinPercent and MaxPercent bound the percent set: MaxPercent is reached
	// below Floor*100/MaxPercent (4 MiB) of live heap, where the goal stays
	// near Floor; MinPercent guards a Fraction edited to near zero.
	MinPercent, MaxPercent = 10, 1600
	// RestorePercent is the percent during the startup restore: the heap may
	// grow 5× the live heap of the last cycle, so at most a few collections
	// run while the tree is rebuilt.
	RestorePercent = 400
	// PollInterval is how often the goroutine looks for a completed cycle.
	PollInterval = 250 * time.Millisecond
)

// Percent is the GC percent that makes the heap goal live + max(Floor,
// live × Fraction), clamped to [MinPercent, MaxPercent], counting no roots.
// Start and the end of the restore set it; the loop, after each cycle, also
// counts the stacks and globals the runtime scanned (percentOf), as the
// runtime's goal does.
func Percent(live uint64) int { return percentOf(live, live) }

// percentOf: the runtime's goal is live + base*percent/100 with base = live
// + the stack and globals scanned last cycle.
func percentOf(live, base uint64) int {
	if base == 0 {
		return MaxPercent
	}
	head := max(uint64(Floor), live/FractionDen*FractionNum)
	p := (head*100 + base - 1) / base // rounded up: never less headroom than asked
	return int(min(max(p, MinPercent), MaxPercent))
}

// Options configure Start.
type Options struct {
	// Disabled leaves the collector to the runtime (zkraft.gcPolicy=runtime).
	Disabled bool
	// Getenv reads the environment; os.Getenv when nil (tests pass a fake).
	Getenv func(string) string
	// Interval overrides PollInterval when positive (tests).
	Interval time.Duration
}

// Decide reports whether the policy runs and, when it does not, why.
func Decide(o Options, getenv func(string) string) (on bool, why string) {
	switch {
	case o.Disabled:
		return false, "zkraft.gcPolicy=runtime"
	case getenv("GOGC") != "":
		return false, "GOGC set in the environment"
	case getenv("GOMEMLIMIT") != "":
		return false, "GOMEMLIMIT set in the environment"
	}
	return true, ""
}

// Tuner owns the policy's goroutine. When the policy is off, Restoring and
// Stop do nothing.
type Tuner struct {
	on       bool
	log      zerolog.Logger
	interval time.Duration
	stopC    chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	initial  int // the GC percent found at Start, put back by Stop

	mu        sync.Mutex // guards the fields below; a leaf
	restoring bool
	cycles    uint64 // GC cycles seen when the percent was last decided
	percent   int    // the percent last set
}

// Start logs the policy in force and, when it is the headroom policy, starts
// the goroutine that applies it. The caller owns the Tuner and calls Stop.
func Start(log zerolog.Logger, o Options) *Tuner {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	t := &Tuner{log: log, interval: o.Interval, stopC: make(chan struct{}), done: make(chan struct{})}
	if t.interval <= 0 {
		t.interval = PollInterval
	}
	on, why := Decide(o, getenv)
	if !on {
		log.Info().Str("policy", "runtime").Str("reason", why).Msg("gc policy: the Go runtime's settings")
		close(t.done)
		return t
	}
	t.on = true
	log.Info().Str("policy", "headroom").Int("floorMiB", Floor>>20).
		Str("fraction", fractionString()).Msg("gc policy: heap goal live + max(floor, live × fraction)")
	live, cycles, _, _ := readHeap()
	t.cycles = cycles
	t.percent = Percent(live)
	t.initial = debug.SetGCPercent(t.percent)
	go t.loop()
	return t
}

// Restoring raises the GC percent to RestorePercent until the returned
// function is called (once), then returns to the policy, judging the live
// heap by the heap's objects (live or not yet collected: an upper bound)
// until the next cycle measures it.
func (t *Tuner) Restoring() (end func()) {
	if !t.on {
		return func() {}
	}
	t.mu.Lock()
	t.restoring = true
	debug.SetGCPercent(RestorePercent)
	t.percent = RestorePercent
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			_, cycles, objects, _ := readHeap()
			t.mu.Lock()
			defer t.mu.Unlock()
			t.restoring = false
			t.cycles = cycles
			t.set(Percent(objects))
		})
	}
}

// Stop ends the goroutine, waits for it, and puts back the GC percent found
// at Start. Safe to call more than once.
func (t *Tuner) Stop() {
	t.stopOnce.Do(func() {
		if !t.on {
			return
		}
		close(t.stopC)
		<-t.done
		debug.SetGCPercent(t.initial)
	})
}

func (t *Tuner) loop() {
	defer close(t.done)
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-t.stopC:
			return
		case <-tick.C:
		}
		live, cycles, _, roots := readHeap()
		t.mu.Lock()
		if !t.restoring && cycles > t.cycles {
			t.cycles = cycles
			t.set(percentOf(live, live+roots))
		}
		t.mu.Unlock()
	}
}

// set applies percent if it differs from the last one set. t.mu held.
func (t *Tuner) set(percent int) {
	if percent == t.percent {
		return
	}
	debug.SetGCPercent(percent)
	t.percent = percent
	t.log.Debug().Int("gcPercent", percent).Msg("gc policy: percent set")
}

var samples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/gc/scan/stack:bytes"},
	{Name: "/gc/scan/globals:bytes"},
}

var samplesMu sync.Mutex // samples is shared by every Tuner

// readHeap returns the live heap the last GC cycle marked, the number of
// completed cycles, and the bytes in heap objects now (live or garbage).
func readHeap() (live, cycles, objects, roots uint64) {
	samplesMu.Lock()
	defer samplesMu.Unlock()
	metrics.Read(samples)
	get := func(s metrics.Sample) uint64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s.Value.Uint64()
	}
	roots = get(samples[3]) + get(samples[4])
	return get(samples[0]), get(samples[1]), get(samples[2]), roots
}

func fractionString() string {
	return strconv.Itoa(FractionNum) + "/" + strconv.Itoa(FractionDen)
}
