package consensus

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/zkraft/zkraft/internal/netseam"
)

// TLS for the TCP transport. When TCPConfig.TLS is set, the listener
// accepts only TLS connections and every peer is dialled with TLS, both with
// the same config. The handshake of an inbound connection completes (within
// handshakeTimeout) before any frame is read from it, so a member whose
// certificate the config rejects never reaches raft; the failure is logged
// and the connection closed, and the transport keeps serving the others.

// handshakeTimeout bounds one TLS handshake, inbound or outbound.
const handshakeTimeout = 10 * time.Second

// wrapListener returns ln, wrapped in TLS when the transport uses it.
func (t *TCPTransport) wrapListener(ln net.Listener) net.Listener {
	if t.cfg.TLS == nil {
		return ln
	}
	return tls.NewListener(ln, t.cfg.TLS)
}

// dial connects to a peer within ctx (the peer sender's, canceled when
// the sender or the transport stops) and DialTimeout; with TLS the
// handshake is then done (and the peer's certificate verified) within
// handshakeTimeout before it returns. Both go through the transport's
// Network.
func (t *TCPTransport) dial(ctx context.Context, addr string) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, t.cfg.DialTimeout)
	defer cancel()
	c, err := t.cfg.Network.DialContext(dctx, "tcp", addr)
	if err != nil || t.cfg.TLS == nil {
		return c, err
	}
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	return netseam.ClientHandshake(hctx, c, addr, t.cfg.TLS)
}

// handshakeInbound completes the TLS handshake of an accepted connection;
// false (after logging why) if it failed. Plain connections pass.
func (t *TCPTransport) handshakeInbound(ctx context.Context, c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		t.lg.Warn().Err(err).Str("remote", c.RemoteAddr().String()).Msg("peer TLS handshake failed, closing connection")
		return false
	}
	return true
}
