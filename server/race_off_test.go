//go:build !race

package server

// sessionChurnBytes bounds the bytes one session allocates in
// TestSessionChurnAllocations (measured: 17 to 18 KiB; 26 to 27 KiB with a request ring
// of maxInFlight slots, an encoder and a logger context per connection).
// See race_on_test.go for the bound under -race.
const sessionChurnBytes = 24 << 10

// sessionChurnObjects bounds the heap objects one session allocates in
// TestSessionChurnAllocations, server and raw client (measured: 179; 184
// while the handshake's proposeAndWait made a context with a timeout for
// each session, and the closeSession's wait a timer of its own).
const sessionChurnObjects = 182

// newConnBytes bounds TestNewConnAllocatesLittle (measured: 1354 bytes).
const newConnBytes = 1536

// snapshotStreamBytes bounds TestFreezeSnapshotStreamAllocatesLittle: the
// encoder's fixed buffers (measured: 215 KiB at 100k znodes); the
// payload, 20 MB, would be far above it.
const snapshotStreamBytes = 1 << 20

// writePathAllocs and writePathBytes bound TestWritePathAllocations
// (measured: 11 to 13 allocations and 1.3 to 1.5 KB per setData; 52 and
// 3.5 KB before the write path was cut down).
const (
	writePathAllocs = 20
	writePathBytes  = 2304
)

// lockPathAllocs and lockPathBytes bound TestLockPathAllocations, per lock
// operation (three requests; measured: 30 allocations, 2.9 KB; 41 and 3.4 KB
// before sequential names, ACLs, node reads, listings and ephemeral sets
// were cut down).
const (
	lockPathAllocs = 40
	lockPathBytes  = 4096
)
