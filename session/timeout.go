package session

import (
	"fmt"
	"math"
)

// Bounds returns the session timeout range [minMs, maxMs] the server
// negotiates into. ZooKeeper's defaults are 2*tickMs and 20*tickMs; a
// configured value overrides its default when it is > 0. Products that would
// overflow int32 are clamped to math.MaxInt32.
//
// Bounds does not check that minMs <= maxMs; ZooKeeper refuses to start
// otherwise, and CheckBounds is the matching check for configuration code.
func Bounds(tickMs, minCfgMs, maxCfgMs int32) (minMs, maxMs int32) {
	minMs, maxMs = mulClamp(tickMs, 2), mulClamp(tickMs, 20)
	if minCfgMs > 0 {
		minMs = minCfgMs
	}
	if maxCfgMs > 0 {
		maxMs = maxCfgMs
	}
	return minMs, maxMs
}

// CheckBounds reports whether [minMs, maxMs] is a usable timeout range:
// both positive and minMs <= maxMs.
func CheckBounds(minMs, maxMs int32) error {
	if minMs <= 0 || maxMs <= 0 {
		return fmt.Errorf("session: timeout bounds must be positive (min %d ms, max %d ms)", minMs, maxMs)
	}
	if minMs > maxMs {
		return fmt.Errorf("session: min timeout %d ms is larger than max timeout %d ms", minMs, maxMs)
	}
	return nil
}

// NegotiateTimeout clamps the timeout a client asked for (ms) into
// [minMs, maxMs], as ZooKeeper does in its connect handshake: anything below
// minMs, including 0 and negative values, becomes minMs, anything above maxMs
// becomes maxMs. With tick 2000 and default bounds: 100 -> 4000,
// 10^6 -> 40000, 0 -> 4000, -5 -> 4000.
//
// If the bounds are inverted (minMs > maxMs), maxMs wins, as in ZooKeeper,
// which applies the minimum first and the maximum second.
func NegotiateTimeout(requestedMs, minMs, maxMs int32) int32 {
	t := requestedMs
	if t < minMs {
		t = minMs
	}
	if t > maxMs {
		t = maxMs
	}
	return t
}

func mulClamp(v, k int32) int32 {
	p := int64(v) * int64(k)
	switch {
	case p > math.MaxInt32:
		return math.MaxInt32
	case p < math.MinInt32:
		return math.MinInt32
	}
	return int32(p)
}
