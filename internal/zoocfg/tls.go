package zoocfg

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// TLS configuration, read from ZooKeeper's own zoo.cfg keys:
//
//	secureClientPort, secureClientPortAddress   the TLS client listener
//	ssl.keyStore.{location,password,passwordPath,type}
//	ssl.trustStore.{location,password,passwordPath,type}
//	ssl.clientAuth (none, want, need; default need)
//	ssl.protocol (default TLSv1.2), ssl.enabledProtocols, ssl.ciphersuites
//	sslQuorum=true and the same keys under ssl.quorum. for the peer port
//
// As in ZooKeeper, the ssl.quorum.* keys do not fall back to ssl.*: a
// quorum over TLS needs its own key store (it may name the same files).
// Every key is also accepted with the "zookeeper." prefix of its Java system
// property. Stores are PEM files (a key store holds the private key, PKCS#8,
// optionally encrypted with PBES2 and the store's password, and its
// certificate chain; a trust store holds certificates); JKS, PKCS12 and
// BCFKS stores are refused at start with a clear error.

// TLSSettings are one side's ssl.* keys (clients or quorum), as written.
type TLSSettings struct {
	KeyStoreLocation     string
	KeyStorePassword     string
	KeyStoreType         string // PEM; "" = from the file name
	TrustStoreLocation   string
	TrustStorePassword   string
	TrustStoreType       string
	ClientAuth           string // none, want, need; "" = need
	Protocol             string // "" = TLSv1.2
	EnabledProtocols     string // comma-separated; "" = Protocol alone
	CipherSuites         string // comma-separated IANA names; "" = ZooKeeper's defaults
	HostnameVerification string // "" = true
}

// x509ProviderClass is the class authProvider.x509 names in ZooKeeper.
const x509ProviderClass = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"

// defaultCipherSuites are ZooKeeper's defaults for TLS 1.2 (Java 9+),
// without its two CBC suites, which Go implements but flags as insecure.
var defaultCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
}

// tlsVersions maps Java's protocol names to Go's versions.
var tlsVersions = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// setTLSKey handles the TLS keys of zoo.cfg; ok is false for other keys.
func (c *Config) setTLSKey(key, value string, log zerolog.Logger) (ok bool, err error) {
	key = strings.TrimPrefix(key, "zookeeper.")
	switch key {
	case "secureClientPort":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 65535 {
			return true, fmt.Errorf("must be a port number, got %q", value)
		}
		c.SecureClientPort = n
		return true, nil
	case "secureClientPortAddress":
		c.SecureClientPortAddress = value
		return true, nil
	case "sslQuorum":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return true, fmt.Errorf("must be true or false, got %q", value)
		}
		c.SSLQuorum = b
		return true, nil
	case "authProvider.x509":
		if value != x509ProviderClass {
			return true, fmt.Errorf("zkraft only has %s", x509ProviderClass)
		}
		c.X509AuthProvider = true
		return true, nil
	case "X509AuthenticationProvider.superUser":
		c.X509SuperUser = value
		return true, nil
	case "serverCnxnFactory", "clientCnxnSocket":
		// Netty or NIO: zkraft has one network layer, with TLS on the
		// secure port whichever is named.
		return true, nil
	case "client.portUnification", "sslQuorumReloadCertFiles", "client.certReload", "portUnification":
		if b, _ := strconv.ParseBool(value); b {
			log.Warn().Str("key", key).Msg("not supported by zkraft, ignored")
		}
		return true, nil
	}
	if rest, found := strings.CutPrefix(key, "ssl.quorum."); found {
		return true, c.QuorumTLS.set(rest, value, log)
	}
	if rest, found := strings.CutPrefix(key, "ssl."); found {
		return true, c.ClientTLS.set(rest, value, log)
	}
	return false, nil
}

func (ts *TLSSettings) set(key, value string, log zerolog.Logger) error {
	switch key {
	case "keyStore.location":
		ts.KeyStoreLocation = value
	case "keyStore.password":
		ts.KeyStorePassword = value
	case "keyStore.passwordPath", "trustStore.passwordPath":
		pw, err := readPasswordFile(value)
		if err != nil {
			return err
		}
		if key == "keyStore.passwordPath" {
			ts.KeyStorePassword = pw
		} else {
			ts.TrustStorePassword = pw
		}
	case "keyStore.type":
		ts.KeyStoreType = value
	case "trustStore.location":
		ts.TrustStoreLocation = value
	case "trustStore.password":
		ts.TrustStorePassword = value
	case "trustStore.type":
		ts.TrustStoreType = value
	case "clientAuth":
		if _, err := parseClientAuth(value); err != nil {
			return err
		}
		ts.ClientAuth = value
	case "protocol":
		ts.Protocol = value
	case "enabledProtocols":
		ts.EnabledProtocols = value
	case "ciphersuites":
		ts.CipherSuites = value
	case "hostnameVerification":
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		ts.HostnameVerification = value
	case "crl", "ocsp":
		if b, _ := strconv.ParseBool(value); b {
			log.Warn().Str("key", "ssl."+key).Msg("certificate revocation checks are not supported by zkraft, ignored")
		}
	case "handshakeDetectionTimeoutMillis", "authProvider":
		// Port unification is not supported; x509 is the only TLS provider.
	case "context.supplier.class":
		return errors.New("custom SSLContext suppliers are Java classes: not supported by zkraft")
	default:
		log.Warn().Str("key", "ssl."+key).Msg("unknown TLS config key ignored")
	}
	return nil
}

