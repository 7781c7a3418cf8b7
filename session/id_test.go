package session

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const testNowMs = 1_767_225_600_000 // 2026-01-01T00:00:00Z

func TestIDLayout(t *testing.T) {
	g := NewIDGenerator(1, testNowMs)
	id := g.Next()
	require.Equal(t, uint64(1), uint64(id)>>56, "first byte is the server id")
	require.Equal(t, uint64(testNowMs)&(1<<40-1), uint64(id)>>16&(1<<40-1), "bits 55..16 are the low 40 bits of the clock")
	require.Equal(t, uint64(0), uint64(id)&0xFFFF, "counter starts at 0")
	require.Equal(t, id+1, g.Next(), "counter +1 per id")

	for _, sid := range []uint8{1, 2, 127, 128, 200, 254} {
		id := NewIDGenerator(sid, testNowMs).Next()
		require.Equal(t, sid, uint8(uint64(id)>>56), "server id %d", sid)
	}
}

func TestIDGeneratorRejectsServerID(t *testing.T) {
	require.Panics(t, func() { NewIDGenerator(0, testNowMs) })
	require.Panics(t, func() { NewIDGenerator(255, testNowMs) })
}

// TestIDUniqueAcrossRestart covers a restart of the same server: the second
// generator starts at a later millisecond than the first and the first
// wrapped its 16-bit counter (1e5 > 65536 ids), which bumped its time part.
func TestIDUniqueAcrossRestart(t *testing.T) {
	const n = 100_000
	seen := make(map[int64]struct{}, 2*n)
	for _, nowMs := range []int64{testNowMs, testNowMs + 2} {
		g := NewIDGenerator(7, nowMs)
		prev := int64(0)
		for i := range n {
			id := g.Next()
			if i > 0 {
				require.Greater(t, id, prev, "ids increase")
			}
			prev = id
			checkID(t, id, 7)
			_, dup := seen[id]
			require.False(t, dup, "duplicate id %#x", id)
			seen[id] = struct{}{}
		}
	}
	require.Len(t, seen, 2*n)
}

func TestIDCounterWrapBumpsTime(t *testing.T) {
	g := NewIDGenerator(3, testNowMs)
	first := g.Next()
	for range 0xFFFF - 1 {
		g.Next()
	}
	last := g.Next()
	require.Equal(t, uint64(0xFFFF), uint64(last)&0xFFFF)
	wrapped := g.Next()
	require.Equal(t, uint64(0), uint64(wrapped)&0xFFFF, "counter wrapped")
	require.Equal(t, uint64(first)>>16+1, uint64(wrapped)>>16, "time part bumped by one")
	require.Greater(t, wrapped, last)
}

func TestIDTimePartWrapKeepsServerID(t *testing.T) {
	// The time part and counter are at their maximum: the next carry must
	// wrap within the low 56 bits, never into the server id byte.
	g := NewIDGenerator(254, 1<<40-1)
	for range 0xFFFF {
		g.Next()
	}
	last := g.Next()
	require.Equal(t, uint64(254)<<56|(1<<56-1), uint64(last))
	next := g.Next()
	require.Equal(t, uint64(254)<<56, uint64(next))
	checkID(t, next, 254)
}

func TestIDSkipsContainerMarker(t *testing.T) {
	// Server id 128 with a clock whose low 40 bits are 0 would start at
	// exactly 0x8000000000000000.
	g := NewIDGenerator(128, 1<<40)
	id := g.Next()
	require.NotEqual(t, int64(containerMarker), id)
	require.Equal(t, uint64(0x8000000000000001), uint64(id))
	checkID(t, id, 128)
}

func TestIDGeneratorConcurrent(t *testing.T) {
	g := NewIDGenerator(9, testNowMs)
	const workers, per = 8, 2000
	results := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range per {
				results[w] = append(results[w], g.Next())
			}
		})
	}
	wg.Wait()
	seen := make(map[int64]struct{}, workers*per)
	for _, ids := range results {
		for i, id := range ids {
			if i > 0 {
				require.Greater(t, id, ids[i-1], "each goroutine sees increasing ids")
			}
			seen[id] = struct{}{}
		}
	}
	require.Len(t, seen, workers*per)
}

func checkID(t *testing.T, id int64, serverID uint8) {
	t.Helper()
	require.NotZero(t, id)
	require.NotEqual(t, int64(containerMarker), id)
	require.NotEqual(t, uint8(0xFF), uint8(uint64(id)>>56))
	require.Equal(t, serverID, uint8(uint64(id)>>56))
}
