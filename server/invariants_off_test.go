//go:build !invariants

package server

// checksEveryWrite: see invariants_on_test.go.
const checksEveryWrite = false
