//go:build unix

package znode

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// all its threads together: on a shared machine it counts what a
// benchmark costs, not how long it waited for a CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
