package consensus

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine started by them is
// still running after the last test: every node and transport a test starts
// must be stopped, and Stop must wait for the goroutines it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
