//go:build race

package server

// sessionChurnBytes bounds TestSessionChurnAllocations under -race. The race
// detector's sync.Pool drops a quarter of what is put back, so sessions
// allocate 64 KiB connection buffers at random (measured: 47 to 60 KiB per
// session); the bound only catches buffers made for every connection again.
const sessionChurnBytes = 128 << 10

// sessionChurnObjects bounds the heap objects per session under -race, where
// the pooled connection buffers are sometimes made again (see above).
const sessionChurnObjects = 200

// newConnBytes bounds TestNewConnAllocatesLittle under -race: the race
// detector's sync.Pool drops a quarter of what is put back, so newConn
// makes a 64 KiB write buffer about one time in four (measured: 15 to 18
// KiB per connection); the bound only catches a buffer or a ring of
// maxInFlight slots made for every connection again.
const newConnBytes = 64 << 10

// snapshotStreamBytes bounds TestFreezeSnapshotStreamAllocatesLittle under
// -race (measured: 215 KiB at 100k znodes); the payload, 20 MB, would
// be far above it.
const snapshotStreamBytes = 1 << 20

// writePathAllocs and writePathBytes bound TestWritePathAllocations under
// -race (measured as without: 10 allocations and 1.3 KB per setData); a
// little more room, as the race detector's sync.Pool drops a quarter of
// what is put back.
const (
	writePathAllocs = 24
	writePathBytes  = 3072
)

// lockPathAllocs and lockPathBytes bound TestLockPathAllocations under
// -race (measured: 31 allocations, 3.0 KB per lock operation), with the
// room writePathAllocs has for sync.Pool's drops.
const (
	lockPathAllocs = 44
	lockPathBytes  = 4608
)
