package sasl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestDigestRFC2831Example checks the response and rspauth of RFC 2831's
// example (section 4).
func TestDigestRFC2831Example(t *testing.T) {
	p := digestParams{user: "chris", realm: "elwood.innosoft.com", password: "secret",
		nonce: "OA6MG9tEQGm2hh", cnonce: "OA6MHXh6VqTrRk", nc: "00000001", qop: "auth",
		uri: "imap/elwood.innosoft.com"}
	if got, want := p.response("AUTHENTICATE"), "d388dad90d4bbd760a152321f2143af7"; got != want {
		t.Errorf("response = %s; want %s", got, want)
	}
	if got, want := p.response(""), "ea40f60335c427b5527b84dbabcdfffd"; got != want {
		t.Errorf("rspauth = %s; want %s", got, want)
	}
}

var testUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret", "jürgen": "pässwörd", "姓": "密码"}

func lookup(u string) (string, bool) { p, ok := testUsers[u]; return p, ok }

// fixedNonce is the nonce of a server reading 30 bytes of 'n'.
var fixedNonce = "bm5ubm5ubm5ubm5ubm5ubm5ubm5ubm5ubm5ubm5u"

func newTestServer(t *testing.T) *DigestMD5Server {
	t.Helper()
	s := NewDigestMD5Server(lookup, bytes.NewReader(bytes.Repeat([]byte("n"), 30)))
	ch, err := s.Step(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDirectives(string(ch))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"realm": Realm, "nonce": fixedNonce, "charset": "utf-8", "algorithm": "md5-sess"}
	if len(d) != len(want) {
		t.Fatalf("challenge %s; want exactly %v", ch, want)
	}
	for k, v := range want {
		if d[k] != v {
			t.Fatalf("challenge %s = %q; want %q (%s)", k, d[k], v, ch)
		}
	}
	return s
}

// clientResponse builds a response as Java's DigestMD5Client does, with
// fields overridden (a "-" value drops the directive).
func clientResponse(user, password string, override map[string]string) string {
	f := map[string]string{"charset": "utf-8", "username": user, "realm": Realm, "nonce": fixedNonce,
		"nc": "00000001", "cnonce": "c2xpZ2h0bHkgcmFuZG9t", "digest-uri": Protocol + "/" + Realm,
		"maxbuf": "65536", "qop": "auth"}
	for k, v := range override {
		f[k] = v
	}
	authzid, hasAuthzid := f["authzid"]
	p := digestParams{user: f["username"], realm: f["realm"], password: password, nonce: f["nonce"],
		cnonce: f["cnonce"], nc: f["nc"], qop: f["qop"], uri: f["digest-uri"], authzid: authzid,
		hasAuthzid: hasAuthzid}
	if f["realm"] == "-" {
		p.realm = ""
	}
	if f["qop"] == "-" {
		p.qop = "auth"
	}
	if _, ok := override["response"]; !ok {
		f["response"] = p.response("AUTHENTICATE")
	}
	var parts []string
	for _, k := range []string{"charset", "username", "realm", "nonce", "nc", "cnonce", "digest-uri", "maxbuf", "response", "qop", "authzid", "cipher"} {
		v, ok := f[k]
		if !ok || v == "-" {
			continue
		}
		switch k {
		case "charset", "nc", "maxbuf", "response", "qop":
			parts = append(parts, k+"="+v)
		default:
			parts = append(parts, k+`="`+strings.ReplaceAll(v, `"`, `\"`)+`"`)
		}
	}
	return strings.Join(parts, ",")
}

func TestDigestMD5Exchange(t *testing.T) {
	for _, tt := range []struct {
		name     string
		user     string
		password string
		override map[string]string
	}{
		{"alice", "alice", "alice-secret", nil},
		{"latin-1 user and password", "jürgen", "pässwörd", nil},
		{"non latin-1 user and password", "姓", "密码", nil},
		{"authzid ignored for identity", "bob", "bob-secret", map[string]string{"authzid": "alice"}},
		{"no realm", "alice", "alice-secret", map[string]string{"realm": "-"}},
		{"no qop", "alice", "alice-secret", map[string]string{"qop": "-"}},
		{"no charset", "alice", "alice-secret", map[string]string{"charset": "-"}},
		{"uppercase uri", "alice", "alice-secret", map[string]string{"digest-uri": "zookeeper/ZK-SASL-MD5"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t)
			resp := clientResponse(tt.user, tt.password, tt.override)
			out, err := s.Step([]byte(resp))
			if err != nil {
				t.Fatalf("Step(%s): %v", resp, err)
			}
			if !s.Complete() || s.User() != tt.user {
				t.Fatalf("complete %v user %q; want %q", s.Complete(), s.User(), tt.user)
			}
			d, _ := ParseDirectives(resp)
			_, hasAuthzid := d["authzid"]
			realm := d["realm"]
			p := digestParams{user: tt.user, realm: realm, password: tt.password, nonce: fixedNonce,
				cnonce: d["cnonce"], nc: "00000001", qop: "auth", uri: d["digest-uri"], authzid: d["authzid"], hasAuthzid: hasAuthzid}
			if want := "rspauth=" + p.response(""); string(out) != want {
				t.Errorf("server token %q; want %q", out, want)
			}
			if _, err := s.Step(nil); !errors.Is(err, ErrAuthFailed) {
				t.Errorf("step after completion: %v; want ErrAuthFailed", err)
			}
		})
	}
}

