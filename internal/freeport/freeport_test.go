package freeport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestPortsAreDistinctBindableAndBelowEphemeral(t *testing.T) {
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	more, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, more...) {
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if p < low || p >= ephemeralStart() {
			t.Fatalf("port %d outside [%d, %d)", p, low, ephemeralStart())
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", p, err)
		}
		ln.Close()
	}
}

func TestPortSkipsABoundPort(t *testing.T) {
	p, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if bindable(p) {
		t.Fatalf("port %d reported bindable while listened on", p)
	}
}

// TestPortReservedByAnotherProcessIsSkipped: a port whose reservation file
// another open file (as another process would) has locked is not handed
// out, and every port handed out stays locked by this process.
func TestPortReservedByAnotherProcessIsSkipped(t *testing.T) {
	lockFrom := func(p int) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "zkraft-freeport", strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	ports, err := Ports(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if f, err := lockFrom(p); err == nil {
			f.Close()
			t.Fatalf("port %d handed out but not reserved", p)
		}
	}
	// A port some other holder locked is refused, and free once released.
	var other *os.File
	var p int
	for p = low + 7; p < ephemeralStart(); p++ {
		if given[p] {
			continue
		}
		if other, err = lockFrom(p); err == nil {
			break
		}
	}
	if other == nil {
		t.Fatal("no port to lock")
	}
	if reserve(p) {
		t.Fatalf("port %d reserved although another holder has it", p)
	}
	other.Close()
	if !reserve(p) {
		t.Fatalf("port %d not reservable after the other holder let go", p)
	}
}
