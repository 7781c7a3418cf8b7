// Package netseam is the network seam of zkraft: the one interface through
// which the server (client, secure client, liveness, admin and metrics
// ports) and the consensus TCP transport (peer port) listen and dial. The
// production code uses OS, the operating system's network; tests and
// simulations pass another implementation (internal/memnet keeps listeners
// and connections in memory and can cut links between hosts). There is no
// simulation branch in the code that uses it.
//
// # Contract
//
// An implementation of Network must provide, for the code above it to
// behave the same on every network:
//
//   - Listen(network, addr) opens a listener on addr ("host:port"; the
//     network is "tcp"). Its Addr().String() is an address DialContext
//     reaches. After Close, a blocked or later Accept returns an error that
//     satisfies errors.Is(err, net.ErrClosed): accept loops end on it
//     without logging a failure.
//   - DialContext(ctx, network, addr) returns a connected net.Conn or an
//     error; it gives up when ctx is done (callers bound dials with a
//     context deadline) and fails at once when nothing listens on addr.
//   - Connections are full-duplex byte streams with the net.Conn
//     semantics the callers rely on: RemoteAddr().String() is "host:port"
//     (the server counts connections per host); SetDeadline,
//     SetReadDeadline and SetWriteDeadline make blocked and later calls
//     fail with an error satisfying errors.Is(err, os.ErrDeadlineExceeded)
//     (a deadline in the past ends a blocked write at once); Close makes
//     the peer's reads return io.EOF once what was written before is read,
//     and unblocks the local side's blocked calls.
//   - Every method may be called from any goroutine.
//
// TLS is layered on top by the callers (tls.NewListener, tls.Client), so
// a Network carries plain bytes only.
package netseam

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// Network opens listeners and dials connections (see the package comment
// for the contract).
type Network interface {
	Listen(network, addr string) (net.Listener, error)
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// OS is the operating system's network: net.Listen and net.Dialer.
var OS Network = osNetwork{}

type osNetwork struct{}

func (osNetwork) Listen(network, addr string) (net.Listener, error) {
	return net.Listen(network, addr)
}

// ListenClients is Listen without TCP keep-alive on the connections it
// accepts (net.Listen turns it on, four setsockopt calls per accepted
// connection).
func (osNetwork) ListenClients(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), network, addr)
}

// clientListener is a Network with a listener for ZooKeeper clients of its
// own (ListenClients).
type clientListener interface {
	ListenClients(network, addr string) (net.Listener, error)
}

// ListenClients opens a listener for ZooKeeper clients on n. On the
// operating system's network the connections it accepts have no TCP
// keep-alive, as ZooKeeper's (zookeeper.clientTcpKeepAlive is off by
// default): a session has its own liveness, pings within its timeout, and a
// connection is closed when its session expires or, before it has one, when
// its connect request does not come in time. A Network may offer this with
// an optional method ListenClients(network, addr string) (net.Listener,
// error); one without it (memnet, or a wrapper of OS that does not forward
// it) gets n.Listen, whose connections keep whatever keep-alive it sets.
func ListenClients(n Network, network, addr string) (net.Listener, error) {
	if cl, ok := n.(clientListener); ok {
		return cl.ListenClients(network, addr)
	}
	return n.Listen(network, addr)
}

func (osNetwork) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Or returns n, or OS when n is nil: a zero configuration uses the
// operating system's network.
func Or(n Network) Network {
	if n == nil {
		return OS
	}
	return n
}

// DialTLS dials addr on n and completes a TLS client handshake with cfg
// before it returns, as tls.Dialer does on the operating system's network:
// when cfg names no ServerName, the host of addr is verified. ctx bounds
// the dial and the handshake; on failure the connection is closed.
func DialTLS(ctx context.Context, n Network, network, addr string, cfg *tls.Config) (net.Conn, error) {
	c, err := n.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return ClientHandshake(ctx, c, addr, cfg)
}

// ClientHandshake completes a TLS client handshake with cfg over c, a
// connection dialled to addr, within ctx: when cfg names no ServerName,
// the host of addr is verified. On failure c is closed.
func ClientHandshake(ctx context.Context, c net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	return tc, nil
}
