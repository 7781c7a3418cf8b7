// Package procs sets how many Go processors (GOMAXPROCS) a zkraft server
// runs with: the runtime's default (the CPUs it may use, cgroup limits
// included) plus Spare.
//
// Why more Ps than CPUs: a server's goroutines spend much of their time in
// blocking system calls (the log's fdatasync, a socket write per reply, a
// read per request). A goroutine in a system call keeps its P until it
// returns or until the runtime's monitor takes the P back, which it does only
// on its next wake-up (20 µs at the soonest, up to 10 ms when it has backed
// off). With as many Ps as CPUs, one fdatasync on a 2-CPU machine leaves
// the other goroutines half the server's processors for its whole length.
// Spare Ps let runnable goroutines (a reply's writer, the next proposal)
// run meanwhile, and leave the interleaving to the kernel (a JVM server
// has no such cap on the threads it runs at once). Measured with
// cmd/zkbench, zkraft alone, alternating runs on a 2-CPU machine: quiet,
// sessions +15-17% per second and setData +3-5%; with other work on the
// machine, setData +24-31%, lock +12-27%, sessions -2 to +20%; 3 members
// +2-7% (README, Performance).
//
// Invariants:
//   - The user's choice wins: with GOMAXPROCS in the environment nothing is
//     changed.
//   - It touches a process-wide runtime setting only; nothing replicated
//     and nothing on the apply path reads it.
package procs

import (
	"os"
	"runtime"
)

// Spare is how many Ps the server runs beyond the runtime's default.
const Spare = 2

// Choose returns the GOMAXPROCS to set, and whether to set it, given the
// environment's GOMAXPROCS (env, "" if unset) and the runtime's default.
func Choose(env string, defaultProcs int) (int, bool) {
	if env != "" {
		return defaultProcs, false
	}
	return defaultProcs + Spare, true
}

// Tune applies Choose to this process and returns the GOMAXPROCS in force
// and whether Tune set it. Setting it explicitly ends the runtime's own
// updates of the default when the CPU limit changes (Go 1.25 and later);
// the server sets it once, at start.
func Tune() (int, bool) {
	n, set := Choose(os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0))
	if set {
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0), set
}
