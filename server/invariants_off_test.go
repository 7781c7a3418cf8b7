//go:build !invariants

package server

import "testing"

// checksEveryWrite: see invariants_on_test.go.
const checksEveryWrite = false

// skipAllocationBoundsUnderInvariants: see invariants_on_test.go; without
// the tag the bounds are checked.
func skipAllocationBoundsUnderInvariants(*testing.T) {}
