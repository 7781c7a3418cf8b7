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
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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
		if given[p] || !bindable(p) {
			continue
		}
		given[p] = true
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("freeport: only %d of %d ports free in [%d, %d)", len(out), n, low, high)
	}
	return out, nil
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
