package memnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns a connection from host a to a listener on host b: the
// dialer's end and the accepted end.
func pair(t *testing.T, n *Network, a, b string) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := n.Host(b).Listen("tcp", b+":0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	c, err := n.Host(a).DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
	return c, s
}

// readN reads exactly n bytes from c within a second.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// held checks that nothing is readable on c for a short while.
func held(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	var b [1]byte
	if k, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read across a cut link: %d bytes, %v; want a deadline error", k, err)
	}
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

func TestNetwork(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, n *Network)
	}{
		{"bytes flow both ways, addresses name the hosts", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "c1", "m1")
			write(t, c, "ping")
			if got := readN(t, s, 4); string(got) != "ping" {
				t.Fatalf("server read %q", got)
			}
			write(t, s, "pong")
			if got := readN(t, c, 4); string(got) != "pong" {
				t.Fatalf("client read %q", got)
			}
			if h, _, _ := net.SplitHostPort(s.RemoteAddr().String()); h != "c1" {
				t.Fatalf("remote address %s, want host c1", s.RemoteAddr())
			}
			if c.RemoteAddr().String() != s.LocalAddr().String() {
				t.Fatalf("addresses do not match: %s / %s", c.RemoteAddr(), s.LocalAddr())
			}
		}},
		{"dial to an address nobody listens on is refused", func(t *testing.T, n *Network) {
			_, err := n.Host("c1").DialContext(context.Background(), "tcp", "m1:2181")
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("dial: %v, want ErrRefused", err)
			}
		}},
		{"one-way cut holds bytes until healed, the other way flows", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "m1", "m2")
			n.Cut("m1", "m2")
			write(t, c, "ab")
			write(t, c, "cd")
			held(t, s)
			write(t, s, "back")
			if got := readN(t, c, 4); string(got) != "back" {
				t.Fatalf("read %q", got)
			}
			n.Heal("m1", "m2")
			if got := readN(t, s, 4); string(got) != "abcd" {
				t.Fatalf("after heal read %q, want the held bytes in order", got)
			}
		}},
		{"partition holds both ways, HealAll ends it", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "m1", "m2")
			n.Partition("m1", "m2")
			write(t, c, "x")
			write(t, s, "y")
			held(t, s)
			held(t, c)
			n.HealAll()
			if got := readN(t, s, 1); string(got) != "x" {
				t.Fatalf("read %q", got)
			}
			if got := readN(t, c, 1); string(got) != "y" {
				t.Fatalf("read %q", got)
			}
		}},
		{"close: the peer reads what was written, then EOF", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "c1", "m1")
			write(t, c, "last")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, s, 4); string(got) != "last" {
				t.Fatalf("read %q", got)
			}
			if _, err := s.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("read after the peer closed: %v, want EOF", err)
			}
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read on a closed end: %v, want net.ErrClosed", err)
			}
		}},
		{"a close is held by a cut like the bytes before it", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "m1", "m2")
			n.Cut("m1", "m2")
			write(t, c, "z")
			_ = c.Close()
			held(t, s)
			n.Heal("m1", "m2")
			if got := readN(t, s, 1); string(got) != "z" {
				t.Fatalf("read %q", got)
			}
			if _, err := s.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("read: %v, want EOF", err)
			}
		}},
		{"CloseHost closes every connection end of the host, not its listeners", func(t *testing.T, n *Network) {
			c1, s1 := pair(t, n, "c1", "m1")
			c2, s2 := pair(t, n, "m2", "m1")
			c3, s3 := pair(t, n, "m2", "m3") // not m1's
			if got := n.CloseHost("m1"); got != 2 {
				t.Fatalf("closed %d ends, want 2", got)
			}
			for _, s := range []net.Conn{s1, s2} {
				if _, err := s.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
					t.Fatalf("m1's end: %v, want net.ErrClosed", err)
				}
			}
			for _, c := range []net.Conn{c1, c2} {
				if _, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("peer of m1: %v, want EOF", err)
				}
			}
			write(t, c3, "ok")
			if got := readN(t, s3, 2); string(got) != "ok" {
				t.Fatalf("read %q", got)
			}
			ln, err := n.Host("m1").Listen("tcp", ":7000")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c, err := n.Host("c1").DialContext(context.Background(), "tcp", "m1:7000")
			if err != nil {
				t.Fatalf("dial m1 after CloseHost: %v", err)
			}
			_ = c.Close()
		}},
		{"closing a listener ends a blocked Accept with net.ErrClosed", func(t *testing.T, n *Network) {
			ln, err := n.Host("m1").Listen("tcp", "m1:2181")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := ln.Accept()
				done <- err
			}()
			time.Sleep(10 * time.Millisecond)
			_ = ln.Close()
			if err := <-done; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("accept: %v, want net.ErrClosed", err)
			}
			if _, err := n.Host("c1").DialContext(context.Background(), "tcp", "m1:2181"); !errors.Is(err, ErrRefused) {
				t.Fatalf("dial a closed listener: %v, want ErrRefused", err)
			}
		}},
		{"a full buffer blocks the writer until a deadline in the past ends it", func(t *testing.T, n *Network) {
			c, _ := pair(t, n, "m1", "m2")
			n.Cut("m1", "m2")
			done := make(chan error, 1)
			go func() {
				_, err := c.Write(make([]byte, BufferSize+1))
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("write beyond the buffer returned: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			_ = c.SetDeadline(time.Now())
			if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write: %v, want a deadline error", err)
			}
		}},
		{"a reader makes room for a blocked writer", func(t *testing.T, n *Network) {
			c, s := pair(t, n, "m1", "m2")
			data := bytes.Repeat([]byte("0123456789"), BufferSize/5)
			done := make(chan error, 1)
			go func() {
				_, err := c.Write(data)
				done <- err
			}()
			got := readN(t, s, len(data))
			if err := <-done; err != nil {
				t.Fatalf("write: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("bytes differ")
			}
		}},
		{"listen addresses", func(t *testing.T, n *Network) {
			h := n.Host("m1")
			if _, err := h.Listen("tcp", "m2:1"); err == nil {
				t.Fatal("m1 listened on m2's address")
			}
			ln, err := h.Listen("tcp", "0.0.0.0:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if a := ln.Addr().(Addr); a.Host != "m1" || a.Port == 0 {
				t.Fatalf("address %v", a)
			}
			if _, err := h.Listen("tcp", ln.Addr().String()); err == nil {
				t.Fatal("two listeners on one address")
			}
		}},
		{"a canceled dial fails", func(t *testing.T, n *Network) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := n.Host("c1").DialContext(ctx, "tcp", "m1:1"); !errors.Is(err, context.Canceled) {
				t.Fatalf("dial: %v, want context.Canceled", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, New()) })
	}
}

