package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		live uint64
		want int
	}{
		{"no cycle yet", 0, MaxPercent},
		{"tiny heap: clamped to MaxPercent", 1 * mib, MaxPercent},
		{"4 MiB: the floor is exactly MaxPercent", 4 * mib, MaxPercent},
		{"8 MiB: floor 64 MiB", 8 * mib, 800},
		{"32 MiB: floor", 32 * mib, 200},
		{"100 MiB: floor, rounded up", 100 * mib, 64},
		{"128 MiB: floor", 128 * mib, 50},
		{"192 MiB: floor and fraction meet", 192 * mib, 34},
		{"350 MiB: fraction, rounded up", 350 * mib, 34},
		{"4 GiB: fraction", 4096 * mib, 34},
		{"floor, odd byte count rounds up", 96*mib + 1, 67},
		{"fraction, odd byte count", 384*mib + 1, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live); got != tc.want {
				t.Errorf("Percent(%d) = %d, want %d", tc.live, got, tc.want)
			}
			if got := Percent(tc.live); got < MinPercent || got > MaxPercent {
				t.Errorf("Percent(%d) = %d, outside [%d, %d]", tc.live, got, MinPercent, MaxPercent)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		env      map[string]string
		wantOn   bool
		wantWhy  string
	}{
		{"default", false, nil, true, ""},
		{"GOGC set", false, map[string]string{"GOGC": "100"}, false, "GOGC set in the environment"},
		{"GOGC off", false, map[string]string{"GOGC": "off"}, false, "GOGC set in the environment"},
		{"GOMEMLIMIT set", false, map[string]string{"GOMEMLIMIT": "600MiB"}, false, "GOMEMLIMIT set in the environment"},
		{"empty GOGC is the runtime default", false, map[string]string{"GOGC": ""}, true, ""},
		{"config option", true, nil, false, "zkraft.gcPolicy=runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, why := Decide(Options{Disabled: tc.disabled}, func(k string) string { return tc.env[k] })
			if on != tc.wantOn || why != tc.wantWhy {
				t.Errorf("Decide = %v, %q; want %v, %q", on, why, tc.wantOn, tc.wantWhy)
			}
		})
	}
}

// gcPercent reads the GC percent in force without setting it (setting it
// here could undo the Tuner's own write).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// An override in the environment (or the config option) leaves the GC
// percent alone, also through Restoring, and starts no goroutine (goleak).
func TestOverrideLeavesRuntimeAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(137))
	for _, o := range []Options{
		{Getenv: func(k string) string { return map[string]string{"GOGC": "137"}[k] }},
		{Getenv: func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB"}[k] }},
		{Disabled: true, Getenv: func(string) string { return "" }},
	} {
		tu := Start(zerolog.Nop(), o)
		end := tu.Restoring()
		if p := gcPercent(); p != 137 {
			t.Errorf("%+v: GC percent %d during restore, want 137 (the runtime's)", o, p)
		}
		end()
		runtime.GC()
		tu.Stop()
		if p := gcPercent(); p != 137 {
			t.Errorf("%+v: GC percent %d, want 137 (the runtime's)", o, p)
		}
	}
}

// With no override the policy sets the percent from the live heap after a
// cycle, RestorePercent while restoring, and Stop ends the goroutine (goleak
// checks at exit and here) and puts back the percent found at Start.
func TestPolicyAppliesAndStops(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := Start(zerolog.Nop(), Options{Getenv: func(string) string { return "" }, Interval: time.Millisecond})
	end := tu.Restoring()
	if p := gcPercent(); p != RestorePercent {
		t.Errorf("GC percent %d while restoring, want %d", p, RestorePercent)
	}
	runtime.GC() // a cycle during the restore: the loop must not act on it
	time.Sleep(20 * time.Millisecond)
	if p := gcPercent(); p != RestorePercent {
		t.Errorf("GC percent %d after a cycle while restoring, want %d", p, RestorePercent)
	}
	end()
	// A small test heap: the floor dominates. Wait (no deadline: the test
	// binary's timeout bounds it) until the loop saw a cycle.
	runtime.GC()
	live, _, _, _ := readHeap()
	for gcPercent() != Percent(live) {
		runtime.GC()
		live, _, _, _ = readHeap()
		time.Sleep(time.Millisecond)
	}
	tu.Stop()
	if err := goleak.Find(); err != nil {
		t.Errorf("goroutine left after Stop: %v", err)
	}
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d after Stop, want 100 (found at Start)", p)
	}
	tu.Stop() // a second Stop is harmless
}
