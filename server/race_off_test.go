//go:build !race

package server

// sessionChurnBytes bounds the bytes one session allocates in
// TestSessionChurnAllocations (measured: 17 KiB; 26 KiB with a request ring
// of maxInFlight slots, an encoder and a logger context per connection).
// See race_on_test.go for the bound under -race.
const sessionChurnBytes = 20 << 10
