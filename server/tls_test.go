package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/jute"
)

// testCA is a certificate authority made at test time.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var testSerial int64

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	testSerial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(testSerial),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"zkraft test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for subject (for 127.0.0.1, usable by
// servers and clients) and returns its key store PEM: key, then chain.
func (ca *testCA) issue(t *testing.T, subject pkix.Name) (keyStore []byte, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	testSerial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(testSerial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return append(keyPEM, certPEM...), cert
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// tlsFixture holds the certificates of the client-port tests.
type tlsFixture struct {
	ca        *testCA
	serverKS  string // server key store
	trust     string // trust store: the CA
	client    tls.Certificate
	clientDN  string
	foreign   tls.Certificate // signed by another CA
	rootPool  *x509.CertPool
	foreignDN string
}

func newTLSFixture(t *testing.T) *tlsFixture {
	ca := newTestCA(t, "zkraft test CA")
	other := newTestCA(t, "other CA")
	serverKS, _ := ca.issue(t, pkix.Name{CommonName: "127.0.0.1"})
	_, client := ca.issue(t, pkix.Name{CommonName: "client", Organization: []string{"zkraft"}, Country: []string{"US"}})
	_, foreign := other.issue(t, pkix.Name{CommonName: "intruder"})
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tlsFixture{
		ca: ca, serverKS: writeFile(t, "server.pem", serverKS), trust: writeFile(t, "ca.pem", ca.pem),
		client: client, clientDN: "CN=client,O=zkraft,C=US", foreign: foreign, rootPool: pool,
		foreignDN: "CN=intruder",
	}
}

// secure configures a server with a secure port using the fixture.
func (f *tlsFixture) secure(clientAuth string) func(*Config) {
	return func(c *Config) {
		c.SecureClientPort = 0 // set below to a free port
		c.ClientTLS = TLSSettings{KeyStoreLocation: f.serverKS, KeyStoreType: "PEM",
			TrustStoreLocation: f.trust, TrustStoreType: "PEM", ClientAuth: clientAuth}
	}
}

// startTLSServer runs a server with a secure client port on a free port.
func startTLSServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	port, err := freeport.Port()
	require.NoError(t, err)
	return startServer(t, func(c *Config) {
		mutate(c)
		c.SecureClientPort = port
	})
}

// tlsSession is a minimal ZooKeeper client over TLS.
type tlsSession struct {
	nc  net.Conn
	br  *bufio.Reader
	xid int32
}

// dialTLS opens a session over TLS; an error means the handshake or the
// session was refused.
func dialTLS(addr string, cfg *tls.Config) (*tlsSession, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &tlsSession{nc: nc, br: bufio.NewReader(nc)}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := s.write(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); err != nil {
		nc.Close()
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := s.read(&resp); err != nil {
		nc.Close()
		return nil, err
	}
	if resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("no session")
	}
	return s, nil
}

func (s *tlsSession) write(recs ...jute.Record) error {
	enc := jute.NewEncoder(nil)
	start := enc.StartFrame()
	for _, r := range recs {
		enc.WriteRecord(r)
	}
	enc.EndFrame(start)
	_, err := s.nc.Write(enc.Bytes())
	return err
}

func (s *tlsSession) read(r jute.Record) error {
	frame, err := jute.ReadFrame(s.br, nil, 1<<20)
	if err != nil {
		return err
	}
	return jute.Unmarshal(frame, r)
}

// call sends one request and reads its reply body into resp.
func (s *tlsSession) call(op int32, req, resp jute.Record) (int32, error) {
	s.xid++
	recs := []jute.Record{&jute.RequestHeader{Xid: s.xid, Type: op}}
	if req != nil {
		recs = append(recs, req)
	}
	if err := s.write(recs...); err != nil {
		return 0, err
	}
	frame, err := jute.ReadFrame(s.br, nil, 1<<20)
	if err != nil {
		return 0, err
	}
	d := jute.NewDecoder(frame, len(frame))
	var hdr jute.ReplyHeader
	if err := d.ReadRecord(&hdr); err != nil {
		return 0, err
	}
	if hdr.Err == 0 && resp != nil {
		if err := d.ReadRecord(resp); err != nil {
			return 0, err
		}
	}
	return hdr.Err, nil
}

func (s *tlsSession) whoAmI(t *testing.T) []string {
	t.Helper()
	var resp jute.WhoAmIResponse
	code, err := s.call(jute.OpWhoAmI, nil, &resp)
	require.NoError(t, err)
	require.Zero(t, code)
	var out []string
	for _, ci := range resp.ClientInfo {
		out = append(out, ci.AuthScheme+":"+ci.User)
	}
	return out
}

func (f *tlsFixture) clientConfig(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: f.rootPool, ServerName: "127.0.0.1"}
	if cert != nil {
		// Always sent, even when the server's CA list does not name its
		// issuer (Go would send none), so a foreign certificate is tried.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

func TestTLSClientAuth(t *testing.T) {
	f := newTLSFixture(t)
	good, bad := &f.client, &f.foreign
	tests := []struct {
		clientAuth string
		cert       *tls.Certificate
		wantOK     bool
		wantIDs    []string
	}{
		{"need", good, true, []string{"ip:127.0.0.1", "x509:" + f.clientDN}},
		{"need", nil, false, nil},
		{"need", bad, false, nil},
		{"", good, true, []string{"ip:127.0.0.1", "x509:" + f.clientDN}}, // default is need
		{"", nil, false, nil},
		{"want", good, true, []string{"ip:127.0.0.1", "x509:" + f.clientDN}},
		{"want", nil, true, []string{"ip:127.0.0.1"}},
		{"want", bad, false, nil},
		{"none", good, true, []string{"ip:127.0.0.1"}}, // not asked for: not sent
		{"none", nil, true, []string{"ip:127.0.0.1"}},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("clientAuth=%q/cert=%v", tt.clientAuth, map[*tls.Certificate]string{good: "good", bad: "foreign", nil: "none"}[tt.cert])
		t.Run(name, func(t *testing.T) {
			srv := startTLSServer(t, f.secure(tt.clientAuth))
			s, err := dialTLS(srv.SecureAddr().String(), f.clientConfig(tt.cert))
			if !tt.wantOK {
				require.Error(t, err, "the server accepted the session")
				// The server keeps serving others.
				s, err := dialTLS(srv.SecureAddr().String(), f.clientConfig(good))
				require.NoError(t, err)
				defer s.nc.Close()
				return
			}
			require.NoError(t, err)
			defer s.nc.Close()
			require.Equal(t, tt.wantIDs, s.whoAmI(t))
			// The plain port still serves.
			plain := dial(t, srv)
			_, err = plain.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
			require.NoError(t, err)
		})
	}
}

func TestTLSWritesAndSuperUser(t *testing.T) {
	f := newTLSFixture(t)
	srv := startTLSServer(t, func(c *Config) {
		f.secure("need")(c)
		c.X509SuperUser = f.clientDN
		c.ClientPort = -1 // TLS only
	})
	require.Nil(t, srv.Addr())
	s, err := dialTLS(srv.SecureAddr().String(), f.clientConfig(&f.client))
	require.NoError(t, err)
	defer s.nc.Close()
	require.Equal(t, []string{"ip:127.0.0.1", "x509:" + f.clientDN, "super:" + f.clientDN}, s.whoAmI(t))
	var cr jute.CreateResponse
	code, err := s.call(jute.OpCreate, &jute.CreateRequest{Path: "/tls", Data: []byte("secret"),
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, &cr)
	require.NoError(t, err)
	require.Zero(t, code)
	var gr jute.GetDataResponse
	code, err = s.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/tls"}, &gr)
	require.NoError(t, err)
	require.Zero(t, code)
	require.Equal(t, "secret", string(gr.Data))
	require.Equal(t, srv.SecureAddr().(*net.TCPAddr).Port, srv.secureClientPort())
}

func TestTLSProtocolVersions(t *testing.T) {
	f := newTLSFixture(t)
	for _, tt := range []struct {
		protocol, enabled string
		clientMax         uint16
		wantOK            bool
	}{
		{"", "", tls.VersionTLS12, true},
		{"", "", tls.VersionTLS13, false}, // ZooKeeper's default: TLSv1.2 only
		{"TLSv1.3", "", tls.VersionTLS13, true},
		{"TLSv1.3", "", tls.VersionTLS12, false},
		{"TLSv1.2", "TLSv1.2,TLSv1.3", tls.VersionTLS13, true},
		{"TLSv1.2", "TLSv1.2,TLSv1.3", tls.VersionTLS12, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/client-%x", tt.protocol, tt.enabled, tt.clientMax), func(t *testing.T) {
			srv := startTLSServer(t, func(c *Config) {
				f.secure("need")(c)
				c.ClientTLS.Protocol, c.ClientTLS.EnabledProtocols = tt.protocol, tt.enabled
			})
			cfg := f.clientConfig(&f.client)
			cfg.MinVersion, cfg.MaxVersion = tt.clientMax, tt.clientMax
			s, err := dialTLS(srv.SecureAddr().String(), cfg)
			if !tt.wantOK {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			s.nc.Close()
		})
	}
}

func TestTLSBadStoresFailStart(t *testing.T) {
	f := newTLSFixture(t)
	ks := func(loc, typ string) func(*Config) {
		return func(c *Config) {
			f.secure("need")(c)
			c.ClientTLS.KeyStoreLocation, c.ClientTLS.KeyStoreType = loc, typ
		}
	}
	certOnly := writeFile(t, "cert.pem", f.ca.pem)
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"jks", ks(writeFile(t, "ks.jks", []byte("x")), ""), "JKS stores are not supported"},
		{"pkcs12", ks(writeFile(t, "ks.p12", []byte("x")), "PKCS12"), "PKCS12 stores are not supported"},
		{"missing file", ks(filepath.Join(t.TempDir(), "none.pem"), "PEM"), "no such file"},
		{"no key", ks(certOnly, "PEM"), "holds no private key"},
		{"no key store", ks("", ""), "ssl.keyStore.location is required"},
		{"bad clientAuth", func(c *Config) { f.secure("maybe")(c) }, "clientAuth must be none, want or need"},
		{"bad protocol", func(c *Config) { f.secure("need")(c); c.ClientTLS.Protocol = "SSLv3" }, "unknown TLS protocol"},
		{"bad cipher", func(c *Config) { f.secure("need")(c); c.ClientTLS.CipherSuites = "TLS_NOPE" }, "unknown or unsupported cipher suite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.ClientPort, cfg.ClientPortAddress, cfg.DataDir, cfg.AdminEnabled = 0, "127.0.0.1", t.TempDir(), false
			tt.mutate(&cfg)
			cfg.SecureClientPort = 1 // never bound: Start fails first
			s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
			err := s.Start()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestTLSHandshakeStallDoesNotBlock checks a client that never completes
// its handshake holds up neither the accept loop nor Stop.
func TestTLSHandshakeStallDoesNotBlock(t *testing.T) {
	f := newTLSFixture(t)
	srv := startTLSServer(t, f.secure("need"))
	stalled, err := net.Dial("tcp", srv.SecureAddr().String())
	require.NoError(t, err)
	defer stalled.Close()
	s, err := dialTLS(srv.SecureAddr().String(), f.clientConfig(&f.client))
	require.NoError(t, err)
	defer s.nc.Close()
	require.True(t, strings.HasPrefix(s.whoAmI(t)[1], "x509:"))
}

// TestTLSQuorum starts a three-member ensemble with sslQuorum: Start
// returns only once a leader with a quorum exists, so the members elected
// it over TLS; a write on one member is then read on another.
func TestTLSQuorum(t *testing.T) {
	f := newTLSFixture(t)
	servers, _ := startEnsemble(t, 3, func(cfg *Config) {
		cfg.SSLQuorum = true
		cfg.QuorumTLS = TLSSettings{KeyStoreLocation: f.serverKS, TrustStoreLocation: f.trust}
	})
	for _, s := range servers {
		require.NotNil(t, s.quorumTLS)
	}
	a, b := dial(t, servers[0]), dial(t, servers[1])
	_, err := a.Call(jute.OpCreate, &jute.CreateRequest{Path: "/q", Data: []byte("over tls"),
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, &jute.CreateResponse{})
	require.NoError(t, err)
	var sr jute.PathRequest
	sr.Path = "/q"
	_, err = b.Call(jute.OpSync, &sr, &jute.PathRequest{})
	require.NoError(t, err)
	var gr jute.GetDataResponse
	hdr, err := b.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/q"}, &gr)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	require.Equal(t, "over tls", string(gr.Data))
}
