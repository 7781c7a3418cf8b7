package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine started by them is
// still running after the last test: every Start must be matched by a Stop
// that waits for the goroutines it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
