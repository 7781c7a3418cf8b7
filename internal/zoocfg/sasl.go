package zoocfg

// The SASL keys: ZooKeeper's authProvider.sasl and SASL system properties,
// the JAAS file (java.security.auth.login.config, or zkraft's own
// zkraft.sasl.jaasConfig) and authentication enforcement.

import (
	"fmt"
	"strconv"
	"strings"
)

// saslProviderClass is the class authProvider.sasl names in ZooKeeper.
const saslProviderClass = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// SASLSettings are the SASL keys of zoo.cfg. ZooKeeper reads most of them
// as system properties (zoo.cfg keys it does not know become
// "zookeeper."+key properties); zkraft reads them from zoo.cfg under either
// spelling. The JAAS file, which a JVM takes from
// -Djava.security.auth.login.config, is named by the zoo.cfg key
// java.security.auth.login.config or zkraft.sasl.jaasConfig.
type SASLSettings struct {
	// AuthProvider: authProvider.sasl names SASLAuthenticationProvider, so
	// the sasl scheme is valid in ACLs.
	AuthProvider bool
	// JAASConfig is the JAAS file whose ServerSection lists the DIGEST-MD5
	// users (user_<name>="<password>"). Empty: no SASL login, and SASL
	// requests are answered as by a ZooKeeper without one.
	JAASConfig    string
	ServerSection string // zookeeper.sasl.serverconfig (default "Server")
	// SuperUsers are zookeeper.superUser and zookeeper.superUser.<suffix>:
	// SASL users that also get the super id (ZooKeeper's isSaslSuperUser).
	SuperUsers []string
	// SuperPassword is zookeeper.SASLAuthenticationProvider.superPassword:
	// the password of the user "super", over the JAAS file's.
	SuperPassword string
	// AllowFailedClients is zookeeper.allowSaslFailedClients: a failed SASL
	// exchange keeps the connection (unauthenticated) instead of closing it.
	AllowFailedClients bool
	// RequireClientAuth is zookeeper.sessionRequireClientSASLAuth: the same
	// as EnforceAuthEnabled with EnforceAuthSchemes [sasl], which it overrides.
	RequireClientAuth bool
	// EnforceAuthEnabled and EnforceAuthSchemes are zookeeper.enforce.auth.enabled
	// and zookeeper.enforce.auth.schemes (comma separated): a connection
	// without an id of one of the schemes has every request but auth and
	// sasl refused with SessionClosedRequireAuth (-124) and is closed.
	EnforceAuthEnabled bool
	EnforceAuthSchemes []string
}

// setSASLKey handles the SASL keys of zoo.cfg; ok is false for other keys.
func (c *Config) setSASLKey(key, value string) (ok bool, err error) {
	s := &c.SASL
	parseBool := func(dst *bool) (bool, error) {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return true, fmt.Errorf("must be true or false, got %q", value)
		}
		*dst = b
		return true, nil
	}
	switch key {
	case "java.security.auth.login.config", "zkraft.sasl.jaasConfig":
		s.JAASConfig = value
		return true, nil
	}
	bare := strings.TrimPrefix(key, "zookeeper.")
	if suffix, ok := strings.CutPrefix(bare, "superUser."); ok && suffix != "" {
		s.SuperUsers = append(s.SuperUsers, value)
		return true, nil
	}
	switch bare {
	case "authProvider.sasl":
		if value != saslProviderClass {
			return true, fmt.Errorf("zkraft only has %s", saslProviderClass)
		}
		s.AuthProvider = true
		return true, nil
	case "sasl.serverconfig":
		if value == "" {
			return true, fmt.Errorf("must name a JAAS section")
		}
		s.ServerSection = value
		return true, nil
	case "superUser":
		s.SuperUsers = append(s.SuperUsers, value)
		return true, nil
	case "SASLAuthenticationProvider.superPassword":
		s.SuperPassword = value
		return true, nil
	case "allowSaslFailedClients":
		return parseBool(&s.AllowFailedClients)
	case "sessionRequireClientSASLAuth":
		return parseBool(&s.RequireClientAuth)
	case "enforce.auth.enabled":
		return parseBool(&s.EnforceAuthEnabled)
	case "enforce.auth.schemes":
		s.EnforceAuthSchemes = nil
		for _, f := range strings.Split(value, ",") {
			if f = strings.TrimSpace(f); f != "" {
				s.EnforceAuthSchemes = append(s.EnforceAuthSchemes, f)
			}
		}
		return true, nil
	case "sasl.client", "kerberos.removeHostFromPrincipal", "kerberos.removeRealmFromPrincipal":
		return true, nil // client side, or Kerberos only
	}
	return false, nil
}

// SASLEnabled reports whether the sasl ACL scheme is valid (authProvider.sasl).
func (c *Config) SASLEnabled() bool { return c.SASL.AuthProvider }

// EnforcedAuthSchemes returns the schemes one of which every connection
// must have authenticated with before any request other than auth and
// sasl, as ZooKeeper's AuthenticationHelper decides them; nil when
// enforcement is off.
func (c *Config) EnforcedAuthSchemes() []string {
	if c.SASL.RequireClientAuth {
		return []string{"sasl"}
	}
	if c.SASL.EnforceAuthEnabled {
		return c.SASL.EnforceAuthSchemes
	}
	return nil
}

// checkAuthEnforcement refuses an enforcement ZooKeeper refuses to start
// with: no scheme, or a scheme with no provider.
func (c *Config) checkAuthEnforcement() error {
	if !c.SASL.RequireClientAuth && c.SASL.EnforceAuthEnabled && len(c.SASL.EnforceAuthSchemes) == 0 {
		return fmt.Errorf("enforce.auth.enabled is true: enforce.auth.schemes must be configured")
	}
	for _, s := range c.EnforcedAuthSchemes() {
		ok := s == "ip" || s == "digest" || (s == "x509" && c.X509Enabled()) || (s == "sasl" && c.SASLEnabled())
		if !ok {
			return fmt.Errorf("authentication scheme %s is not available (enforce.auth.schemes, sessionRequireClientSASLAuth; sasl needs authProvider.sasl)", s)
		}
	}
	return nil
}
