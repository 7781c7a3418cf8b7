package consensus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tlsCA issues certificates for these tests.
type tlsCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

func newTLSCA(t *testing.T, name string) *tlsCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &tlsCA{cert: cert, key: key, serial: 1}
}

// memberConfig returns a member's TLS config: its own certificate for
// 127.0.0.1 (and the host names dnsNames), this CA trusted both ways,
// client certificates required.
func (ca *tlsCA) memberConfig(t *testing.T, trust *tlsCA, name string, dnsNames ...string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(trust.cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}
}

// startTLSGroup starts members 1..len(cfgs) on loopback, member i with
// cfgs[i-1].
func startTLSGroup(t *testing.T, cfgs []*tls.Config) (map[uint64]*testNode, []Peer) {
	t.Helper()
	var peers []Peer
	lns := map[uint64]net.Listener{}
	for i := range cfgs {
		id := uint64(i + 1)
		lns[id] = listenLoopback(t)
		peers = append(peers, Peer{ID: id, Addr: lns[id].Addr().String()})
	}
	nodes := map[uint64]*testNode{}
	for i, cfg := range cfgs {
		id := uint64(i + 1)
		tr := NewTCPTransport(TCPConfig{ID: id, Listener: lns[id], Peers: peers, Logger: testLogger(t), TLS: cfg})
		nodes[id] = startTestNode(t, t.TempDir(), func(c *Config) {
			c.ID, c.Peers, c.Transport = id, peers, tr
		})
	}
	return nodes, peers
}

// waitAgreedLeader waits until the given members agree on a leader.
func waitAgreedLeader(t *testing.T, nodes map[uint64]*testNode, ids ...uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		lead := nodes[ids[0]].Status().Lead
		agree := lead != 0
		for _, id := range ids[1:] {
			agree = agree && nodes[id].Status().Lead == lead
		}
		if agree && nodes[lead] != nil && nodes[lead].IsLeader() {
			return lead
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("members %v did not agree on a leader", ids)
	return 0
}

func TestTLSTransportReplicates(t *testing.T) {
	ca := newTLSCA(t, "members CA")
	var cfgs []*tls.Config
	for i := 1; i <= 3; i++ {
		cfgs = append(cfgs, ca.memberConfig(t, ca, fmt.Sprintf("member%d", i)))
	}
	nodes, _ := startTLSGroup(t, cfgs)
	lead := waitAgreedLeader(t, nodes, 1, 2, 3)
	nodes[lead].proposeSeq(t, "tls", 10)
	for _, n := range nodes {
		n.sm.waitCount(t, 10)
	}
	want := nodes[lead].sm.state()
	for _, n := range nodes {
		require.Equal(t, want, n.sm.state())
	}
}

func TestTLSTransportRefusesForeignMember(t *testing.T) {
	ca := newTLSCA(t, "members CA")
	other := newTLSCA(t, "other CA")
	cfgs := []*tls.Config{
		ca.memberConfig(t, ca, "member1"),
		ca.memberConfig(t, ca, "member2"),
		other.memberConfig(t, ca, "intruder"), // trusts the members, is not trusted
	}
	nodes, peers := startTLSGroup(t, cfgs)
	lead := waitAgreedLeader(t, nodes, 1, 2)
	require.NotEqual(t, uint64(3), lead)
	nodes[lead].proposeSeq(t, "only-two", 5)
	nodes[1].sm.waitCount(t, 5)
	nodes[2].sm.waitCount(t, 5)

	// The intruder's own connection is refused at the handshake: the
	// member answers with an alert and closes.
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfgs[2]}
	c, err := d.Dial("tcp", peers[0].Addr)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "tls:")
	require.Empty(t, nodes[3].sm.state().datas, "the foreign member received entries")

	// A plain-TCP client is refused too, and the members keep replicating.
	nc, err := net.DialTimeout("tcp", peers[0].Addr, 5*time.Second)
	require.NoError(t, err)
	_, _ = nc.Write([]byte{0, 0, 0, 4, 1, 2, 3, 4})
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err)
	nc.Close()
	nodes[lead].proposeSeq(t, "after", 1)
	nodes[1].sm.waitCount(t, 6)
	nodes[2].sm.waitCount(t, 6)
}
