// Package freeport picks loopback TCP ports for tests and test tools that
// must name a port before the process that binds it starts.
//
// A port learned by listening on 127.0.0.1:0 and closing comes from the
// kernel's ephemeral range, the same range every outgoing connection takes
// its local port from: under load (real clients, ensembles, two test
// packages at once) another connection can take it before the server binds
// it, and the test fails with "address already in use". freeport picks
// from below the ephemeral range instead, at a random place so that test
// processes running at once rarely try the same port, checks that each port
// can be bound, and never hands out the same port twice in one process.
//
// Across processes a port handed out stays reserved for the life of the
// process that got it: Ports holds an flock(2) on a file named after the
// port (in $TMPDIR/zkraft-freeport) and never releases it; the kernel drops
// the lock when the process exits. Another test process skips a port whose
// file is locked, so a member that a test kills and restarts on the same
// port does not find it taken by a concurrent package in between.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// low is the first port considered; the last is just below the ephemeral
// range.
const low = 20000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Port returns one free loopback port.
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// Ports returns n distinct free loopback ports.
func Ports(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	high := ephemeralStart()
	span := high - low
	start := rand.IntN(span)
	out := make([]int, 0, n)
	for i := 0; i < span && len(out) < n; i++ {
		p := low + (start+i)%span
		if given[p] || !reserve(p) {
			continue
		}
		if !bindable(p) {
			continue // stays reserved by this process: harmless
		}
		given[p] = true
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("freeport: only %d of %d ports free in [%d, %d)", len(out), n, low, high)
	}
	return out, nil
}

// held keeps the reservation files open (and so their locks held) for
// the life of the process.
var held []*os.File

// reserve takes this process's lock on port p; false if another process
// holds it. Where locks cannot be taken at all (no writable temp dir),
// every port counts as reserved, as before reservations existed.
func reserve(p int) bool {
	dir := filepath.Join(os.TempDir(), "zkraft-freeport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	held = append(held, f)
	return true
}

// bindable reports whether 127.0.0.1:p can be listened on now.
func bindable(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range (32768
// when it cannot be read, Linux's default).
func ephemeralStart() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallback
	}
	v, err := strconv.Atoi(fields[0])
	if err != nil || v <= low+1000 {
		return fallback
	}
	return v
}
