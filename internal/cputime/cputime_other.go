//go:build !unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per operation. It has no state.
package cputime

import "time"

// Process is not measured here: it returns 0 (see cputime_unix.go).
func Process() time.Duration { return 0 }
