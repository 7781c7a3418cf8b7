package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/zkraft/zkraft/internal/tlsstore"
)

// TLS for the secure client port and, with sslQuorum, between members. The
// zoo.cfg keys are read by internal/zoocfg (TLSSettings); key and trust
// stores are PEM files read by internal/tlsstore when the server starts, so
// a bad store fails Start before anything listens.

// newTLSConfig builds the TLS configuration of one side. The key store is
// required (it is the server's identity); without a trust store, peers are
// verified against the system's roots, as Java's default trust manager does.
// For the quorum (quorum true) the config also dials: it presents the same
// certificate, verifies the peer's, and with hostname verification checks
// the certificate of either side against its address, as ZooKeeper's
// quorum does.
func newTLSConfig(ts TLSSettings, prefix string, quorum bool) (*tls.Config, error) {
	if ts.KeyStoreLocation == "" {
		return nil, fmt.Errorf("%skeyStore.location is required", prefix)
	}
	cert, err := tlsstore.LoadKeyStore(ts.KeyStoreLocation, ts.KeyStorePassword, ts.KeyStoreType)
	if err != nil {
		return nil, fmt.Errorf("%skeyStore: %w", prefix, err)
	}
	var pool *x509.CertPool
	if ts.TrustStoreLocation != "" {
		if pool, err = tlsstore.LoadTrustStore(ts.TrustStoreLocation, ts.TrustStoreType); err != nil {
			return nil, fmt.Errorf("%strustStore: %w", prefix, err)
		}
	}
	p, err := ts.Parse()
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   p.ClientAuth,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   p.MinVersion,
		MaxVersion:   p.MaxVersion,
		CipherSuites: p.CipherSuites,
	}
	if quorum {
		if p.VerifyHostname {
			cfg.GetConfigForClient = verifyClientHost(cfg)
		} else {
			// Verify the chain, not the name (a dialled member's address
			// need not be in its certificate).
			cfg.InsecureSkipVerify = true
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("peer sent no certificate")
				}
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
					Roots: pool, Intermediates: inter,
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
				})
				return err
			}
		}
	}
	return cfg, nil
}

// verifyClientHost returns a GetConfigForClient that checks an accepted
// member's certificate names its address (ZooKeeper's quorum verifies
// client hostnames, by IP address first).
func verifyClientHost(base *tls.Config) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		host, _, err := net.SplitHostPort(hello.Conn.RemoteAddr().String())
		if err != nil {
			return nil, err
		}
		cfg := base.Clone()
		cfg.GetConfigForClient = nil
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil // clientAuth decided already whether that is fine
			}
			if err := cs.PeerCertificates[0].VerifyHostname(host); err != nil {
				return fmt.Errorf("member certificate does not match its address: %w", err)
			}
			return nil
		}
		return cfg, nil
	}
}

// setupTLS builds the client and quorum TLS configurations, so that a bad
// store or key fails Start before anything listens.
func (s *Server) setupTLS() error {
	if s.cfg.SecureClientPort > 0 {
		cfg, err := newTLSConfig(s.cfg.ClientTLS, "ssl.", false)
		if err != nil {
			return fmt.Errorf("secure client port: %w", err)
		}
		s.clientTLS = cfg
	}
	if s.cfg.SSLQuorum && !s.cfg.Standalone() {
		cfg, err := newTLSConfig(s.cfg.QuorumTLS, "ssl.quorum.", true)
		if err != nil {
			return fmt.Errorf("sslQuorum: %w", err)
		}
		s.quorumTLS = cfg
	}
	if s.cfg.ClientPort < 0 && s.cfg.SecureClientPort <= 0 {
		return errors.New("no client port: set clientPort or secureClientPort")
	}
	return nil
}

// x509ID is the id of a client certificate under the x509 scheme: its
// subject DN as RFC 2253 (Java's X500Principal.getName()) writes it.
func x509ID(rawSubject []byte) (string, error) { return tlsstore.X509ID(rawSubject) }
