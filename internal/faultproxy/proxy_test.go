package faultproxy

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers every line with the same line until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// roundTrip writes line and waits up to d for its echo; it returns the
// answer and the error of the read.
func (c *client) roundTrip(t *testing.T, line string, d time.Duration) (string, error) {
	t.Helper()
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		return "", err
	}
	return c.read(d)
}

func (c *client) read(d time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	s, err := c.r.ReadString('\n')
	if err != nil {
		return s, err
	}
	return s[:len(s)-1], nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestProxy(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, p *Proxy, c *client)
	}{
		{"passes bytes both ways", func(t *testing.T, _ *Proxy, c *client) {
			for _, line := range []string{"a", "bb", "ccc"} {
				if got, err := c.roundTrip(t, line, 2*time.Second); err != nil || got != line {
					t.Fatalf("echo %q = %q, %v", line, got, err)
				}
			}
		}},
		{"blocked up holds bytes until unblocked", func(t *testing.T, p *Proxy, c *client) {
			p.Block(Up, true)
			if got, err := c.roundTrip(t, "held", 300*time.Millisecond); !isTimeout(err) {
				t.Fatalf("echo through a blocked link = %q, %v; want a timeout", got, err)
			}
			p.Block(Up, false)
			if got, err := c.read(2 * time.Second); err != nil || got != "held" {
				t.Fatalf("after unblock got %q, %v; want the held line", got, err)
			}
		}},
		{"blocked down holds the answers", func(t *testing.T, p *Proxy, c *client) {
			p.Block(Down, true)
			if got, err := c.roundTrip(t, "x", 300*time.Millisecond); !isTimeout(err) {
				t.Fatalf("echo with down blocked = %q, %v; want a timeout", got, err)
			}
			p.Block(Down, false)
			if got, err := c.read(2 * time.Second); err != nil || got != "x" {
				t.Fatalf("after unblock got %q, %v", got, err)
			}
		}},
		{"a new connection on a blocked link stalls too", func(t *testing.T, p *Proxy, _ *client) {
			p.Block(Up, true)
			c2 := dial(t, p.Addr())
			if got, err := c2.roundTrip(t, "new", 300*time.Millisecond); !isTimeout(err) {
				t.Fatalf("echo on a new connection through a blocked link = %q, %v", got, err)
			}
			p.Block(Up, false)
			if got, err := c2.read(2 * time.Second); err != nil || got != "new" {
				t.Fatalf("after unblock got %q, %v", got, err)
			}
		}},
		{"delay holds each chunk at least that long", func(t *testing.T, p *Proxy, c *client) {
			const d = 200 * time.Millisecond
			p.SetDelay(Up, d)
			start := time.Now()
			if got, err := c.roundTrip(t, "slow", 5*time.Second); err != nil || got != "slow" {
				t.Fatalf("echo with delay = %q, %v", got, err)
			}
			if took := time.Since(start); took < d {
				t.Fatalf("round trip took %v with a %v delay", took, d)
			}
			p.SetDelay(Up, 0)
		}},
		{"reset closes connections, new ones work", func(t *testing.T, p *Proxy, c *client) {
			if _, err := c.roundTrip(t, "a", 2*time.Second); err != nil {
				t.Fatal(err)
			}
			p.Reset()
			if _, err := c.read(2 * time.Second); err == nil || isTimeout(err) {
				t.Fatalf("read after Reset: %v; want the connection closed", err)
			}
			c2 := dial(t, p.Addr())
			if got, err := c2.roundTrip(t, "b", 2*time.Second); err != nil || got != "b" {
				t.Fatalf("echo after Reset = %q, %v", got, err)
			}
		}},
		{"reset of a blocked connection closes it", func(t *testing.T, p *Proxy, c *client) {
			p.Block(Up, true)
			p.Block(Down, true)
			_, _ = io.WriteString(c.c, "stuck\n")
			// A connection the kernel queued but the proxy has not accepted
			// yet is not one of its connections: wait until it is.
			for deadline := time.Now().Add(5 * time.Second); p.Conns() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the proxy never took the connection")
				}
			}
			p.Reset()
			if _, err := c.read(2 * time.Second); err == nil || isTimeout(err) {
				t.Fatalf("read after Reset of a blocked link: %v; want the connection closed", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Listen(echoServer(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := p.Close(); err != nil {
					t.Error(err)
				}
			}()
			tt.run(t, p, dial(t, p.Addr()))
		})
	}
}

func TestNetCutIsOneWay(t *testing.T) {
	n := NewNet()
	defer n.Close()
	// Members 1 and 2 each dial the other's echo server through the Net.
	a12, err := n.Add(1, 2, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	a21, err := n.Add(2, 1, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c12, c21 := dial(t, a12), dial(t, a21)
	n.Cut(1, 2, true)
	// 1's bytes to 2 are held on 1's connection (Up) and on 2's (Down).
	if _, err := c12.roundTrip(t, "1to2", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("1->2 through a cut link: %v; want a timeout", err)
	}
	if _, err := c21.roundTrip(t, "2to1", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("2's request reached 1 but 1's answer must be held: %v", err)
	}
	n.Cut(1, 2, false)
	for _, c := range []*client{c12, c21} {
		if _, err := c.read(2 * time.Second); err != nil {
			t.Fatalf("after restore: %v", err)
		}
	}
	n.Isolate(2)
	if _, err := c21.roundTrip(t, "iso", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("isolated member's link: %v; want a timeout", err)
	}
	n.Heal()
	if got, err := c21.read(2 * time.Second); err != nil || got != "iso" {
		t.Fatalf("after heal got %q, %v", got, err)
	}
}

// TestResetClosesConnectionStillDialling: a connection accepted before a
// Reset whose target was still being dialled is closed too (Reset right
// after a dial could miss it: the TestProxy case "reset of a blocked
// connection closes it" failed that way under load).
func TestResetClosesConnectionStillDialling(t *testing.T) {
	dialled, release := make(chan struct{}), make(chan struct{})
	testHookDialed = func() {
		dialled <- struct{}{}
		<-release
	}
	defer func() { testHookDialed = nil }()
	p, err := Listen(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	c := dial(t, p.Addr())
	select {
	case <-dialled:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy did not dial the target")
	}
	p.Reset()
	close(release)
	if _, err := c.read(2 * time.Second); err == nil || isTimeout(err) {
		t.Fatalf("read after Reset of a connection still being dialled: %v; want the connection closed", err)
	}
}
