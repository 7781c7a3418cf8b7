package tls_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// python is Debian's interpreter, the one python3-kazoo is installed for.
const python = "/usr/bin/python3"

// suiteTimeout bounds one run of a suite (javac included).
const suiteTimeout = 120 * time.Second

// clientDN is the subject of the good client certificate as ZooKeeper's
// X509AuthenticationProvider names it (RFC 2253); otherDN the second one.
const (
	clientDN = "CN=zkclient,OU=compat,O=zkraft"
	otherDN  = "CN=zkother,OU=compat,O=zkraft"
)

// apacheNettyJars are the Netty jars NettyServerCnxnFactory needs (Debian's
// netty-all.jar is an empty aggregate).
var apacheNettyJars = []string{
	"netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver",
	"netty-transport", "netty-transport-native-epoll", "netty-transport-native-unix-common",
}

// apacheJars is zktest's Apache classpath plus Netty.
var apacheJars = []string{
	"zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-simple", "commons-cli", "metrics-core", "snappy-java",
}

// TestTLSSuites runs the Java client and kazoo suites against the secure
// client port of every target, both configured with the same PEM files.
func TestTLSSuites(t *testing.T) {
	javaSuite, err := filepath.Abs("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	pySuite, err := filepath.Abs("suite.py")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-c", "import kazoo.client").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
	var cp []string
	for _, j := range append(apacheJars, apacheNettyJars...) {
		p := "/usr/share/java/" + j + ".jar"
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("missing %s: run scripts/install-deps.sh (Debian packages zookeeper, libnetty-java): %v", p, err)
		}
		cp = append(cp, p)
	}
	t.Setenv(zktest.ApacheClasspathEnv, strings.Join(cp, ":"))

	dir := t.TempDir()
	writeCerts(t, dir)
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			securePort := freePort(t)
			srv := zktest.Start(t, target, zktest.Options{Extra: map[string]string{
				"secureClientPort":        strconv.Itoa(securePort),
				"serverCnxnFactory":       "org.apache.zookeeper.server.NettyServerCnxnFactory",
				"authProvider.x509":       "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
				"ssl.keyStore.location":   filepath.Join(dir, "server.pem"),
				"ssl.keyStore.type":       "PEM",
				"ssl.trustStore.location": filepath.Join(dir, "ca.pem"),
				"ssl.trustStore.type":     "PEM",
				"ssl.clientAuth":          "need",
			}})
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort))
			env := []string{"ZKTLS_DIR=" + dir, "ZKTLS_CLIENT_DN=" + clientDN, "ZKTLS_OTHER_DN=" + otherDN,
				"ZKTLS_PLAIN_ADDR=" + srv.Addr}
			t.Run("java", func(t *testing.T) {
				zktest.RunSuite(t, suiteTimeout, env, javaSuite, addr)
			})
			t.Run("kazoo", func(t *testing.T) {
				zktest.RunSuite(t, suiteTimeout, env, python, "-u", pySuite, addr)
			})
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeCerts writes into dir: ca.pem (the trust store of every party),
// server.pem (server key and certificate for 127.0.0.1), client.pem / client-key.pem / client-cert.pem
// (clientDN), other.pem / other-key.pem / other-cert.pem (otherDN), and
// bad.pem / bad-key.pem / bad-cert.pem signed by a CA nobody trusts
// (badca.pem).
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	ca := newCA(t, "zkraft compat CA")
	badCA := newCA(t, "untrusted CA")
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", ca.certPEM)
	write("badca.pem", badCA.certPEM)
	serverKey, serverCert := ca.issue(t, pkix.Name{CommonName: "127.0.0.1", Organization: []string{"zkraft"}})
	// Unencrypted: ZooKeeper 3.8 on Java 17 cannot read PBES2-encrypted PEM
	// keys (no PBES2 SecretKeyFactory), openssl's default encryption.
	write("server.pem", append(serverKey, serverCert...))
	for _, c := range []struct {
		prefix string
		ca     *certAuthority
		name   pkix.Name
	}{
		{"client", ca, pkix.Name{CommonName: "zkclient", OrganizationalUnit: []string{"compat"}, Organization: []string{"zkraft"}}},
		{"other", ca, pkix.Name{CommonName: "zkother", OrganizationalUnit: []string{"compat"}, Organization: []string{"zkraft"}}},
		{"bad", badCA, pkix.Name{CommonName: "zkclient", OrganizationalUnit: []string{"compat"}, Organization: []string{"zkraft"}}},
	} {
		key, cert := c.ca.issue(t, c.name)
		write(c.prefix+"-key.pem", key)
		write(c.prefix+"-cert.pem", cert)
		write(c.prefix+".pem", append(append([]byte(nil), key...), cert...))
	}
}

type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	serial  int64
}

func newCA(t *testing.T, name string) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certAuthority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}
}

// issue returns a PKCS#8 key PEM and a certificate PEM for name, valid for
// 127.0.0.1 and localhost, for servers and clients.
func (ca *certAuthority) issue(t *testing.T, name pkix.Name) (keyPEM, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: name,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
