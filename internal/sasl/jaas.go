package sasl

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// LoginModule is one line of a JAAS section: a module class, its control
// flag and its options.
type LoginModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// JAAS is a parsed login configuration file: sections by name, each a list
// of login modules, as javax.security.auth.login.ConfigFile reads them.
type JAAS map[string][]LoginModule

// DigestLoginModule is the module class of ZooKeeper's DIGEST-MD5 users.
const DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// LoadJAAS reads and parses a JAAS file.
func LoadJAAS(path string) (JAAS, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read JAAS config: %w", err)
	}
	j, err := ParseJAAS(string(b))
	if err != nil {
		return nil, fmt.Errorf("JAAS config %s: %w", path, err)
	}
	return j, nil
}

// Users returns the DIGEST-MD5 users of a section: every user_<name>
// option of its modules, as ZooKeeper's SaslServerCallbackHandler collects
// them (a later module's option wins). It is an error if the section is
// missing.
func (j JAAS) Users(section string) (map[string]string, error) {
	mods, ok := j[section]
	if !ok {
		return nil, fmt.Errorf("no JAAS configuration section named %q", section)
	}
	users := map[string]string{}
	for _, m := range mods {
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				users[name] = v
			}
		}
	}
	return users, nil
}

// ParseJAAS parses the text of a JAAS login configuration:
//
//	Name {
//	    module.Class flag key=value key="quoted value";
//	};
//
// with // and /* */ comments. Flags are required, requisite, sufficient or
// optional (any case). Quoted strings take backslash escapes.
func ParseJAAS(text string) (JAAS, error) {
	toks, err := tokenizeJAAS(text)
	if err != nil {
		return nil, err
	}
	j := JAAS{}
	p := 0
	next := func() (jaasToken, bool) {
		if p >= len(toks) {
			return jaasToken{}, false
		}
		p++
		return toks[p-1], true
	}
	expect := func(kind byte, what string) (jaasToken, error) {
		t, ok := next()
		if !ok {
			return t, fmt.Errorf("unexpected end of file, expected %s", what)
		}
		if t.kind != kind {
			return t, fmt.Errorf("line %d: expected %s, got %q", t.line, what, t.text)
		}
		return t, nil
	}
	for p < len(toks) {
		name, err := expect('w', "a section name")
		if err != nil {
			return nil, err
		}
		if _, err := expect('{', "'{'"); err != nil {
			return nil, err
		}
		if _, dup := j[name.text]; dup {
			return nil, fmt.Errorf("line %d: section %q appears twice", name.line, name.text)
		}
		var mods []LoginModule
		for {
			t, ok := next()
			if !ok {
				return nil, fmt.Errorf("section %q: unexpected end of file", name.text)
			}
			if t.kind == '}' {
				break
			}
			if t.kind != 'w' {
				return nil, fmt.Errorf("line %d: expected a login module class, got %q", t.line, t.text)
			}
			flag, err := expect('w', "a control flag")
			if err != nil {
				return nil, err
			}
			switch strings.ToLower(flag.text) {
			case "required", "requisite", "sufficient", "optional":
			default:
				return nil, fmt.Errorf("line %d: invalid control flag %q", flag.line, flag.text)
			}
			m := LoginModule{Class: t.text, Flag: strings.ToLower(flag.text), Options: map[string]string{}}
			for {
				o, ok := next()
				if !ok {
					return nil, fmt.Errorf("module %s: unexpected end of file", m.Class)
				}
				if o.kind == ';' {
					break
				}
				if o.kind != 'w' {
					return nil, fmt.Errorf("line %d: expected an option name, got %q", o.line, o.text)
				}
				if _, err := expect('=', "'='"); err != nil {
					return nil, err
				}
				v, ok := next()
				if !ok || (v.kind != 'w' && v.kind != '"') {
					return nil, fmt.Errorf("line %d: option %s has no value", o.line, o.text)
				}
				m.Options[o.text] = v.text
			}
			mods = append(mods, m)
		}
		if len(mods) == 0 {
			return nil, fmt.Errorf("section %q has no login module", name.text)
		}
		if _, err := expect(';', "';' after '}'"); err != nil {
			return nil, err
		}
		j[name.text] = mods
	}
	if len(j) == 0 {
		return nil, errors.New("no section")
	}
	return j, nil
}

// jaasToken is a word ('w'), a quoted string ('"') or one of { } ; =.
type jaasToken struct {
	kind byte
	text string
	line int
}

func tokenizeJAAS(s string) ([]jaasToken, error) {
	var out []jaasToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '{' || c == '}' || c == ';' || c == '=':
			out = append(out, jaasToken{kind: c, text: string(c), line: line})
			i++
		case c == '"' || c == '\'':
			start := line
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				d := s[i]
				i++
				if d == c {
					closed = true
					break
				}
				if d == '\n' {
					line++
				}
				if d == '\\' && i < len(s) {
					switch e := s[i]; e {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(e)
					}
					i++
					continue
				}
				b.WriteByte(d)
			}
			if !closed {
				return nil, fmt.Errorf("line %d: unterminated quoted string", start)
			}
			out = append(out, jaasToken{kind: '"', text: b.String(), line: start})
		default:
			start := i
			for i < len(s) && !strings.ContainsRune(" \t\r\n\f{};=\"'", rune(s[i])) &&
				!strings.HasPrefix(s[i:], "//") && !strings.HasPrefix(s[i:], "/*") {
				i++
			}
			out = append(out, jaasToken{kind: 'w', text: s[start:i], line: line})
		}
	}
	return out, nil
}
