package sasl

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ZooKeeper's DIGEST-MD5 names: the client's digest-uri is
// Protocol + "/" + Realm.
const (
	Protocol = "zookeeper"
	Realm    = "zk-sasl-md5"
)

// ErrAuthFailed is wrapped by every error of a failed exchange.
var ErrAuthFailed = errors.New("DIGEST-MD5 authentication failed")

// DigestMD5Server is the server side of one DIGEST-MD5 exchange: the
// first token (empty from ZooKeeper's client; anything else is ignored, as
// ZooKeeper 3.8 on Java 17 does) is answered with a challenge, the client's
// digest response with rspauth, which completes it.
type DigestMD5Server struct {
	lookup func(user string) (password string, ok bool)
	random io.Reader
	step   int // 0: expects the first token; 1: expects the digest response; 2: done or failed
	nonce  string
	user   string
	done   bool
}

// NewDigestMD5Server returns an exchange that checks users against lookup
// and draws its nonce from random.
func NewDigestMD5Server(lookup func(user string) (string, bool), random io.Reader) *DigestMD5Server {
	return &DigestMD5Server{lookup: lookup, random: random}
}

// Complete reports whether the client authenticated.
func (s *DigestMD5Server) Complete() bool { return s.done }

// User is the authenticated user name once Complete.
func (s *DigestMD5Server) User() string { return s.user }

// Step evaluates the client's token and returns the server's. Any error
// ends the exchange.
func (s *DigestMD5Server) Step(token []byte) ([]byte, error) {
	switch s.step {
	case 0:
		s.step = 2
		var b [30]byte
		if _, err := io.ReadFull(s.random, b[:]); err != nil {
			return nil, fmt.Errorf("%w: nonce: %v", ErrAuthFailed, err)
		}
		s.nonce = base64.StdEncoding.EncodeToString(b[:])
		s.step = 1
		// As Java's DigestMD5Server words it; without qop, which then
		// defaults to auth (RFC 2831 2.1.1).
		return []byte(`realm="` + Realm + `",nonce="` + s.nonce + `",charset=utf-8,algorithm=md5-sess`), nil
	case 1:
		s.step = 2
		user, rspauth, err := s.verify(token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuthFailed, err)
		}
		s.user, s.done = user, true
		return []byte("rspauth=" + rspauth), nil
	}
	return nil, fmt.Errorf("%w: exchange already ended", ErrAuthFailed)
}

// verify checks a digest-response and returns its user and the rspauth
// value that proves the server knows the password too.
func (s *DigestMD5Server) verify(token []byte) (user, rspauth string, err error) {
	d, err := ParseDirectives(string(token))
	if err != nil {
		return "", "", err
	}
	user, ok := d["username"]
	if !ok || user == "" {
		return "", "", errors.New("no username")
	}
	if d["nonce"] != s.nonce {
		return "", "", errors.New("nonce mismatch")
	}
	if nc, err := strconv.ParseUint(d["nc"], 16, 32); err != nil || nc != 1 || len(d["nc"]) != 8 {
		return "", "", fmt.Errorf("nonce count %q is not 00000001", d["nc"])
	}
	cnonce := d["cnonce"]
	if cnonce == "" {
		return "", "", errors.New("no cnonce")
	}
	qop, ok := d["qop"]
	if !ok {
		qop = "auth"
	}
	if qop != "auth" {
		return "", "", fmt.Errorf("qop %q not offered", qop)
	}
	realm, ok := d["realm"]
	if ok && realm != Realm {
		return "", "", fmt.Errorf("realm %q not offered", realm)
	}
	uri := d["digest-uri"]
	if !strings.EqualFold(uri, Protocol+"/"+Realm) {
		return "", "", fmt.Errorf("digest-uri %q is not %s/%s", uri, Protocol, Realm)
	}
	// Without charset=utf-8 the text is ISO 8859-1; with it, ISO 8859-1
	// still when every character fits (digestParams.text): one encoding.
	if cs, ok := d["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", "", fmt.Errorf("charset %q", cs)
	}
	if alg, ok := d["cipher"]; ok {
		return "", "", fmt.Errorf("cipher %q without qop auth-conf", alg)
	}
	password, ok := s.lookup(user)
	if !ok {
		return "", "", fmt.Errorf("unknown user %q", user)
	}
	authzid, hasAuthzid := d["authzid"]
	p := digestParams{user: user, realm: realm, password: password, nonce: s.nonce, cnonce: cnonce,
		nc: d["nc"], qop: qop, uri: uri, authzid: authzid, hasAuthzid: hasAuthzid}
	want := p.response("AUTHENTICATE")
	got := strings.ToLower(d["response"])
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return "", "", fmt.Errorf("wrong response for user %q", user)
	}
	return user, p.response(""), nil
}

// digestParams are the inputs of RFC 2831's response-value.
type digestParams struct {
	user, realm, password       string
	nonce, cnonce, nc, qop, uri string
	authzid                     string
	hasAuthzid                  bool
}

// response computes response-value (method "AUTHENTICATE") or the rspauth
// value (method "") for qop=auth.
func (p digestParams) response(method string) string {
	inner := md5.New()
	inner.Write(p.text(p.user))
	inner.Write([]byte(":"))
	inner.Write(p.text(p.realm))
	inner.Write([]byte(":"))
	inner.Write(p.text(p.password))
	a1 := append(inner.Sum(nil), ":"+p.nonce+":"+p.cnonce...)
	if p.hasAuthzid {
		a1 = append(a1, ":"+p.authzid...)
	}
	ha1 := md5Hex(a1)
	ha2 := md5Hex([]byte(method + ":" + p.uri))
	return md5Hex([]byte(ha1 + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":" + p.qop + ":" + ha2))
}

// text encodes a user name, realm or password as RFC 2831 says: in
// ISO 8859-1 when every character fits (always the case without
// charset=utf-8), else in UTF-8.
func (p digestParams) text(s string) []byte {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff || r == utf8.RuneError {
			return []byte(s)
		}
		b = append(b, byte(r))
	}
	return b
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// ParseDirectives parses a DIGEST-MD5 challenge or response: comma
// separated name=value pairs, values bare tokens or quoted strings with
// backslash escapes. Names are case-insensitive (returned lower case); a
// repeated name is an error, as RFC 2831 allows none of the response's.
func ParseDirectives(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	for {
		skipSpace()
		for i < len(s) && s[i] == ',' { // empty list elements are allowed
			i++
			skipSpace()
		}
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		name := strings.ToLower(s[start:i])
		skipSpace()
		if name == "" || i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("directive %q has no value", name)
		}
		i++
		skipSpace()
		var value strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					value.WriteByte(s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				value.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("directive %q: unterminated quoted string", name)
			}
		} else {
			start := i
			for i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
				i++
			}
			value.WriteString(s[start:i])
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("directive %q repeated", name)
		}
		out[name] = value.String()
		skipSpace()
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("directive %q: expected ',' after its value", name)
		}
	}
}
