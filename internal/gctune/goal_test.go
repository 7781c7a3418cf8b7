package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func readU(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

//go:noinline
func deep(n int, release <-chan struct{}, ready *sync.WaitGroup) byte {
	var pad [1024]byte
	pad[n%1024] = byte(n)
	if n == 0 {
		ready.Done()
		<-release
		return pad[0]
	}
	return deep(n-1, release, ready) + pad[n%1024]
}

// The heap goal is live + max(Floor, live/2) also with many goroutines: the
// runtime's goal is live + (live + stack scan + globals scan) × percent/100,
// so the percent is computed over all three (with live only, 2000
// goroutines of ~9 KiB of stack made the goal 328 MiB instead of 65).
func TestHeapGoalCountsStacks(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	release := make(chan struct{})
	var ready, exited sync.WaitGroup
	const n = 2000
	ready.Add(n)
	exited.Add(n)
	for i := 0; i < n; i++ {
		go func() { defer exited.Done(); deep(8, release, &ready) }() // ~9 KiB of used stack each
	}
	ready.Wait()
	defer func() { close(release); exited.Wait() }()

	tu := Start(zerolog.Nop(), Options{Getenv: func(string) string { return "" }, Interval: time.Millisecond})
	defer tu.Stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	live := readU("/gc/heap/live:bytes")
	stack := readU("/gc/scan/stack:bytes")
	globals := readU("/gc/scan/globals:bytes")
	goal := readU("/gc/heap/goal:bytes")
	pct := readU("/gc/gogc:percent")
	want := live + max(uint64(Floor), live/2)
	t.Logf("live %d MiB, stack scan %d MiB, globals scan %d KiB, percent %d, goal %d MiB, policy's goal %d MiB",
		live>>20, stack>>20, globals>>10, pct, goal>>20, want>>20)
	if goal > want+want/10 {
		t.Errorf("heap goal %d MiB, policy promises %d MiB (Go's default would be %d MiB)", goal>>20, want>>20, (2*live+stack+globals)>>20)
	}
}

var keepLive [][]byte

// The loop sets the percent from the live heap after a cycle (with 40 MiB
// live it differs from the one Start and the end of the restore set).
func TestLoopSetsPercentAfterCycle(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := Start(zerolog.Nop(), Options{Getenv: func(string) string { return "" }, Interval: time.Millisecond})
	defer tu.Stop()
	tu.Restoring()()
	for i := 0; i < 40; i++ {
		keepLive = append(keepLive, make([]byte, 1<<20))
	}
	defer func() { keepLive = nil }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		live, _, _, roots := readHeap()
		want := percentOf(live, live+roots)
		if p := gcPercent(); p == want && p != MaxPercent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d, want %d for a live heap of %d MiB", gcPercent(), want, live>>20)
		}
	}
}
