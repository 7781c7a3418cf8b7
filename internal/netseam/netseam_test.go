package netseam_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/internal/memnet"
	"github.com/zkraft/zkraft/internal/netseam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// selfSigned returns a server config with a self-signed certificate for
// dnsName and a client config that trusts it.
func selfSigned(t *testing.T, dnsName string) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{dnsName}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestDialTLS: DialTLS dials through the Network it is given and verifies
// the server's certificate against the host of the address it dialled
// unless the config names a server, as tls.Dialer does.
func TestDialTLS(t *testing.T) {
	tests := []struct {
		name       string
		certFor    string // the server certificate's host name
		serverName string // the client config's ServerName
		wantErr    string
	}{
		{"certificate for the dialled host", "m1", "", ""},
		{"certificate for another host", "m9", "", "certificate is valid for m9, not m1"},
		{"config names the host", "m9", "m9", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mn := memnet.New()
			srvCfg, cliCfg := selfSigned(t, tt.certFor)
			cliCfg.ServerName = tt.serverName
			ln, err := mn.Host("m1").Listen("tcp", "m1:3888")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan error, 1)
			go func() {
				c, err := tls.NewListener(ln, srvCfg).Accept()
				if err != nil {
					served <- err
					return
				}
				defer c.Close()
				served <- c.(*tls.Conn).HandshakeContext(context.Background())
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := netseam.DialTLS(ctx, mn.Host("c1"), "tcp", "m1:3888", cliCfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("dial: %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("dial: %v", err)
			} else {
				_ = c.Close()
			}
			<-served
		})
	}
}

// TestOr: a nil Network is the operating system's.
func TestOr(t *testing.T) {
	if netseam.Or(nil) != netseam.OS {
		t.Fatal("Or(nil) is not OS")
	}
	h := memnet.New().Host("m1")
	if netseam.Or(h) != netseam.Network(h) {
		t.Fatal("Or changed a given Network")
	}
}

// TestListenClients: on the operating system's network the connections a
// client listener accepts have no TCP keep-alive (net.Listen's have it);
// another Network's Listen is used as it is.
func TestListenClients(t *testing.T) {
	tests := []struct {
		name string
		n    netseam.Network
		addr string
	}{
		{"operating system", netseam.OS, "127.0.0.1:0"},
		{"memnet", memnet.New().Host("m1"), "m1:2181"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := netseam.ListenClients(tt.n, "tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := tt.n.DialContext(ctx, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, ok := <-accepted
			if !ok {
				t.Fatal("accept failed")
			}
			defer sc.Close()
			tc, isTCP := sc.(*net.TCPConn)
			if !isTCP {
				return // no socket options to check
			}
			raw, err := tc.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var keepAlive int
			var serr error
			if err := raw.Control(func(fd uintptr) {
				keepAlive, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			}); err != nil {
				t.Fatal(err)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			if keepAlive != 0 {
				t.Fatalf("SO_KEEPALIVE = %d on an accepted client connection, want 0", keepAlive)
			}
		})
	}
}
