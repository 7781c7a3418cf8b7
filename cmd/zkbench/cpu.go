package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU accounting of a measured round, so that a ratio of rates can be read
// beside where the machine's CPU went: the servers' processes (every member
// of an ensemble; for ZooKeeper the java process), zkbench's own process
// (its clients, against either server alike) and the whole machine. A
// server's user + system time includes the kernel's work done on its behalf
// (loopback TCP, the log's syncs), which is most of it for small requests.

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's utime and stime:
// 100 on every Linux architecture (the kernel scales its internal HZ to it).
const clockTicks = 100

// cpuUse is CPU time: the counters as readCPU reads them (since boot or
// process start), or what a round used (since: the difference of two).
type cpuUse struct {
	server time.Duration // user + system of the server processes
	client time.Duration // user + system of this process
	busy   uint64        // /proc/stat jiffies not idle or waiting for I/O
	total  uint64        // /proc/stat jiffies, all
}

func (u *cpuUse) add(o cpuUse) {
	u.server += o.server
	u.client += o.client
	u.busy += o.busy
	u.total += o.total
}

// since is the CPU used between an earlier reading and s.
func (s cpuUse) since(earlier cpuUse) cpuUse {
	return cpuUse{
		server: s.server - earlier.server,
		client: s.client - earlier.client,
		busy:   s.busy - earlier.busy,
		total:  s.total - earlier.total,
	}
}

// readCPU reads the counters for the server processes pids.
func readCPU(pids []int) (cpuUse, error) {
	var s cpuUse
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return cpuUse{}, fmt.Errorf("read server cpu: %w", err)
		}
		ticks, err := parseProcStatTicks(string(b))
		if err != nil {
			return cpuUse{}, fmt.Errorf("pid %d: %w", pid, err)
		}
		s.server += time.Duration(ticks) * time.Second / clockTicks
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuUse{}, fmt.Errorf("getrusage: %w", err)
	}
	s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuUse{}, fmt.Errorf("read machine cpu: %w", err)
	}
	if s.busy, s.total, err = parseMachineCPU(string(b)); err != nil {
		return cpuUse{}, err
	}
	return s, nil
}

// parseProcStatTicks returns utime + stime (clock ticks) from the text of
// /proc/<pid>/stat. The command name, field 2, is in parentheses and may
// hold spaces and parentheses itself, so the fields are counted from the
// last ')': state is field 3, utime 14 and stime 15.
func parseProcStatTicks(text string) (uint64, error) {
	i := strings.LastIndexByte(text, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat: no ')' after the command name in %q", text)
	}
	f := strings.Fields(text[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var sum uint64
	for _, field := range f[11:13] { // fields 14 and 15
		n, err := strconv.ParseUint(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat: utime/stime: %w", err)
		}
		sum += n
	}
	return sum, nil
}

// parseMachineCPU returns the busy and total jiffies of /proc/stat's first
// ("cpu") line: user nice system idle iowait irq softirq steal (guest time
// is already counted in user and nice). Idle and iowait are not busy.
func parseMachineCPU(text string) (busy, total uint64, err error) {
	line, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("proc stat: first line %q, want \"cpu\" and 8 counters", line)
	}
	for i, field := range f[1:9] {
		n, err := strconv.ParseUint(field, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("proc stat: cpu counter %d: %w", i+1, err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// perOp is d per operation in microseconds ("-" for no operations).
func perOp(d time.Duration, ops int64) string {
	if ops <= 0 || d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d.Microseconds())/float64(ops))
}

// busyShare is the machine's busy share of u ("-" without a reading).
func busyShare(u cpuUse) string {
	if u.total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(u.busy)/float64(u.total))
}

// cpuRoundNote is the CPU part of a round's line.
func cpuRoundNote(u cpuUse, ops int64, d time.Duration) string {
	if u.total == 0 {
		return ""
	}
	return fmt.Sprintf("; cpu a op: server %s (%.2f CPUs), client %s; machine %s busy",
		perOp(u.server, ops), u.server.Seconds()/d.Seconds(), perOp(u.client, ops), busyShare(u))
}

// cpuRow is one workload's line of cpuTable.
type cpuRow struct {
	name string
	z, a *result // nil: target not measured
}

// cpuTable is the table of CPU time per operation over all rounds, both
// servers; empty if no CPU was read.
func cpuTable(rows []cpuRow) string {
	var b strings.Builder
	for _, r := range rows {
		z, a := r.z, r.a
		if z == nil {
			z = &result{}
		}
		if a == nil {
			a = &result{}
		}
		if z.cpu.total == 0 && a.cpu.total == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nCPU a operation over the rounds: server = user + system time of its processes (every member), " +
				"client = zkbench's own; machine = busy share of all CPUs\n\n" +
				"| workload | zkraft server | ZooKeeper server | ZooKeeper / zkraft | zkraft client | ZooKeeper client | machine busy, zkraft / ZooKeeper |\n" +
				"|---|---|---|---|---|---|---|\n")
		}
		ratio := "-"
		if z.ops > 0 && a.ops > 0 && z.cpu.server > 0 && a.cpu.server > 0 {
			zs := float64(z.cpu.server) / float64(z.ops)
			as := float64(a.cpu.server) / float64(a.ops)
			ratio = fmt.Sprintf("%.2fx", as/zs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s / %s |\n", r.name,
			perOp(z.cpu.server, z.ops), perOp(a.cpu.server, a.ops), ratio,
			perOp(z.cpu.client, z.ops), perOp(a.cpu.client, a.ops), busyShare(z.cpu), busyShare(a.cpu))
	}
	return b.String()
}
