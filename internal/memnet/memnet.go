// Package memnet is an in-memory network for tests: listeners and
// connections between named hosts ("m1", "c1"), with addresses like
// "m1:2181", links that can be cut and healed between two hosts in one
// direction or both, and a way to close every connection of a host. Each
// host's view, Host, is a netseam.Network, so the server and the consensus
// transport run on it unchanged; a client library that takes a dial
// function dials through a host's DialContext.
//
// Semantics, chosen to be those of TCP across a partition that drops
// packets:
//
//   - A connection is two one-way byte streams with a bounded buffer each
//     (BufferSize): a write returns once its bytes are buffered and blocks
//     while the buffer is full.
//   - While the link from host a to host b is cut, bytes written on a's end
//     of a connection between them stay buffered and are not readable on
//     b's end; healing the link delivers them, in order. A cut never loses
//     or reorders bytes of an open connection, as TCP retransmits.
//   - A dial between two hosts whose link is cut in either direction
//     waits (no handshake can complete) until the link heals, or its
//     context is done: then it fails with the context's error. A dial to
//     an address nobody listens on fails at once with ErrRefused.
//   - Close of one end: the other end reads what was written before, then
//     io.EOF (held like any byte while the link is cut). Its writes go on
//     being accepted as TCP's are: bytes buffered while the link to the
//     closed end is cut, dropped once they reach it. Bytes that reached the
//     closed end provoke a reset, and once the link back carries it (at
//     once without a cut) the other end's later writes fail with ErrReset.
//     So without a cut the first write after the peer closed succeeds and
//     the next fails; across a cut no close or reset is seen.
//   - Deadlines make blocked and later calls fail with an error that
//     satisfies errors.Is(err, os.ErrDeadlineExceeded); a closed end's and
//     a closed listener's calls fail with net.ErrClosed.
//
// memnet starts no goroutine: every call blocks its caller only, and
// waits only for another call or a deadline.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/internal/netseam"
)

// BufferSize bounds the bytes buffered in one direction of a connection.
const BufferSize = 256 << 10

// ErrRefused is the error of a dial to an address nobody listens on.
var ErrRefused = errors.New("memnet: connection refused")

// ErrReset is the error of a write after the peer closed its end and the
// reset that bytes written since provoked came back (it wraps
// syscall.ECONNRESET, as on the operating system's network).
var ErrReset = fmt.Errorf("memnet: %w", syscall.ECONNRESET)

// Network is one in-memory network. Its zero value is not usable; call New.
type Network struct {
	mu sync.Mutex
	// wake is closed and replaced at every change a blocked call may wait
	// for (bytes written or read, a close, a heal, a deadline set).
	wake      chan struct{}
	listeners map[string]*listener // by "host:port"
	cut       map[[2]string]bool   // {from, to}: bytes from host from do not reach host to
	conns     map[*conn]struct{}   // ends not closed
	nextPort  int
}

// New returns an empty network: no listener, no cut link.
func New() *Network {
	return &Network{
		wake:      make(chan struct{}),
		listeners: map[string]*listener{},
		cut:       map[[2]string]bool{},
		conns:     map[*conn]struct{}{},
		nextPort:  40000,
	}
}

// Host returns host name's view of the network: it listens on name's
// addresses and its connections start at name.
func (n *Network) Host(name string) *Host { return &Host{n: n, name: name} }

// Cut stops the bytes from host from to host to (one direction).
func (n *Network) Cut(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{from, to}] = true
	n.broadcast()
}

// Heal delivers again the bytes from host from to host to, starting with
// those held while the link was cut.
func (n *Network) Heal(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, [2]string{from, to})
	n.broadcast()
}

// Partition cuts the links between a and b both ways.
func (n *Network) Partition(a, b string) {
	n.Cut(a, b)
	n.Cut(b, a)
}

// HealAll heals every cut link.
func (n *Network) HealAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	n.broadcast()
}

// CloseHost closes every connection end on host (as if its process
// closed its sockets) and reports how many it closed; its listeners stay
// open.
func (n *Network) CloseHost(host string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	closed := 0
	for c := range n.conns {
		if c.local.Host == host {
			c.closeLocked()
			closed++
		}
	}
	return closed
}

