package fourletter_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
)

var numericKey = regexp.MustCompile(`^-?\d+$`)

// jsonShape reduces a decoded JSON value to its structure: object keys
// (numeric keys such as session ids and expiry times become "<N>"), value
// types, and for an array the shape of its elements (all must agree).
func jsonShape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			shape := jsonShape(e)
			if numericKey.MatchString(k) {
				k = "<N>"
				if prev, ok := out[k]; ok {
					shape = mergeShapes(prev, shape)
				}
			}
			out[k] = shape
		}
		return out
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		first := jsonShape(x[0])
		for _, e := range x[1:] {
			if !equalJSON(jsonShape(e), first) {
				return "[mixed]"
			}
		}
		return []any{first}
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	default:
		return "?"
	}
}

// mergeShapes is the shape of two values under one "<N>" key: an empty
// array takes the shape of a non-empty one (ZooKeeper's dump lists empty
// expiry buckets next to full ones), and the result does not depend on the
// order a map is walked in.
func mergeShapes(a, b any) any {
	switch {
	case equalJSON(a, b):
		return a
	case a == "[]":
		if _, ok := b.([]any); ok {
			return b
		}
	case b == "[]":
		if _, ok := a.([]any); ok {
			return a
		}
	}
	return "[mixed]"
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// compareAdmin checks one AdminServer answer against the reference.
func compareAdmin(t *testing.T, name string, ref, got *capture) {
	r, g := ref.admin[name], got.admin[name]
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format+"\n--- reference (%s):\n%s\n--- %s:\n%s", append(append([]any{name}, args...),
			ref.target, pretty(r), got.target, pretty(g))...)
	}
	// Every answer names its command and carries an error field.
	for _, k := range []string{"command", "error"} {
		if _, ok := g[k]; !ok {
			fail("no %q field", k)
		}
	}
	if r["command"] != g["command"] || !equalJSON(r["error"], g["error"]) {
		fail("command/error = %v/%v, reference %v/%v", g["command"], g["error"], r["command"], r["error"])
	}
	switch name {
	case "envi", "environment":
		if v, _ := g["zookeeper.version"].(string); !versionRE.MatchString(v) {
			fail("zookeeper.version %q does not look like ZooKeeper's", v)
		}
		for k := range r {
			if _, ok := g[k]; !ok && !strings.HasPrefix(k, "java.") {
				fail("key %s missing", k)
			}
		}
		for k := range g {
			if _, ok := r[k]; !ok && !strings.HasPrefix(k, "go.") && k != "os.tmpdir" {
				fail("unexpected key %s (deliberate additions are go.* and os.tmpdir)", k)
			}
		}
	case "sysp", "system_properties":
		// JVM properties against a Go process's facts: only the form is shared.
		for k, v := range g {
			if _, ok := v.(string); !ok && k != "error" {
				fail("%s is not a string", k)
			}
		}
	case "mntr", "monitor":
		for _, k := range mntrCore {
			k = strings.TrimPrefix(k, "zk_")
			if _, ok := r[k]; !ok {
				fail("reference lacks core key %s (the check is wrong)", k)
			}
			if _, ok := g[k]; !ok {
				fail("core key %s missing", k)
			}
		}
		for k, v := range g {
			rv, inRef := r[k]
			switch {
			case inRef && !equalJSON(jsonShape(v), jsonShape(rv)):
				fail("%s: type %v, reference %v", k, jsonShape(v), jsonShape(rv))
			case !inRef && !(got.target == zktest.Zkraft && strings.HasPrefix(k, "raft_")):
				fail("key %s is not one of ZooKeeper's (only raft_* may be added)", k)
			}
		}
		for _, k := range []string{"server_state", "znode_count", "watch_count", "ephemerals_count", "global_sessions"} {
			if !equalJSON(r[k], g[k]) {
				fail("%s = %v, reference %v", k, g[k], r[k])
			}
		}
	default:
		if rs, gs := jsonShape(r), jsonShape(g); !equalJSON(rs, gs) {
			fail("shapes differ:\nreference %s\ngot       %s", pretty(rs), pretty(gs))
		}
	}
	// Values the workload fixes.
	switch name {
	case "wchs", "watch_summary", "wchp", "watches_by_path":
		if !equalJSON(normalizeIDs(r, ref.sessionID), normalizeIDs(g, got.sessionID)) {
			fail("values differ")
		}
	case "wchc", "watches", "dump":
		if !equalJSON(normalizeIDs(r, ref.sessionID)["session_id_to_watched_paths"], normalizeIDs(g, got.sessionID)["session_id_to_watched_paths"]) ||
			!equalJSON(normalizeIDs(r, ref.sessionID)["session_id_to_ephemeral_paths"], normalizeIDs(g, got.sessionID)["session_id_to_ephemeral_paths"]) {
			fail("values differ")
		}
	}
}

// normalizeIDs replaces the workload's session id (as a number or a key)
// with "SID".
func normalizeIDs(m map[string]any, sid int64) map[string]any {
	b, _ := json.Marshal(m)
	s := strings.ReplaceAll(string(b), strconv.FormatInt(sid, 10), "SID")
	var out map[string]any
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// zkraftOnlyCommands are AdminServer commands ZooKeeper does not have.
var zkraftOnlyCommands = map[string]bool{"locks": true, "snapshot": true}

// TestAdminServer compares every AdminServer command of each target with
// the reference's, and the command list.
func TestAdminServer(t *testing.T) {
	ref := referenceCapture(t)
	linkRE := regexp.MustCompile(`<a href="/commands/([a-z_]+)">([a-z_]+)</a>\n<br/>\n`)
	links := func(s string) []string {
		var names []string
		for _, m := range linkRE.FindAllStringSubmatch(s, -1) {
			if m[1] != m[2] {
				return nil
			}
			names = append(names, m[1])
		}
		return names
	}
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			got := targetCapture(t, target)
			t.Run("command list", func(t *testing.T) {
				rl, gl := links(ref.adminList), links(got.adminList)
				// zkraft's own commands (see the table in doc.go) are the one
				// allowed difference.
				gl = slices.DeleteFunc(gl, func(n string) bool { return zkraftOnlyCommands[n] })
				if len(rl) == 0 || !slices.Equal(rl, gl) {
					t.Errorf("command links differ:\nreference %v\ngot       %v\n--- got:\n%s", rl, gl, got.adminList)
				}
			})
			for _, name := range adminNames {
				t.Run(name, func(t *testing.T) { compareAdmin(t, name, ref, got) })
			}
		})
	}
}

// TestJSONShapeNumericKeys: numeric keys collapse into one "<N>" whose shape
// does not depend on map order; an empty expiry bucket next to a full one
// (as ZooKeeper's dump shows) has the full one's shape.
func TestJSONShapeNumericKeys(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want string
	}{
		{"empty and full bucket", map[string]any{"2580000": []any{}, "2582000": []any{json.Number("7")}}, `{"\u003cN\u003e":["number"]}`},
		{"only empty buckets", map[string]any{"1": []any{}, "2": []any{}}, `{"\u003cN\u003e":"[]"}`},
		{"mixed kinds", map[string]any{"1": "a", "2": json.Number("3")}, `{"\u003cN\u003e":"[mixed]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 50 { // map order varies from walk to walk
				got, _ := json.Marshal(jsonShape(tt.in))
				if string(got) != tt.want {
					t.Fatalf("shape %s, want %s", got, tt.want)
				}
			}
		})
	}
}
