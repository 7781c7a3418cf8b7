package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/sasl"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

const testJAAS = `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_alice="alice-secret" user_super="from-file"; };`

func writeTestJAAS(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jaas.conf")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// saslExchange runs a DIGEST-MD5 exchange on c and returns the final reply's
// header and token.
func saslExchange(t *testing.T, c *zktest.RawConn, user, password string) (jute.ReplyHeader, []byte) {
	t.Helper()
	var ch jute.BufferRecord
	hdr, err := c.Call(jute.OpSASL, &jute.BufferRecord{Token: []byte{}}, &ch)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	tok, _, err := sasl.ClientResponse(ch.Token, user, password, "Y25vbmNl")
	require.NoError(t, err)
	var out jute.BufferRecord
	hdr, err = c.Call(jute.OpSASL, &jute.BufferRecord{Token: tok}, &out)
	require.NoError(t, err)
	return hdr, out.Token
}

func saslConfig(jaas string) func(*Config) {
	return func(c *Config) {
		c.SASL.AuthProvider = true
		c.SASL.JAASConfig = jaas
		c.SASL.ServerSection = "Server"
	}
}

// TestSASLStartNeedsTheJAASSection: a named JAAS file that is missing,
// malformed or without the section stops the start, as in ZooKeeper.
func TestSASLStartNeedsTheJAASSection(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"missing file":    saslConfig(filepath.Join(t.TempDir(), "nope.conf")),
		"malformed":       saslConfig(writeTestJAAS(t, "Server {")),
		"missing section": saslConfig(writeTestJAAS(t, `Client { m required username="a"; };`)),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Default()
			cfg.ClientPort, cfg.ClientPortAddress, cfg.DataDir, cfg.AdminEnabled = 0, "127.0.0.1", t.TempDir(), false
			mutate(&cfg)
			s := New(cfg, zerolog.Nop())
			err := s.Start()
			require.ErrorContains(t, err, "sasl")
		})
	}
}

// TestSASLSuperUserAndPassword: superPassword replaces the file's password
// of the user super, and a superUser gets the super id (passes any ACL).
func TestSASLSuperUserAndPassword(t *testing.T) {
	s := startServer(t, func(c *Config) {
		saslConfig(writeTestJAAS(t, testJAAS))(c)
		c.SASL.SuperPassword = "from-cfg"
		c.SASL.SuperUsers = []string{"alice"}
	})
	owner := dial(t, s)
	hdr, err := owner.Call(jute.OpCreate, &jute.CreateRequest{Path: "/closed",
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "sasl", ID: "nobody"}}}}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)

	c := dial(t, s)
	hdr, _ = saslExchange(t, c, "alice", "alice-secret")
	require.Zero(t, hdr.Err)
	hdr, err = c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/closed"}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err, "a superUser passes every ACL")

	bad := dial(t, s)
	hdr, _ = saslExchange(t, bad, "super", "from-file")
	require.Equal(t, jute.ErrAuthFailed, hdr.Err, "superPassword replaces the file's")
	require.NoError(t, bad.ExpectClosed(5*time.Second))

	sup := dial(t, s)
	hdr, _ = saslExchange(t, sup, "super", "from-cfg")
	require.Zero(t, hdr.Err)
	// The sasl id "super" matches every sasl ACL (SASLAuthenticationProvider.matches).
	hdr, err = sup.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/closed"}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
}

// TestSASLAllowFailedClients: with allowSaslFailedClients a failed exchange
// is answered Ok with no token and the connection stays, unauthenticated;
// enforcement overrides it.
func TestSASLAllowFailedClients(t *testing.T) {
	for _, enforced := range []bool{false, true} {
		s := startServer(t, func(c *Config) {
			saslConfig(writeTestJAAS(t, testJAAS))(c)
			c.SASL.AllowFailedClients = true
			c.SASL.RequireClientAuth = enforced
		})
		c := dial(t, s)
		hdr, tok := saslExchange(t, c, "alice", "wrong")
		if enforced {
			require.Equal(t, jute.ErrSessionClosedRequireAuth, hdr.Err)
			require.NoError(t, c.ExpectClosed(5*time.Second))
			continue
		}
		require.Zero(t, hdr.Err)
		require.Nil(t, tok)
		// Still served, and not as alice: an "auth" ACL has no id to expand to.
		hdr, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/a",
			ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "auth"}}}}, nil)
		require.NoError(t, err)
		require.Equal(t, jute.ErrInvalidACL, hdr.Err)
	}
}

// TestEnforceDigestScheme: enforce.auth.schemes=digest lets a connection
// through once it added a digest id, and refuses it before.
func TestEnforceDigestScheme(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.SASL.EnforceAuthEnabled = true
		c.SASL.EnforceAuthSchemes = []string{"digest"}
	})
	c := dial(t, s)
	require.NoError(t, c.Send(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}))
	hdr, err := c.ReadReply(jute.XidAuth, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	hdr, err = c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)

	other := dial(t, s)
	hdr, err = other.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, nil)
	require.NoError(t, err)
	require.Equal(t, jute.ErrSessionClosedRequireAuth, hdr.Err)
	require.NoError(t, other.ExpectClosed(5*time.Second))
}