// broadcast wakes every blocked call to look again. Called with n.mu held.
func (n *Network) broadcast() {
	close(n.wake)
	n.wake = make(chan struct{})
}

// wait releases n.mu until something changes, deadline passes or ctx is
// done, and takes it again. It reports false when deadline passed or ctx
// is done. Called with n.mu held.
func (n *Network) wait(ctx context.Context, deadline time.Time) bool {
	wake := n.wake
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return false
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	n.mu.Unlock()
	defer n.mu.Lock()
	select {
	case <-wake:
		return true
	case <-timeout:
		return false
	case <-ctx.Done():
		return false
	}
}

// reachable reports whether bytes flow from host a to host b. Called with
// n.mu held.
func (n *Network) reachable(a, b string) bool { return !n.cut[[2]string{a, b}] }

// Addr is a memnet address.
type Addr struct {
	Host string
	Port int
}

// Network is "memnet".
func (Addr) Network() string { return "memnet" }

func (a Addr) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Host is one host's view of a Network: a netseam.Network.
type Host struct {
	n    *Network
	name string
}

var _ netseam.Network = (*Host)(nil)

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Listen listens on addr: "host:port" with this host's name, or an empty
// or wildcard host (then this host's name); port 0 picks a free port.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	a, err := h.parse(addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	if a.Host != h.name {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: a,
			Err: fmt.Errorf("memnet: host %s cannot listen on %s", h.name, a.Host)}
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if a.Port == 0 {
		a.Port = n.port(a.Host)
	}
	if _, used := n.listeners[a.String()]; used {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: a, Err: errors.New("memnet: address already in use")}
	}
	l := &listener{n: n, addr: a}
	n.listeners[a.String()] = l
	return l, nil
}

// DialContext connects to addr from this host. Across a cut it waits
// for the heal or ctx (see the package comment).
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: network, Err: err} }
	if err := ctx.Err(); err != nil {
		return nil, opErr(err)
	}
	to, err := h.parse(addr)
	if err != nil {
		return nil, opErr(err)
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	// No handshake completes while the link is cut either way: the dial
	// waits for the heal, or gives up with ctx, as a dial whose SYN (or
	// SYN-ACK) a partition drops.
	for !n.reachable(h.name, to.Host) || !n.reachable(to.Host, h.name) {
		if !n.wait(ctx, time.Time{}) {
			return nil, opErr(fmt.Errorf("memnet: %s unreachable from %s: %w", to.Host, h.name, ctx.Err()))
		}
	}
	l := n.listeners[to.String()]
	if l == nil || l.closed {
		return nil, opErr(fmt.Errorf("%w: %s", ErrRefused, to))
	}
	from := Addr{Host: h.name, Port: n.port(h.name)}
	ab, ba := &stream{}, &stream{}
	client := &conn{n: n, local: from, remote: to, in: ba, out: ab}
	server := &conn{n: n, local: to, remote: from, in: ab, out: ba}
	n.conns[client], n.conns[server] = struct{}{}, struct{}{}
	l.queue = append(l.queue, server)
	n.broadcast()
	return client, nil
}

// parse reads "host:port"; an empty or wildcard host is this host.
func (h *Host) parse(addr string) (Addr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Addr{}, fmt.Errorf("memnet: address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return Addr{}, fmt.Errorf("memnet: address %q: bad port", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = h.name
	}
	return Addr{Host: host, Port: p}, nil
}

// port returns a port of host no listener uses. Called with n.mu held.
func (n *Network) port(host string) int {
	for {
		n.nextPort++
		if n.nextPort > 65535 {
			n.nextPort = 40001
		}
		if _, used := n.listeners[Addr{Host: host, Port: n.nextPort}.String()]; !used {
			return n.nextPort
		}
	}
}

// listener is a listening address; dials queue the server ends of their
// connections until Accept takes them.
type listener struct {
	n      *Network
	addr   Addr
	queue  []*conn
	closed bool
}

