package zoocfg

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func TestTLSConfigKeys(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("s3cret\n"), 0o600))
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, c Config)
	}{
		{"secure only", "secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.keyStore.type=PEM\n" +
			"zookeeper.ssl.trustStore.location=/t.pem\nssl.clientAuth=want\nssl.protocol=TLSv1.3\n" +
			"ssl.enabledProtocols=TLSv1.2,TLSv1.3\nssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n" +
			"ssl.keyStore.passwordPath=" + pw + "\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n" +
			"authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n",
			func(t *testing.T, c Config) {
				require.Equal(t, -1, c.ClientPort)
				require.Equal(t, 2281, c.SecureClientPort)
				require.Equal(t, TLSSettings{KeyStoreLocation: "/k.pem", KeyStoreType: "PEM", KeyStorePassword: "s3cret",
					TrustStoreLocation: "/t.pem", ClientAuth: "want", Protocol: "TLSv1.3", EnabledProtocols: "TLSv1.2,TLSv1.3",
					CipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, c.ClientTLS)
				require.True(t, c.X509AuthProvider)
				require.True(t, c.X509Enabled())
				require.Equal(t, ":2281", c.SecureClientAddr())
			}},
		{"both ports, quorum keys apart", "clientPort=2181\nclientPortAddress=127.0.0.1\nsecureClientPort=2281\n" +
			"sslQuorum=true\nssl.quorum.keyStore.location=/q.pem\nssl.quorum.trustStore.location=/qt.pem\n" +
			"ssl.quorum.hostnameVerification=false\nssl.keyStore.location=/k.pem\n",
			func(t *testing.T, c Config) {
				require.Equal(t, 2181, c.ClientPort)
				require.True(t, c.SSLQuorum)
				require.Equal(t, TLSSettings{KeyStoreLocation: "/q.pem", TrustStoreLocation: "/qt.pem", HostnameVerification: "false"}, c.QuorumTLS)
				require.Equal(t, TLSSettings{KeyStoreLocation: "/k.pem"}, c.ClientTLS)
				require.Equal(t, "127.0.0.1:2281", c.SecureClientAddr())
			}},
		{"no tls", "clientPort=2181\n", func(t *testing.T, c Config) {
			require.Zero(t, c.SecureClientPort)
			require.False(t, c.X509Enabled())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "zoo.cfg", []byte(tt.file))
			c, err := Load(p, zerolog.New(zerolog.NewTestWriter(t)))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
	for _, bad := range []string{"ssl.clientAuth=sometimes", "sslQuorum=maybe", "secureClientPort=x",
		"authProvider.x509=com.example.Other", "ssl.context.supplier.class=com.example.Ctx"} {
		p := writeFile(t, "zoo.cfg", []byte(bad+"\n"))
		_, err := Load(p, zerolog.Nop())
		require.Error(t, err, bad)
	}
}

// TestTLSSettingsParse checks the typed values of the protocol, cipher
// suite, clientAuth and hostname keys, and the error of each bad one.
func TestTLSSettingsParse(t *testing.T) {
	tests := []struct {
		name    string
		ts      TLSSettings
		want    TLSParams
		wantErr string
	}{
		{name: "defaults", want: TLSParams{ClientAuth: tls.RequireAndVerifyClientCert,
			MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: defaultCipherSuites, VerifyHostname: true}},
		{name: "explicit", ts: TLSSettings{ClientAuth: "want", Protocol: "TLSv1.3", EnabledProtocols: "TLSv1.2, TLSv1.3",
			CipherSuites: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256", HostnameVerification: "false"},
			want: TLSParams{ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13,
				// Go lists TLS 1.3 suites by name too; crypto/tls ignores them here.
				CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_AES_128_GCM_SHA256}}},
		{name: "TLS means 1.2 to 1.3", ts: TLSSettings{ClientAuth: "none", Protocol: "TLS"},
			want: TLSParams{ClientAuth: tls.NoClientCert, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13,
				CipherSuites: defaultCipherSuites, VerifyHostname: true}},
		{name: "bad clientAuth", ts: TLSSettings{ClientAuth: "maybe"}, wantErr: `clientAuth: clientAuth must be none, want or need, got "maybe"`},
		{name: "bad protocol", ts: TLSSettings{Protocol: "SSLv3"}, wantErr: `protocol: unknown TLS protocol "SSLv3" (want TLSv1.2 or TLSv1.3)`},
		{name: "bad cipher", ts: TLSSettings{CipherSuites: "TLS_NOPE"}, wantErr: `ciphersuites: unknown or unsupported cipher suite "TLS_NOPE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ts.Parse()
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
