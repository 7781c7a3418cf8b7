//go:build unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per operation: on a shared machine that counts what an
// operation costs, not how long it waited for a CPU. It has no state.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user and system) the process has used, all
// its threads together, or 0 where the system cannot say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
