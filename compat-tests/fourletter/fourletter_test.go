package fourletter_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
)

// Value placeholders, applied in this order.
var normalizers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ \d{4}`), "DATE"},
	{regexp.MustCompile(`\d+\.\d+\.\d+\.\d+`), "IP"},
	{regexp.MustCompile(`0x[0-9a-fA-F]+`), "HEX"},
	{regexp.MustCompile(`-?\d+\.\d+`), "F"},
	{regexp.MustCompile(`-?\d+`), "N"},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return s
}

// versionRE is what monitoring tools need of a version: X.Y.Z- first.
var versionRE = regexp.MustCompile(`^\d+\.\d+\.\d+-\S*, built on .+$`)

// valueKind classifies a value: N (integer), F (decimal), P (path), S.
func valueKind(v string) string {
	switch {
	case regexp.MustCompile(`^-?\d+$`).MatchString(v):
		return "N"
	case regexp.MustCompile(`^-?\d+\.\d+$`).MatchString(v):
		return "F"
	case strings.HasPrefix(v, "/"):
		return "P"
	default:
		return "S"
	}
}

func lines(s string) []string { return strings.Split(s, "\n") }

// statShape reduces srvr/stat output: the version checked and replaced,
// the client lines sorted (their order is not fixed), other values normalized.
func statShape(t *testing.T, out string) (shape []string, values map[string]string) {
	t.Helper()
	values = map[string]string{}
	var clients []string
	inClients := false
	for _, l := range lines(out) {
		switch {
		case strings.HasPrefix(l, "Zookeeper version: "):
			if v := strings.TrimPrefix(l, "Zookeeper version: "); !versionRE.MatchString(v) {
				t.Errorf("version %q does not look like ZooKeeper's X.Y.Z-...", v)
			}
			shape = append(shape, "Zookeeper version: V")
		case l == "Clients:":
			inClients = true
			shape = append(shape, l)
		case inClients && l == "":
			inClients = false
			slices.Sort(clients)
			shape = append(append(shape, clients...), "")
		case inClients:
			clients = append(clients, normalize(l))
		default:
			if k, v, ok := strings.Cut(l, ": "); ok {
				values[k] = v
			}
			shape = append(shape, normalize(l))
		}
	}
	return shape, values
}

// keyValues parses key<sep>value lines, in order.
func keyValues(out, sep string) (keys []string, values map[string]string) {
	values = map[string]string{}
	for _, l := range lines(strings.TrimSuffix(out, "\n")) {
		k, v, _ := strings.Cut(l, sep)
		keys = append(keys, k)
		values[k] = v
	}
	return keys, values
}

// mntrCore are the mntr keys monitoring tools (Datadog, exporters, zktop
// forks) read; both servers must print them with the same value types.
var mntrCore = []string{
	"zk_version", "zk_server_state", "zk_avg_latency", "zk_max_latency", "zk_min_latency", "zk_packets_received",
	"zk_packets_sent", "zk_num_alive_connections", "zk_outstanding_requests", "zk_znode_count", "zk_watch_count",
	"zk_ephemerals_count", "zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count",
	"zk_uptime", "zk_global_sessions", "zk_local_sessions",
}

// zkraftRaftKeys are zkraft's own mntr keys.
var zkraftRaftKeys = []string{"zk_raft_term", "zk_raft_commit_index", "zk_raft_applied_index", "zk_raft_last_snapshot_index", "zk_raft_log_entries"}

// compareWord checks one four-letter word's answer against the reference.
func compareWord(t *testing.T, word string, ref, got *capture) {
	r, g := ref.words[word], got.words[word]
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s\n--- reference (%s):\n%s\n--- %s:\n%s", word, fmt.Sprintf(format, args...), ref.target, r, got.target, g)
	}
	eqLines := func(a, b []string, what string) {
		t.Helper()
		if !slices.Equal(a, b) {
			fail("%s differ:\nreference %q\ngot       %q", what, a, b)
		}
	}
	switch word {
	case "ruok", "isro", "crst", "srst":
		if r != g {
			fail("answers differ")
		}
	case "srvr", "stat":
		rs, rv := statShape(t, r)
		gs, gv := statShape(t, g)
		eqLines(rs, gs, "line shapes")
		for _, k := range []string{"Mode", "Node count", "Connections"} {
			if rv[k] != gv[k] {
				fail("%s: reference %q, got %q", k, rv[k], gv[k])
			}
		}
		labels := []string{"Latency min/avg/max", "Received", "Sent", "Connections", "Outstanding", "Zxid", "Mode", "Node count"}
		var gotLabels []string
		for _, l := range gs {
			if k, _, ok := strings.Cut(l, ": "); ok && k != "Zookeeper version" {
				gotLabels = append(gotLabels, k)
			}
		}
		eqLines(gotLabels, labels, "labels (in ZooKeeper's order)")
	case "cons":
		norm := func(s string) []string {
			var out []string
			for _, l := range lines(s) {
				out = append(out, normalize(l))
			}
			slices.Sort(out)
			return out
		}
		eqLines(norm(r), norm(g), "sorted line shapes")
	case "conf":
		shape := func(s string) []string {
			keys, values := keyValues(s, "=")
			var out []string
			for _, k := range keys {
				out = append(out, k+"="+valueKind(values[k]))
			}
			return out
		}
		eqLines(shape(r), shape(g), "keys and value kinds")
	case "envi":
		for _, s := range []string{r, g} {
			ls := lines(s)
			if len(ls) < 3 || ls[0] != "Environment:" || !strings.HasPrefix(ls[1], "zookeeper.version=") ||
				!versionRE.MatchString(strings.TrimPrefix(ls[1], "zookeeper.version=")) {
				fail("want Environment: then zookeeper.version=X.Y.Z-...")
			}
		}
		rk, _ := keyValues(strings.TrimPrefix(r, "Environment:\n"), "=")
		gk, _ := keyValues(strings.TrimPrefix(g, "Environment:\n"), "=")
		for _, k := range rk {
			if !strings.HasPrefix(k, "java.") && !slices.Contains(gk, k) {
				fail("key %s missing", k)
			}
		}
		for _, k := range gk {
			if !slices.Contains(rk, k) && !strings.HasPrefix(k, "go.") && k != "os.tmpdir" {
				fail("unexpected key %s (deliberate additions are go.* and os.tmpdir)", k)
			}
		}
	case "mntr":
		rk, rv := keyValues(r, "\t")
		gk, gv := keyValues(g, "\t")
		if len(gk) < 2 || gk[0] != "zk_version" || gk[1] != "zk_server_state" {
			fail("zk_version and zk_server_state must come first")
		}
		if !versionRE.MatchString(gv["zk_version"]) {
			fail("zk_version %q does not look like ZooKeeper's", gv["zk_version"])
		}
		for _, k := range mntrCore {
			if _, ok := rv[k]; !ok {
				fail("reference lacks core key %s (the check is wrong)", k)
			}
			if _, ok := gv[k]; !ok {
				fail("core key %s missing", k)
			}
		}
		isRaft := func(k string) bool { return strings.HasPrefix(k, "zk_raft_") }
		for _, k := range gk {
			_, inRef := rv[k]
			switch {
			case inRef && valueKind(rv[k]) != valueKind(gv[k]):
				fail("%s: value kind %s, reference %s (%q vs %q)", k, valueKind(gv[k]), valueKind(rv[k]), gv[k], rv[k])
			case !inRef && !(got.target == zktest.Zkraft && isRaft(k)):
				fail("key %s is not one of ZooKeeper's (only zk_raft_* may be added)", k)
			}
		}
		if got.target == zktest.Zkraft {
			for _, k := range zkraftRaftKeys {
				if valueKind(gv[k]) != "N" {
					fail("zkraft key %s = %q, want an integer", k, gv[k])
				}
			}
		}
		for _, k := range []string{"zk_server_state", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count",
			"zk_global_sessions", "zk_num_alive_connections", "zk_local_sessions"} {
			if rv[k] != gv[k] {
				fail("%s = %q, reference %q", k, gv[k], rv[k])
			}
		}
		_ = rk
	case "dirs", "wchs", "wchc", "wchp":
		// The workload fixes these completely, up to ids and sizes.
		if normalize(r) != normalize(g) {
			fail("normalized answers differ")
		}
	case "dump":
		split := func(s string) (sessions, ephemerals, conns []string) {
			part := 0
			for _, l := range lines(s) {
				switch l {
				case "ephemeral nodes dump:":
					part = 1
				case "Connections dump:":
					part = 2
				}
				if part == 0 && strings.HasPrefix(l, "0 expire at ") {
					// An empty expiry bucket lists no session; whether ZooKeeper
					// still shows one depends only on timing.
					continue
				}
				l = normalize(l)
				switch part {
				case 0:
					sessions = append(sessions, l)
				case 1:
					ephemerals = append(ephemerals, l)
				default:
					if !slices.Contains(conns, l) {
						conns = append(conns, l)
					}
				}
			}
			slices.Sort(conns)
			return sessions, ephemerals, conns
		}
		rs, re, rc := split(r)
		gs, ge, gc := split(g)
		eqLines(rs, gs, "session tracker sections")
		eqLines(re, ge, "ephemeral sections")
		eqLines(rc, gc, "distinct connection section lines")
	default:
		t.Fatalf("no check for %s", word)
	}
}

// TestFourLetterWords compares every four-letter word of each target with
// the reference Apache ZooKeeper's answer after the same workload.
func TestFourLetterWords(t *testing.T) {
	ref := referenceCapture(t)
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			got := targetCapture(t, target)
			for _, w := range words {
				t.Run(w, func(t *testing.T) { compareWord(t, w, ref, got) })
			}
		})
	}
}

// TestWhitelist checks 4lw.commands.whitelist: listed words answer, the
// others are refused with ZooKeeper's sentence.
func TestWhitelist(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, zktest.Options{Extra: map[string]string{"4lw.commands.whitelist": "srvr, ruok"}})
			check := func(word, want string) {
				t.Helper()
				got, err := srv.FourLetter(word)
				if err != nil {
					t.Fatalf("%s: %v", word, err)
				}
				if got != want {
					t.Errorf("%s = %q; want %q", word, got, want)
				}
			}
			check("ruok", "imok")
			if out, err := srv.FourLetter("srvr"); err != nil || !strings.Contains(out, "\nMode: standalone\n") {
				t.Errorf("srvr = %q, %v; want the stats", out, err)
			}
			for _, w := range words {
				if w != "ruok" && w != "srvr" {
					check(w, w+" is not executed because it is not in the whitelist.\n")
				}
			}
		})
	}
}