func TestDigestMD5BadResponses(t *testing.T) {
	for _, tt := range []struct {
		name     string
		user     string
		password string
		override map[string]string
		raw      string // used instead of clientResponse when set
	}{
		{"wrong password", "alice", "bob-secret", nil, ""},
		{"unknown user", "mallory", "x", nil, ""},
		{"other user's password", "bob", "alice-secret", nil, ""},
		{"wrong nonce", "alice", "alice-secret", map[string]string{"nonce": "abc"}, ""},
		{"nonce count 2", "alice", "alice-secret", map[string]string{"nc": "00000002"}, ""},
		{"short nonce count", "alice", "alice-secret", map[string]string{"nc": "1"}, ""},
		{"no cnonce", "alice", "alice-secret", map[string]string{"cnonce": "-"}, ""},
		{"qop auth-int", "alice", "alice-secret", map[string]string{"qop": "auth-int"}, ""},
		{"other realm", "alice", "alice-secret", map[string]string{"realm": "example.com"}, ""},
		{"other service", "alice", "alice-secret", map[string]string{"digest-uri": "imap/zk-sasl-md5"}, ""},
		{"no digest-uri", "alice", "alice-secret", map[string]string{"digest-uri": "-"}, ""},
		{"charset latin1", "alice", "alice-secret", map[string]string{"charset": "iso-8859-1"}, ""},
		{"cipher", "alice", "alice-secret", map[string]string{"cipher": "rc4"}, ""},
		{"tampered response", "alice", "alice-secret", map[string]string{"response": "00000000000000000000000000000000"}, ""},
		{"no response", "alice", "alice-secret", map[string]string{"response": "-"}, ""},
		{"no username", "alice", "alice-secret", map[string]string{"username": "-"}, ""},
		{"empty token", "", "", nil, " "},
		{"garbage", "", "", nil, "not a directive list"},
		{"repeated directive", "", "", nil, `username="alice",username="bob"`},
		{"unterminated quote", "", "", nil, `username="alice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t)
			resp := tt.raw
			if resp == "" {
				resp = clientResponse(tt.user, tt.password, tt.override)
			}
			out, err := s.Step([]byte(resp))
			if !errors.Is(err, ErrAuthFailed) || out != nil {
				t.Fatalf("Step(%s) = %q, %v; want ErrAuthFailed", resp, out, err)
			}
			if s.Complete() || s.User() != "" {
				t.Fatal("failed exchange completed")
			}
			// The correct response no longer helps: the exchange ended.
			if _, err := s.Step([]byte(clientResponse("alice", "alice-secret", nil))); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("retry after failure: %v", err)
			}
		})
	}
}

// TestDigestMD5InitialResponseIgnored: a non-empty first token gets the
// challenge, as from ZooKeeper 3.8 on Java 17 (compat-tests/sasl shows it).
func TestDigestMD5InitialResponseIgnored(t *testing.T) {
	s := NewDigestMD5Server(lookup, bytes.NewReader(make([]byte, 30)))
	ch, err := s.Step([]byte(`username="alice"`))
	if err != nil || !bytes.Contains(ch, []byte(`nonce="AAAA`)) {
		t.Fatalf("initial response: %q, %v", ch, err)
	}
}

func TestDigestMD5NonceReadFails(t *testing.T) {
	s := NewDigestMD5Server(lookup, bytes.NewReader(nil))
	if _, err := s.Step(nil); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("no randomness: %v", err)
	}
}

func TestParseDirectives(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want map[string]string
	}{
		{`a=1,b="x,y"`, map[string]string{"a": "1", "b": "x,y"}},
		{` A = "q\"uote" , , b=2 `, map[string]string{"a": `q"uote`, "b": "2"}},
		{``, map[string]string{}},
		{`a`, nil},
		{`a=1 b=2`, nil},
		{`=1`, nil},
	} {
		got, err := ParseDirectives(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("ParseDirectives(%q) = %v; want an error", tt.in, got)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("ParseDirectives(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("ParseDirectives(%q)[%s] = %q; want %q", tt.in, k, got[k], v)
			}
		}
	}
}

// TestClientResponseAgainstServer: the client helper the wire tests use
// authenticates with the right password only.
func TestClientResponseAgainstServer(t *testing.T) {
	for _, tt := range []struct {
		password string
		ok       bool
	}{{"alice-secret", true}, {"wrong", false}} {
		s := NewDigestMD5Server(lookup, bytes.NewReader(bytes.Repeat([]byte("x"), 30)))
		ch, err := s.Step(nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, rspauth, err := ClientResponse(ch, "alice", tt.password, "cnonce")
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Step(tok)
		if (err == nil) != tt.ok {
			t.Fatalf("password %q: %v", tt.password, err)
		}
		if tt.ok && string(out) != "rspauth="+rspauth {
			t.Fatalf("server token %q; want rspauth=%s", out, rspauth)
		}
	}
	if _, _, err := ClientResponse([]byte(`realm="r"`), "a", "b", "c"); err == nil {
		t.Fatal("challenge without nonce accepted")
	}
}
