package consensus

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine started by them is
// still running after the last test: every node and transport a test starts
// must be stopped, and Stop must wait for the goroutines it started (the
// WAL's spare segment goroutine included).
//
// Stores rotate WAL segments at 1 MiB unless a test sets another size:
// every new store zero-fills its first segment, and 64 MiB of zeros per
// store would dominate the package's I/O. BenchmarkDiskStoreWrite uses the
// production size.
func TestMain(m *testing.M) {
	walSegmentSize = 1 << 20
	goleak.VerifyTestMain(m)
}
