// Package faultproxy is a fault-injecting TCP proxy for tests that run
// real server processes on loopback: a member dials a Proxy instead of its
// peer, and the test cuts, restores or delays the bytes that flow through.
//
// Invariants:
//   - bytes are never dropped, reordered or altered: a connection through a
//     proxy delivers a prefix of what was written, in order, so framed
//     protocols never see a torn frame;
//   - a blocked direction is a blackhole: the proxy stops forwarding (and,
//     once its small buffer is full, stops reading), so the sender's writes
//     stall and time out as over a cut network, and what was held is
//     delivered once the direction is unblocked (as TCP retransmits), unless
//     the connection was reset in between;
//   - a delay holds every chunk for at least that long after it was read;
//   - Reset closes every connection of the proxy (both sides see it);
//   - Close stops the listener and every connection and waits for every
//     goroutine of the proxy, so a test ends with none left.
//
// Net groups the proxies of a cluster by directed link (from, to) so that a
// test can isolate a member, cut one direction, or heal everything.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction selects the bytes of a proxied connection.
type Direction int

const (
	// Up is from the dialling side to the target.
	Up Direction = iota
	// Down is from the target back to the dialling side.
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// chunkQueue bounds the chunks read but not yet written, per direction.
const chunkQueue = 16

// chunkSize is the largest read.
const chunkSize = 32 << 10

// dialTimeout bounds the proxy's dial of its target.
const dialTimeout = time.Second

// Proxy forwards connections accepted on Addr to Target.
type Proxy struct {
	Target string
	ln     net.Listener

	mu      sync.Mutex
	cond    *sync.Cond // signalled on every state change
	blocked [2]bool
	delay   [2]time.Duration
	conns   map[*pair]struct{}
	closed  bool
	resets  uint64 // Reset calls so far: a connection accepted before one is closed by it

	wg sync.WaitGroup
}

// pair is one proxied connection.
type pair struct {
	client, server net.Conn
	once           sync.Once
	dead           bool // guarded by Proxy.mu: forwarding must stop
}

func (p *pair) close() {
	p.once.Do(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
}

// Listen starts a proxy on a free loopback port forwarding to target.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen for %s: %w", target, err)
	}
	p := &Proxy{Target: target, ln: ln, conns: map[*pair]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's listening address (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Block stops (on) or resumes (off) forwarding in direction d, for current
// and future connections.
func (p *Proxy) Block(d Direction, on bool) {
	p.mu.Lock()
	p.blocked[d] = on
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Blocked reports whether direction d is blocked.
func (p *Proxy) Blocked(d Direction) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked[d]
}

// SetDelay holds every chunk of direction d for at least delay.
func (p *Proxy) SetDelay(d Direction, delay time.Duration) {
	p.mu.Lock()
	p.delay[d] = delay
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Reset closes every current connection; the listener stays.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.resets++
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		c.dead = true
		conns = append(conns, c)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// kill stops the forwarding of c and closes both of its sides.
func (p *Proxy) kill(c *pair) {
	p.mu.Lock()
	c.dead = true
	p.cond.Broadcast()
	p.mu.Unlock()
	c.close()
}

// Conns is the number of open proxied connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("faultproxy: close %s: %w", p.Addr(), err)
	}
	return nil
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		resets := p.resets
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, resets)
	}
}

// testHookDialed, when set by a test, runs in serve once the target was
// dialled and before the connection is registered.
var testHookDialed func()

// serve dials the target for an accepted connection and forwards both ways.
// resets is p.resets when it was accepted: a Reset while the target is being
// dialled closes it too.
func (p *Proxy) serve(client net.Conn, resets uint64) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.Target, dialTimeout)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &pair{client: client, server: server}
	if testHookDialed != nil {
		testHookDialed()
	}
	p.mu.Lock()
	if p.closed || p.resets != resets {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.forward(c, Up, client, server) }()
	go func() { defer wg.Done(); p.forward(c, Down, server, client) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

type chunk struct {
	b    []byte
	read time.Time
	err  error // set on the last chunk: the read error (io.EOF on a clean close)
}

// forward copies src to dst in direction d, honouring blocks and delays.
// The reader stops reading once chunkQueue chunks wait, so a blocked
// direction back-pressures the sender like a cut link.
func (p *Proxy) forward(c *pair, d Direction, src, dst net.Conn) {
	q := make(chan chunk, chunkQueue)
	go func() {
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{b: buf[:n], read: time.Now()}
			}
			if err != nil {
				q <- chunk{read: time.Now(), err: err}
				close(q)
				return
			}
		}
	}()
	defer func() {
		p.kill(c)
		for range q { // let the reader finish; c.close made its Read fail
		}
	}()
	for ch := range q {
		if !p.waitDeliverable(c, d, ch.read) {
			return
		}
		if ch.err != nil {
			// EOF or error: what was read before it is delivered; the
			// connection then closes both ways (no half-close).
			return
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}

// waitDeliverable waits until direction d is unblocked and a chunk read at
// read has been held for the delay; false once the proxy or c is closed.
func (p *Proxy) waitDeliverable(c *pair, d Direction, read time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed || c.dead {
			return false
		}
		if p.blocked[d] {
			p.cond.Wait()
			continue
		}
		due := read.Add(p.delay[d])
		wait := time.Until(due)
		if wait <= 0 {
			return true
		}
		// Sleep without the lock; re-check afterwards (a block or a new
		// delay may have come meanwhile).
		p.mu.Unlock()
		time.Sleep(min(wait, 50*time.Millisecond))
		p.mu.Lock()
	}
}