// TestWriteAfterPeerClose: writes after the peer closed its end behave as
// TCP's. The peer's close and the reset its end answers bytes with cross
// no cut: the writer's writes are accepted until the reset comes back over
// a healed link, and without a cut the first write after the close still
// succeeds (it provokes the reset that fails the next).
func TestWriteAfterPeerClose(t *testing.T) {
	tests := []struct {
		name string
		cut  func(n *Network) // between the dialer m1 and the closing m2
		// accepted is how many writes succeed after m2's close while cut.
		accepted int
		// eof: m1 reads EOF while cut (the close crossed: the link back flows).
		eof bool
		// unread: m1 wrote bytes m2 never read before it closed.
		unread bool
	}{
		{"no cut: the first write succeeds, the next is reset", func(*Network) {}, 1, true, false},
		{"no cut, unread bytes at the close: it resets at once", func(*Network) {}, 0, true, true},
		{"partition: writes are buffered, no close is seen", func(n *Network) { n.Partition("m1", "m2") }, 3, false, false},
		{"partition, unread bytes at the close: no reset is seen", func(n *Network) { n.Partition("m1", "m2") }, 3, false, true},
		{"link back cut: bytes reach the closed end, the reset does not come back", func(n *Network) { n.Cut("m2", "m1") }, 3, false, false},
		{"link to the closed end cut: the close is seen, writes are held", func(n *Network) { n.Cut("m1", "m2") }, 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := New()
			c, s := pair(t, n, "m1", "m2")
			if tt.unread {
				write(t, c, "unread")
			}
			tt.cut(n)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if tt.eof {
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("read: %v, want EOF", err)
				}
			} else {
				held(t, c)
			}
			for i := range tt.accepted {
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatalf("write %d after the peer closed: %v", i+1, err)
				}
			}
			// Healed, the bytes written reach the closed end (if they had
			// not) and its reset comes back: the next write fails.
			n.HealAll()
			k, err := c.Write([]byte("y"))
			if !errors.Is(err, ErrReset) || !errors.Is(err, syscall.ECONNRESET) || k != 0 {
				t.Fatalf("write once the reset came back: %d, %v; want ErrReset", k, err)
			}
		})
	}
}

// TestDialAcrossCut: a dial across a link cut in either direction gets no
// answer, as over TCP across a partition that drops packets: it waits until
// its context is done and fails with the context's error, or until the
// link heals and connects.
func TestDialAcrossCut(t *testing.T) {
	tests := []struct {
		name string
		cut  [2]string // {from, to}
		heal bool      // heal while the dial waits; else its context ends
	}{
		{"dialer's link cut: the context ends the dial", [2]string{"m1", "m2"}, false},
		{"link back cut: the context ends the dial", [2]string{"m2", "m1"}, false},
		{"dialer's link cut: the heal completes the dial", [2]string{"m1", "m2"}, true},
		{"link back cut: the heal completes the dial", [2]string{"m2", "m1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := New()
			ln, err := n.Host("m2").Listen("tcp", "m2:3888")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			n.Cut(tt.cut[0], tt.cut[1])
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				c   net.Conn
				err error
			}
			done := make(chan result, 1)
			go func() {
				c, err := n.Host("m1").DialContext(ctx, "tcp", "m2:3888")
				done <- result{c, err}
			}()
			select {
			case r := <-done:
				t.Fatalf("dial across the cut returned at once: %v, %v", r.c, r.err)
			case <-time.After(20 * time.Millisecond):
			}
			if tt.heal {
				n.Heal(tt.cut[0], tt.cut[1])
			} else {
				cancel()
			}
			r := <-done
			if !tt.heal {
				if !errors.Is(r.err, context.Canceled) {
					t.Fatalf("dial: %v, want the context's error", r.err)
				}
				return
			}
			if r.err != nil {
				t.Fatalf("dial after the heal: %v", r.err)
			}
			defer r.c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			write(t, r.c, "hi")
			if got := readN(t, s, 2); string(got) != "hi" {
				t.Fatalf("read %q", got)
			}
		})
	}
}
