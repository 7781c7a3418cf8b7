package sasl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tt := range []struct {
		name    string
		text    string
		section string
		users   map[string]string // nil: Users fails
		wantErr string            // ParseJAAS fails with this text
	}{
		{"zookeeper docs example", `
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret";
};
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="bob"
       password="bobsecret";
};`, "Server", map[string]string{"super": "adminsecret", "bob": "bobsecret"}, ""},
		{"client section has no users", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="x"; };`,
			"Client", map[string]string{}, ""},
		{"missing section", `Client { m required; };`, "Server", nil, ""},
		{"comments, bare values, escapes, flags", `
// line comment
/* block
   comment */ Server {
  a.Module REQUIRED user_alice=plain user_q="with \"quote\" and \\ back" debug=true;
  b.Module optional user_carol='single'; // trailing
};`, "Server", map[string]string{"alice": "plain", "q": `with "quote" and \ back`, "carol": "single"}, ""},
		{"later module wins", `Server { a required user_x="1"; b required user_x="2"; };`, "Server", map[string]string{"x": "2"}, ""},
		{"password with = and ;", `Server { a required user_x="p=w;d"; };`, "Server", map[string]string{"x": "p=w;d"}, ""},
		{"empty file", ``, "", nil, "no section"},
		{"bad flag", `Server { a mandatory user_x="1"; };`, "", nil, `invalid control flag "mandatory"`},
		{"no semicolon after module", `Server { a required user_x="1" };`, "", nil, "expected an option name"},
		{"no semicolon after section", `Server { a required; }`, "", nil, "';' after '}'"},
		{"option without value", `Server { a required user_x=; };`, "", nil, "has no value"},
		{"unterminated string", `Server { a required user_x="1; };`, "", nil, "unterminated quoted string"},
		{"unterminated comment", `/* Server { a required; };`, "", nil, "unterminated comment"},
		{"empty section", `Server { };`, "", nil, "has no login module"},
		{"duplicate section", `S { a required; }; S { a required; };`, "", nil, "appears twice"},
		{"missing brace", `Server a required; };`, "", nil, "expected '{'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j, err := ParseJAAS(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseJAAS error %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			users, err := j.Users(tt.section)
			if tt.users == nil {
				if err == nil {
					t.Fatalf("Users(%q) = %v; want an error", tt.section, users)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(users, tt.users) {
				t.Fatalf("Users(%q) = %v, %v; want %v", tt.section, users, err, tt.users)
			}
		})
	}
}

func TestLoadJAAS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "server.jaas")
	if err := os.WriteFile(p, []byte(`Server { `+DigestLoginModule+` required user_alice="a"; };`), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := LoadJAAS(p)
	if err != nil {
		t.Fatal(err)
	}
	if j["Server"][0].Class != DigestLoginModule || j["Server"][0].Flag != "required" {
		t.Fatalf("module %+v", j["Server"][0])
	}
	if _, err := LoadJAAS(p + ".missing"); err == nil {
		t.Fatal("missing file loaded")
	}
}
