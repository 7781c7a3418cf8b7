package znode

import (
	"crypto/sha1"
	"encoding/base64"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/jute"
)

// ACL schemes zkraft knows.
const (
	schemeWorld  = "world"
	schemeAuth   = "auth"
	schemeDigest = "digest"
	schemeIP     = "ip"
	schemeSuper  = "super"
	schemeX509   = "x509"
	schemeSASL   = "sasl"
	idAnyone     = "anyone"
)

// openACL is ZooDefs.Ids.OPEN_ACL_UNSAFE's single entry.
var openEntry = jute.ACL{Perms: jute.PermAll, ID: jute.Id{Scheme: schemeWorld, ID: idAnyone}}

// CheckACL reports whether ids may do perm on a node with acl
// (ZooKeeperServer.checkACL): an empty acl allows everything; an id with
// scheme "super" allows everything; otherwise some entry must carry a bit of
// perm and match one of ids: world:anyone matches all, digest and x509 ids
// match exactly, ip entries match addresses with an optional /bits prefix (IPv4
// and IPv6), sasl entries match the same name or the sasl id "super"
// (SASLAuthenticationProvider.matches).
func CheckACL(acl []jute.ACL, perm int32, ids []jute.Id) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == schemeSuper {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == schemeWorld && a.ID.ID == idAnyone {
			return true
		}
		for _, id := range ids {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			switch id.Scheme {
			case schemeDigest, schemeX509:
				if id.ID == a.ID.ID {
					return true
				}
			case schemeIP:
				if ipMatches(id.ID, a.ID.ID) {
					return true
				}
			case schemeSASL:
				if id.ID == a.ID.ID || id.ID == "super" {
					return true
				}
			}
		}
	}
	return false
}

// DigestID returns the digest-scheme id of "user:password" as ZooKeeper's
// DigestAuthenticationProvider.generateDigest does: the user (the text before
// the first ':') + ":" + base64(sha1(userColonPassword)).
func DigestID(userColonPassword string) string {
	user, _, _ := strings.Cut(userColonPassword, ":")
	sum := sha1.Sum([]byte(userColonPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// fixupACL validates acl for create/setACL and expands the "auth" scheme
// (PrepRequestProcessor.fixupACL). Duplicates are removed first (before
// expansion, as ZooKeeper does). It returns false for an invalid list.
// The result never aliases acl, so the caller's slice may be reused.
func fixupACL(acl []jute.ACL, auth []jute.Id, open []jute.ACL, opts Options) ([]jute.ACL, bool) {
	if len(acl) == 0 {
		return nil, false
	}
	if len(acl) == 1 && acl[0] == openEntry {
		return open, true // shared: stored ACLs are never mutated
	}
	uniq := make([]jute.ACL, 0, len(acl))
	for _, a := range acl {
		if !slices.Contains(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	out := uniq[:0:0]
	for _, a := range uniq {
		switch a.ID.Scheme {
		case schemeWorld:
			if a.ID.ID != idAnyone {
				return nil, false
			}
		case schemeAuth:
			found := false
			for _, id := range auth {
				// Ids of the providers that authenticate (isAuthenticated).
				if id.Scheme == schemeDigest || (opts.X509Enabled && id.Scheme == schemeX509) ||
					(opts.SASLEnabled && id.Scheme == schemeSASL) {
					out = append(out, jute.ACL{Perms: a.Perms, ID: id})
					found = true
				}
			}
			if !found {
				return nil, false
			}
			continue
		case schemeDigest:
			if !validDigestID(a.ID.ID) {
				return nil, false
			}
		case schemeIP:
			if !validIPID(a.ID.ID) {
				return nil, false
			}
		case schemeX509:
			if !opts.X509Enabled || !validDN(a.ID.ID) {
				return nil, false
			}
		case schemeSASL:
			if !opts.SASLEnabled || !validSASLID(a.ID.ID) {
				return nil, false
			}
		default:
			return nil, false
		}
		out = append(out, a)
	}
	return out, true
}

// validDigestID is DigestAuthenticationProvider.isValid: Java's
// id.split(":").length == 2, where split drops trailing empty strings.
func validDigestID(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// validSASLID is SASLAuthenticationProvider.isValid: the id parses as a
// Kerberos name (KerberosName's constructor): it either matches
// "service[/host]@realm" with no '/' or '@' inside the parts, or holds no '@'.
func validSASLID(id string) bool {
	if !strings.Contains(id, "@") {
		return true
	}
	name, realm, _ := strings.Cut(id, "@")
	if strings.Contains(realm, "@") || strings.Contains(realm, "/") {
		return false
	}
	service, host, _ := strings.Cut(name, "/")
	return !strings.Contains(service, "@") && !strings.Contains(host, "/")
}

// validIPID is IPAuthenticationProvider.isValid as in ZooKeeper 3.8.0: an
// IPv4 address with an optional /bits suffix. 3.8.0 refuses IPv6 ACL ids
// (InvalidACL), and so does zkraft; matching still understands IPv6.
func validIPID(id string) bool {
	addr, _, ok := parseIPExpr(id)
	return ok && len(addr) == 4
}

// parseIPExpr parses "addr[/bits]".
func parseIPExpr(expr string) (addr []byte, bits int, ok bool) {
	a, b, hasBits := strings.Cut(expr, "/")
	addr = addrBytes(a)
	if addr == nil {
		return nil, 0, false
	}
	bits = len(addr) * 8
	if hasBits {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 || n > len(addr)*8 {
			return nil, 0, false
		}
		bits = n
	}
	return addr, bits, true
}

// ipMatches is IPAuthenticationProvider.matches: the caller's address id
// against the ACL expression.
func ipMatches(id, expr string) bool {
	want, bits, ok := parseIPExpr(expr)
	if !ok {
		return false
	}
	got := addrBytes(id)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		m := byte(0xff)
		switch {
		case bits >= (i+1)*8:
		case bits <= i*8:
			m = 0
		default:
			m = byte(0xff << (8 - (bits - i*8)))
		}
		if got[i]&m != want[i]&m {
			return false
		}
	}
	return true
}

// addrBytes parses an IPv4 address the way Java's Integer.parseInt-based
// v4addr2Bytes does (leading zeros and '+' allowed), or an IPv6 address.
func addrBytes(s string) []byte {
	if parts := strings.Split(s, "."); len(parts) == 4 && !strings.Contains(s, ":") {
		b := make([]byte, 4)
		for i, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil || v < 0 || v > 255 {
				return nil
			}
			b[i] = byte(v)
		}
		return b
	}
	if !strings.Contains(s, ":") {
		return nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return nil
	}
	b := a.As16()
	return b[:]
}

// validDN is a light form of X509AuthenticationProvider.isValid (an X.500
// name): non-empty, each comma-separated part an attribute=value pair.
func validDN(dn string) bool {
	if dn == "" {
		return false
	}
	for _, part := range strings.Split(dn, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" || v == "" {
			return false
		}
	}
	return true
}
