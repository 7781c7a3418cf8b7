package session

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBounds(t *testing.T) {
	tests := []struct {
		name                   string
		tickMs, minCfg, maxCfg int32
		wantMin, wantMax       int32
	}{
		{"zk defaults", 2000, 0, 0, 4000, 40000},
		{"negative config means default", 2000, -1, -1, 4000, 40000},
		{"configured min", 2000, 1000, 0, 1000, 40000},
		{"configured max", 2000, 0, 60000, 4000, 60000},
		{"both configured", 2000, 3000, 5000, 3000, 5000},
		{"small tick", 100, 0, 0, 200, 2000},
		{"overflow clamps", math.MaxInt32 / 4, 0, 0, math.MaxInt32 / 4 * 2, math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotMin, gotMax := Bounds(tt.tickMs, tt.minCfg, tt.maxCfg)
			require.Equal(t, tt.wantMin, gotMin, "min")
			require.Equal(t, tt.wantMax, gotMax, "max")
		})
	}
}

func TestCheckBounds(t *testing.T) {
	require.NoError(t, CheckBounds(4000, 40000))
	require.NoError(t, CheckBounds(4000, 4000))
	require.Error(t, CheckBounds(5000, 4000))
	require.Error(t, CheckBounds(0, 4000))
	require.Error(t, CheckBounds(4000, -1))
}

func TestNegotiateTimeout(t *testing.T) {
	minMs, maxMs := Bounds(2000, 0, 0)
	tests := []struct {
		requested, want int32
	}{
		// The four values observed against ZooKeeper 3.8 (tick 2000).
		{100, 4000},
		{1_000_000, 40000},
		{0, 4000},
		{-5, 4000},
		{math.MinInt32, 4000},
		{math.MaxInt32, 40000},
		{3999, 4000},
		{4000, 4000},
		{4001, 4001},
		{30000, 30000},
		{40000, 40000},
		{40001, 40000},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, NegotiateTimeout(tt.requested, minMs, maxMs), "NegotiateTimeout(%d)", tt.requested)
	}
	// Inverted bounds: max wins, as in ZooKeeper.
	require.Equal(t, int32(3000), NegotiateTimeout(0, 5000, 3000))
}
