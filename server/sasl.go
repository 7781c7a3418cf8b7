package server

import (
	"crypto/rand"
	"fmt"
	"slices"

	"github.com/zkraft/zkraft/internal/sasl"
	"github.com/zkraft/zkraft/jute"
)

// saslLogin is the server's SASL login (ZooKeeper's JAAS "Server" section):
// the DIGEST-MD5 users. Read once at Start; nil when no JAAS file is
// configured, and then SASL requests get ZooKeeper's answer for a server
// without a login (Ok, no token).
type saslLogin struct {
	users map[string]string
}

// setupSASL reads the JAAS file named by java.security.auth.login.config
// (or zkraft.sasl.jaasConfig). Like ZooKeeper, a named file without the
// server section stops the server.
func (s *Server) setupSASL() error {
	sc := s.cfg.SASL
	if sc.JAASConfig == "" {
		return nil
	}
	j, err := sasl.LoadJAAS(sc.JAASConfig)
	if err != nil {
		return fmt.Errorf("sasl: %w", err)
	}
	section := sc.ServerSection
	if section == "" {
		section = "Server"
	}
	users, err := j.Users(section)
	if err != nil {
		return fmt.Errorf("sasl: %s: %w", sc.JAASConfig, err)
	}
	if sc.SuperPassword != "" {
		users["super"] = sc.SuperPassword
	}
	for _, m := range j[section] {
		if m.Class == "com.sun.security.auth.module.Krb5LoginModule" {
			s.log.Warn().Str("section", section).Msg("sasl: Kerberos (GSSAPI) is not supported by zkraft; only DIGEST-MD5 users (user_<name>) are served")
		}
	}
	s.sasl = &saslLogin{users: users}
	s.log.Info().Str("jaas", sc.JAASConfig).Str("section", section).Int("users", len(users)).Msg("sasl: DIGEST-MD5 login configured")
	return nil
}

// handleSASL answers one SASL token (opcode 102) as ZooKeeperServer.processSasl
// does. On success the connection gets the id sasl:<user> (and super when
// the user is a zookeeper.superUser); writes carry it in their entries like
// every auth id. A failed exchange is answered AuthFailed, or
// SessionClosedRequireAuth when SASL is enforced, and closes the
// connection, unless allowSaslFailedClients (and no enforcement) keeps it.
// Reader goroutine only.
func (c *conn) handleSASL(xid int32, body []byte) bool {
	var req jute.BufferRecord
	if err := jute.Unmarshal(body, &req); err != nil {
		c.logger().Warn().Err(err).Msg("malformed sasl request, closing connection")
		return false
	}
	if req.Token == nil {
		// A null token (length -1): ZooKeeper's processSasl fails on it
		// before anything else and the connection closes, SASL or not.
		c.logger().Warn().Msg("sasl request with a null token, closing connection")
		return false
	}
	login := c.srv.sasl
	if login == nil {
		// No SASL login: ZooKeeper answers Ok with a null token, zxid 0.
		return c.enqueue(&item{build: func(*item) ([]byte, bool) {
			return c.reply(xid, 0, 0, &jute.BufferRecord{}), false
		}})
	}
	if c.saslServer == nil {
		c.saslServer = sasl.NewDigestMD5Server(func(u string) (string, bool) {
			p, ok := login.users[u]
			return p, ok
		}, rand.Reader)
	}
	token, err := c.saslServer.Step(req.Token)
	if err != nil {
		c.logger().Warn().Err(err).Str("session", sessionHex(c.sessionID)).Msg("client failed to SASL authenticate")
		required := slices.Contains(c.srv.cfg.EnforcedAuthSchemes(), "sasl")
		if c.srv.cfg.SASL.AllowFailedClients && !required {
			token = nil // keeps the connection, unauthenticated
		} else {
			code := jute.ErrAuthFailed
			if required {
				code = jute.ErrSessionClosedRequireAuth
			}
			c.enqueue(&item{build: func(*item) ([]byte, bool) {
				// The null token is written with the error: the Java
				// client reads it before it looks at the code.
				return c.replyWithBody(xid, 0, code, &jute.BufferRecord{}), true
			}})
			c.awaitLastReply()
			return false
		}
	}
	if c.saslServer.Complete() && err == nil {
		user := c.saslServer.User()
		added := []jute.Id{{Scheme: "sasl", ID: user}}
		if slices.Contains(c.srv.cfg.SASL.SuperUsers, user) {
			added = append(added, jute.Id{Scheme: "super", ID: ""})
		}
		c.addAuthIDs(added)
		c.logger().Info().Str("session", sessionHex(c.sessionID)).Str("sasl", user).Msg("client SASL authenticated")
	}
	rec := &jute.BufferRecord{Token: token}
	return c.enqueue(&item{build: func(*item) ([]byte, bool) {
		return c.reply(xid, 0, 0, rec), false
	}})
}

// authEnforced reports whether the connection may send requests other than
// auth and sasl: enforcement is off, or it has an id of an enforced scheme
// (AuthenticationHelper.enforceAuthentication).
func (c *conn) authEnforced() bool {
	schemes := c.srv.cfg.EnforcedAuthSchemes()
	if len(schemes) == 0 {
		return true
	}
	for _, id := range *c.authIDs.Load() {
		if slices.Contains(schemes, id.Scheme) {
			return true
		}
	}
	return false
}

// refuseUnauthenticated answers a request of a connection that did not
// authenticate as enforcement requires: SessionClosedRequireAuth with zxid
// 0 and no body, then the connection closes (the session stays until it
// expires, as in ZooKeeper).
func (c *conn) refuseUnauthenticated(xid int32) bool {
	c.logger().Warn().Str("session", sessionHex(c.sessionID)).Strs("required", c.srv.cfg.EnforcedAuthSchemes()).
		Msg("client has not authenticated with a required scheme, closing connection")
	c.enqueue(&item{build: func(*item) ([]byte, bool) {
		return c.reply(xid, 0, jute.ErrSessionClosedRequireAuth, nil), true
	}})
	c.awaitLastReply()
	return false
}
