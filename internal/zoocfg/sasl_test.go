package zoocfg

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestSASLConfigKeys(t *testing.T) {
	const provider = "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
	tests := []struct {
		name    string
		file    string
		want    SASLSettings
		enforce []string
	}{
		{"none", "clientPort=2181\n", SASLSettings{ServerSection: "Server"}, nil},
		{"zookeeper spellings", provider + "java.security.auth.login.config=/etc/zk/jaas.conf\n" +
			"zookeeper.sessionRequireClientSASLAuth=true\nzookeeper.superUser=admin\nsuperUser.2=root\nzookeeper.sasl.serverconfig=ZkServer\n" +
			"zookeeper.allowSaslFailedClients=true\nzookeeper.SASLAuthenticationProvider.superPassword=pw\n",
			SASLSettings{AuthProvider: true, JAASConfig: "/etc/zk/jaas.conf", ServerSection: "ZkServer", SuperUsers: []string{"admin", "root"},
				SuperPassword: "pw", AllowFailedClients: true, RequireClientAuth: true}, []string{"sasl"}},
		{"zkraft key, enforce.auth form", provider + "zkraft.sasl.jaasConfig=/j\nenforce.auth.enabled=true\nenforce.auth.schemes= sasl , digest\n",
			SASLSettings{AuthProvider: true, JAASConfig: "/j", ServerSection: "Server", EnforceAuthEnabled: true,
				EnforceAuthSchemes: []string{"sasl", "digest"}}, []string{"sasl", "digest"}},
		{"require overrides enforce.auth", provider + "sessionRequireClientSASLAuth=true\nenforce.auth.enabled=true\nenforce.auth.schemes=digest\n",
			SASLSettings{AuthProvider: true, ServerSection: "Server", RequireClientAuth: true, EnforceAuthEnabled: true,
				EnforceAuthSchemes: []string{"digest"}}, []string{"sasl"}},
		{"schemes without enabled", "enforce.auth.schemes=digest\n",
			SASLSettings{ServerSection: "Server", EnforceAuthSchemes: []string{"digest"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeFile(t, "zoo.cfg", []byte(tt.file)), zerolog.New(zerolog.NewTestWriter(t)))
			require.NoError(t, err)
			require.Equal(t, tt.want, c.SASL)
			require.Equal(t, tt.enforce, c.EnforcedAuthSchemes())
			require.Equal(t, tt.want.AuthProvider, c.SASLEnabled())
		})
	}
	for _, bad := range []string{
		"authProvider.sasl=com.example.Other",
		"sessionRequireClientSASLAuth=yes",
		"sessionRequireClientSASLAuth=true",                    // no sasl provider
		"enforce.auth.enabled=true",                            // no schemes
		"enforce.auth.enabled=true\nenforce.auth.schemes=x509", // no x509 provider
		"zookeeper.sasl.serverconfig=",
	} {
		_, err := Load(writeFile(t, "zoo.cfg", []byte(bad+"\n")), zerolog.Nop())
		require.Error(t, err, bad)
	}
}
