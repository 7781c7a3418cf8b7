//go:build invariants

package server

// checksEveryWrite: with -tags invariants, znode checks the whole tree after
// every write, so building a tree write by write is quadratic; tests that
// build tens of thousands of znodes that way skip.
const checksEveryWrite = true
