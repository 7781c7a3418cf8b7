package session

import (
	"fmt"
	"math"
	"sync/atomic"
)

const (
	// lowMask selects bits 55..0 of an id: the 40-bit time part and the
	// 16-bit counter. The server id byte above it never changes.
	lowMask = 1<<56 - 1
	// timeMask selects the low 40 bits of the millisecond clock.
	timeMask = 1<<40 - 1
	// containerMarker is ZooKeeper's ephemeralOwner value for containers; it
	// must never be a session id.
	containerMarker = math.MinInt64 // 0x8000000000000000
)

// IDGenerator makes session ids with ZooKeeper's layout (SessionTrackerImpl):
//
//	bits 63..56  server id (1..254)
//	bits 55..16  low 40 bits of a millisecond clock read at construction
//	bits 15..0   counter, +1 per id
//
// The 56 low bits are one counter, so when the 16-bit counter wraps the carry
// bumps the time part and ids keep increasing. The carry never reaches the
// server id byte (the low 56 bits wrap on their own, after 2^56 ids).
//
// Guarantees: an id is never 0 (the server id is >= 1), never has first byte
// 0xFF (ZooKeeper's TTL marker; the server id is <= 254), and is never
// 0x8000000000000000 (the container marker; skipped if server id 128 would
// produce it). Ids from one generator are unique and, in the order Next
// returns them, increasing (as int64, since the sign bit is fixed).
//
// Uniqueness across restarts of the same server relies on the clock: a
// generator constructed at a later millisecond starts above every id of an
// earlier one as long as the earlier one made fewer than 65536 ids per
// elapsed millisecond. Generators with different server ids never collide.
//
// IDGenerator is safe for concurrent use.
type IDGenerator struct {
	high uint64        // server id << 56
	low  atomic.Uint64 // next value of bits 55..0 (masked on use)
}

// NewIDGenerator returns a generator for server serverID, whose time part is
// the low 40 bits of nowMs (milliseconds since the Unix epoch in
// production). It panics if serverID is 0 or 255: such ids could be 0 or
// look like TTL markers. Configuration code should reject them first.
func NewIDGenerator(serverID uint8, nowMs int64) *IDGenerator {
	if serverID == 0 || serverID == 0xFF {
		panic(fmt.Sprintf("session: server id %d out of range 1..254", serverID))
	}
	g := &IDGenerator{high: uint64(serverID) << 56}
	g.low.Store((uint64(nowMs) & timeMask) << 16)
	return g
}

// Next returns a new session id.
func (g *IDGenerator) Next() int64 {
	for {
		low := (g.low.Add(1) - 1) & lowMask
		id := int64(g.high | low)
		if id != containerMarker {
			return id
		}
	}
}
