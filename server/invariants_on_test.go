//go:build invariants

package server

import "testing"

// checksEveryWrite: with -tags invariants, znode checks the whole tree after
// every write, so building a tree write by write is quadratic; tests that
// build tens of thousands of znodes that way skip.
const checksEveryWrite = true

// skipAllocationBoundsUnderInvariants skips a test that bounds the
// allocations of the default build: with -tags invariants, znode.Check after
// every write allocates too (the CI's invariants step runs ./server again;
// the plain unit-test step runs these tests with their bounds).
func skipAllocationBoundsUnderInvariants(t *testing.T) {
	t.Helper()
	t.Skip("allocation bounds hold for the default build; -tags invariants adds znode.Check's allocations")
}
