package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/zkraft/zkraft/internal/netseam"
	"github.com/zkraft/zkraft/jute"
)

// The secure client port serves the same protocol as the plain one, over
// TLS. A connection counts against maxClientCnxns and is closed by Stop from
// the moment it is accepted; its handshake must finish within
// tlsHandshakeTimeout, then it gets its x509 identity and is served like any
// other connection. A failed handshake (bad or missing certificate, wrong
// protocol) closes only that connection.

// tlsHandshakeTimeout bounds a client's TLS handshake (ZooKeeper drops a
// connection that sends nothing within 10 s as well).
const tlsHandshakeTimeout = 10 * time.Second

// listenSecure opens the TLS client listener when secureClientPort is set.
func (s *Server) listenSecure() error {
	if s.clientTLS == nil {
		return nil
	}
	addr := s.cfg.SecureClientAddr()
	ln, err := netseam.ListenClients(s.network, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on secure client port %s: %w", addr, err)
	}
	s.secureLn = ln
	s.log.Info().Str("addr", ln.Addr().String()).Str("client_auth", s.clientTLS.ClientAuth.String()).
		Msg("serving TLS clients")
	s.wg.Add(1)
	go s.acceptLoop(ln, s.startTLS)
	return nil
}

// SecureAddr is the TLS client listener's address; nil without one.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}

// secureClientPort is the port of the TLS listener, or -1 (conf's value).
func (s *Server) secureClientPort() int {
	if s.secureLn == nil {
		return -1
	}
	if port, ok := listenPort(s.secureLn.Addr()); ok {
		return port
	}
	return -1
}

// listenPort is the port of a listener's address on any network (the
// operating system's *net.TCPAddr, memnet's): its String is "host:port".
func listenPort(a net.Addr) (int, bool) {
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	return port, err == nil
}

// startTLS registers a connection of the secure client port and serves it
// once its handshake is done.
func (s *Server) startTLS(nc net.Conn) {
	tc := tls.Server(nc, s.clientTLS)
	c := newConn(s, tc)
	if !s.runConn(c, func() { s.serveTLS(c, tc) }) {
		_ = nc.Close()
	}
}

// serveTLS completes the handshake, adds the certificate's identity and
// serves the connection.
func (s *Server) serveTLS(c *conn, tc *tls.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-c.done: // Stop closed the connection
			cancel()
		case <-ctx.Done():
		}
	}()
	err := tc.HandshakeContext(ctx)
	cancel()
	<-watching
	if err != nil {
		c.logger().Info().Err(err).Msg("client TLS handshake failed, closing connection")
		c.finish()
		return
	}
	if err := s.addCertIdentity(c, tc.ConnectionState()); err != nil {
		c.logger().Warn().Err(err).Msg("client certificate has no usable subject, closing connection")
		c.finish()
		return
	}
	c.serve()
}

// addCertIdentity adds x509:<subject DN> to the connection's ids when the
// client presented a verified certificate, and super when that DN is
// X509AuthenticationProvider.superUser (ZooKeeper's X509AuthenticationProvider).
func (s *Server) addCertIdentity(c *conn, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 || len(cs.VerifiedChains) == 0 {
		return nil // clientAuth none or want: no identity beyond ip
	}
	dn, err := x509ID(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return err
	}
	ids := append([]jute.Id(nil), *c.authIDs.Load()...)
	ids = append(ids, jute.Id{Scheme: "x509", ID: dn})
	if s.cfg.X509SuperUser != "" && dn == s.cfg.X509SuperUser {
		ids = append(ids, jute.Id{Scheme: "super", ID: dn})
	}
	c.authIDs.Store(&ids)
	c.logger().Debug().Str("x509", dn).Msg("client authenticated by certificate")
	return nil
}