func (l *listener) Accept() (net.Conn, error) {
	n := l.n
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		if l.closed {
			return nil, &net.OpError{Op: "accept", Net: "memnet", Addr: l.addr, Err: net.ErrClosed}
		}
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue = l.queue[1:]
			return c, nil
		}
		n.wait(context.Background(), time.Time{})
	}
}

// Close stops listening; connections not accepted yet are closed.
func (l *listener) Close() error {
	n := l.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.closed {
		return &net.OpError{Op: "close", Net: "memnet", Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	delete(n.listeners, l.addr.String())
	for _, c := range l.queue {
		c.closeLocked()
	}
	l.queue = nil
	n.broadcast()
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// stream is one direction of a connection.
type stream struct {
	buf       []byte
	writerEnd bool // the writing end closed: EOF once buf is read
	readerEnd bool // the reading end closed: bytes that reach it provoke a reset
	reset     bool // bytes reached the closed reading end: writes fail once the link back carries the reset
}

// conn is one end of a connection: it reads in and writes out.
type conn struct {
	n             *Network
	local, remote Addr
	in, out       *stream
	closed        bool
	readDeadline  time.Time
	writeDeadline time.Time
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "memnet", Source: c.local, Addr: c.remote, Err: err}
}

func (c *conn) Read(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		if c.closed {
			return 0, c.opErr("read", net.ErrClosed)
		}
		if !c.readDeadline.IsZero() && !time.Now().Before(c.readDeadline) {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		if n.reachable(c.remote.Host, c.local.Host) {
			if len(c.in.buf) > 0 {
				k := copy(b, c.in.buf)
				c.in.buf = c.in.buf[k:]
				n.broadcast()
				return k, nil
			}
			if c.in.writerEnd {
				return 0, io.EOF
			}
		}
		if len(b) == 0 {
			return 0, nil
		}
		n.wait(context.Background(), c.readDeadline)
	}
}

func (c *conn) Write(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	written := 0
	for {
		if c.closed {
			return written, c.opErr("write", net.ErrClosed)
		}
		c.deliverToClosed()
		if c.out.reset && n.reachable(c.remote.Host, c.local.Host) {
			return written, c.opErr("write", ErrReset)
		}
		if !c.writeDeadline.IsZero() && !time.Now().Before(c.writeDeadline) {
			return written, c.opErr("write", os.ErrDeadlineExceeded)
		}
		if room := BufferSize - len(c.out.buf); room > 0 || written == len(b) {
			k := min(room, len(b)-written)
			c.out.buf = append(c.out.buf, b[written:written+k]...)
			written += k
			c.deliverToClosed()
			n.broadcast()
			if written == len(b) {
				return written, nil
			}
			continue
		}
		n.wait(context.Background(), c.writeDeadline)
	}
}

// deliverToClosed models the bytes that reach a peer end that was closed:
// once the link to the peer carries them, they are gone and provoke a
// reset, which fails this end's writes once the link back carries it.
// Called with n.mu held.
func (c *conn) deliverToClosed() {
	if c.out.readerEnd && len(c.out.buf) > 0 && c.n.reachable(c.local.Host, c.remote.Host) {
		c.out.buf = nil
		c.out.reset = true
	}
}

// Close closes this end: the other end reads what was written, then EOF.
func (c *conn) Close() error {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return c.opErr("close", net.ErrClosed)
	}
	c.closeLocked()
	return nil
}

// closeLocked closes this end. Called with n.mu held.
func (c *conn) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	c.out.writerEnd = true
	c.in.readerEnd = true
	if len(c.in.buf) > 0 && c.n.reachable(c.remote.Host, c.local.Host) {
		// Bytes received and never read: the close resets (TCP does).
		// Bytes held by a cut are still the writer's; deliverToClosed
		// drops them when they arrive.
		c.in.buf = nil
		c.in.reset = true
	}
	delete(c.n.conns, c)
	c.n.broadcast()
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.readDeadline, c.writeDeadline = t, t
	c.n.broadcast()
	return nil
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.readDeadline = t
	c.n.broadcast()
	return nil
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.writeDeadline = t
	c.n.broadcast()
	return nil
}