// resolveClientPorts applies ZooKeeper's rule after Load: a zoo.cfg with a
// secureClientPort and no clientPort serves TLS clients only.
func (c *Config) resolveClientPorts() {
	if c.SecureClientPort > 0 && !c.clientPortSet {
		c.ClientPort = -1
	}
}

// X509Enabled reports whether x509 identities exist on this server: the
// x509 scheme is then valid in ACLs. zkraft's secure port always
// authenticates client certificates, so a secure port turns it on as
// authProvider.x509 does.
func (c *Config) X509Enabled() bool { return c.X509AuthProvider || c.SecureClientPort > 0 }

// SecureClientAddr is where the TLS client listener binds: the secure
// address, else clientPortAddress, else all interfaces.
func (c *Config) SecureClientAddr() string {
	host := c.SecureClientPortAddress
	if host == "" {
		host = c.ClientPortAddress
	}
	return net.JoinHostPort(host, strconv.Itoa(c.SecureClientPort))
}

func parseClientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "need":
		return tls.RequireAndVerifyClientCert, nil
	case "want":
		return tls.VerifyClientCertIfGiven, nil
	case "none":
		return tls.NoClientCert, nil
	}
	return 0, fmt.Errorf("clientAuth must be none, want or need, got %q", v)
}

// versions returns the TLS version range of the protocol keys.
func (ts TLSSettings) versions() (lo, hi uint16, err error) {
	protocol := ts.Protocol
	if protocol == "" {
		protocol = "TLSv1.2"
	}
	names := []string{protocol}
	if ts.EnabledProtocols != "" {
		names = SplitList(ts.EnabledProtocols)
	}
	for _, n := range names {
		var a, b uint16
		if n == "TLS" {
			a, b = tls.VersionTLS12, tls.VersionTLS13
		} else if v, ok := tlsVersions[n]; ok {
			a, b = v, v
		} else {
			return 0, 0, fmt.Errorf("unknown TLS protocol %q (want TLSv1.2 or TLSv1.3)", n)
		}
		if lo == 0 || a < lo {
			lo = a
		}
		hi = max(hi, b)
	}
	return lo, hi, nil
}

// cipherSuites returns the TLS 1.2 suites of ssl.ciphersuites.
func (ts TLSSettings) cipherSuites() ([]uint16, error) {
	if ts.CipherSuites == "" {
		return defaultCipherSuites, nil
	}
	byName := map[string]uint16{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[cs.Name] = cs.ID
	}
	var out []uint16
	for _, n := range SplitList(ts.CipherSuites) {
		id, ok := byName[n]
		if !ok {
			if strings.HasPrefix(n, "TLS_AES_") || strings.HasPrefix(n, "TLS_CHACHA20_") {
				continue // TLS 1.3 suites: always on in Go
			}
			return nil, fmt.Errorf("unknown or unsupported cipher suite %q", n)
		}
		out = append(out, id)
	}
	return out, nil
}

func (ts TLSSettings) hostnameVerification() bool {
	b, err := strconv.ParseBool(ts.HostnameVerification)
	return err != nil || b
}

// TLSParams are one side's TLS settings parsed into the values crypto/tls
// takes. The key and trust stores stay paths: the server reads them at start.
type TLSParams struct {
	ClientAuth     tls.ClientAuthType
	MinVersion     uint16
	MaxVersion     uint16
	CipherSuites   []uint16 // TLS 1.2 suites; TLS 1.3 suites are always on in Go
	VerifyHostname bool     // quorum only: check each member's certificate against its address
}

// Parse turns the settings' strings into TLSParams. An error names the key
// without its ssl. or ssl.quorum. prefix ("clientAuth: ...", "protocol: ...",
// "ciphersuites: ..."), in that order of checking.
func (ts TLSSettings) Parse() (TLSParams, error) {
	var p TLSParams
	var err error
	if p.ClientAuth, err = parseClientAuth(ts.ClientAuth); err != nil {
		return p, fmt.Errorf("clientAuth: %w", err)
	}
	if p.MinVersion, p.MaxVersion, err = ts.versions(); err != nil {
		return p, fmt.Errorf("protocol: %w", err)
	}
	if p.CipherSuites, err = ts.cipherSuites(); err != nil {
		return p, fmt.Errorf("ciphersuites: %w", err)
	}
	p.VerifyHostname = ts.hostnameVerification()
	return p, nil
}

// readPasswordFile reads a *.passwordPath file; a final line break is not
// part of the password.
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// SplitList splits a comma- or newline-separated value, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
