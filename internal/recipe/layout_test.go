package recipe

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestNewPrefix(t *testing.T) {
	tests := []struct {
		layout Layout
		re     string
	}{
		// Curator 5 protected mode: "_c_" + UUID.randomUUID() + "-" + "lock-".
		{Curator, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-$`},
		// kazoo: uuid.uuid4().hex + "__lock__".
		{Kazoo, `^[0-9a-f]{32}__lock__$`},
		// LeaderLatch: protected "latch-".
		{Latch, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-latch-$`},
	}
	for _, tc := range tests {
		t.Run(tc.layout.String(), func(t *testing.T) {
			a, err := tc.layout.NewPrefix()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := tc.layout.NewPrefix()
			if !regexp.MustCompile(tc.re).MatchString(a) {
				t.Errorf("prefix %q does not match %s", a, tc.re)
			}
			if a == b {
				t.Errorf("two prefixes are equal: %q", a)
			}
			// Curator's ProtectedUtils: "_c_" + 36-char UUID + "-" = 40 characters.
			if strings.HasPrefix(a, "_c_") && a[39] != '-' {
				t.Errorf("protected prefix %q has no separator at index 39", a)
			}
		})
	}
}

func TestSequence(t *testing.T) {
	tests := []struct {
		layout Layout
		name   string
		seq    string
		ok     bool
	}{
		{Curator, "_c_0e2c8a84-47a4-4c0d-9c3e-5f2b8e1d9a11-lock-0000000012", "0000000012", true},
		{Curator, "0f3a9c5d2b1e4f6a8c7d9e0b1a2c3d4e__lock__0000000003", "0000000003", true},
		{Kazoo, "lock-0000000007", "0000000007", true}, // Curator without protection
		{Kazoo, "_c_x-lock--2147483648", "-2147483648", true},
		{Kazoo, "leader", "", false},
		// kazoo's ReadLock node: a blocker for kazoo's Lock, not Curator's.
		{Kazoo, "0f3a9c5d2b1e4f6a8c7d9e0b1a2c3d4e__rlock__0000000004", "0000000004", true},
		{Curator, "0f3a9c5d2b1e4f6a8c7d9e0b1a2c3d4e__rlock__0000000004", "", false},
		{Kazoo, "x__lock__000000001", "", false}, // 9 digits: not ZooKeeper's suffix
		{Curator, "_c_0e2c8a84-47a4-4c0d-9c3e-5f2b8e1d9a11-latch-0000000001", "", false},
		{Latch, "_c_0e2c8a84-47a4-4c0d-9c3e-5f2b8e1d9a11-latch-0000000001", "0000000001", true},
		{Latch, "_c_0e2c8a84-47a4-4c0d-9c3e-5f2b8e1d9a11-lock-0000000001", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.layout.String()+"/"+tc.name, func(t *testing.T) {
			seq, ok := tc.layout.Sequence(tc.name)
			if seq != tc.seq || ok != tc.ok {
				t.Errorf("Sequence(%q) = %q, %v; want %q, %v", tc.name, seq, ok, tc.seq, tc.ok)
			}
		})
	}
}

// Random prefixes that sort opposite to the sequence: a sort by full name
// would put the newest first.
const (
	cur1 = "_c_ffffffff-0000-4000-8000-000000000000-lock-0000000001"
	cur2 = "_c_00000000-0000-4000-8000-000000000000-lock-0000000002"
	kaz3 = "ffffffffffffffffffffffffffffffff__lock__0000000003"
	cur4 = "_c_11111111-0000-4000-8000-000000000000-lock-0000000004"
	kaz5 = "00000000000000000000000000000000__lock__0000000005"
	lat1 = "_c_ffffffff-0000-4000-8000-000000000000-latch-0000000001"
	lat2 = "_c_00000000-0000-4000-8000-000000000000-latch-0000000002"
)

func TestContendersOrder(t *testing.T) {
	tests := []struct {
		name     string
		layout   Layout
		children []string
		want     []string
	}{
		{"by sequence not name", Curator, []string{cur4, cur2, cur1}, []string{cur1, cur2, cur4}},
		{"both lock layouts interleave", Kazoo, []string{kaz5, cur4, kaz3, cur2, cur1}, []string{cur1, cur2, kaz3, cur4, kaz5}},
		{"others ignored", Curator, []string{"config", cur2, lat1, "leases"}, []string{cur2}},
		{"latch sees only latch", Latch, []string{cur1, lat2, lat1}, []string{lat1, lat2}},
		{"empty", Curator, nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.layout.Contenders(tc.children)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Contenders(%v) = %v, want %v", tc.children, got, tc.want)
			}
		})
	}
}

func TestPredecessor(t *testing.T) {
	all := []string{kaz5, cur4, kaz3, cur2, cur1, "other"}
	tests := []struct {
		name     string
		layout   Layout
		children []string
		own      string
		pred     string
		found    bool
	}{
		{"first holds", Curator, all, cur1, "", true},
		{"waits on the one just ahead", Curator, all, cur4, kaz3, true},
		{"kazoo waits on curator", Kazoo, all, kaz3, cur2, true},
		{"last", Kazoo, all, kaz5, cur4, true},
		{"own gone", Curator, []string{cur1, cur4}, cur2, "", false},
		{"alone", Latch, []string{lat2}, lat2, "", true},
		{"latch ignores locks", Latch, []string{cur1, lat2}, lat2, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pred, found := tc.layout.Predecessor(tc.children, tc.own)
			if pred != tc.pred || found != tc.found {
				t.Errorf("Predecessor(%q) = %q, %v; want %q, %v", tc.own, pred, found, tc.pred, tc.found)
			}
		})
	}
}

func TestFindByPrefix(t *testing.T) {
	tests := []struct {
		name     string
		children []string
		prefix   string
		want     string
		ok       bool
	}{
		{"found", []string{cur1, cur2}, "_c_00000000-0000-4000-8000-000000000000-lock-", cur2, true},
		{"absent", []string{cur1}, "_c_00000000-0000-4000-8000-000000000000-lock-", "", false},
		{"kazoo", []string{kaz3, kaz5}, "00000000000000000000000000000000__lock__", kaz5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FindByPrefix(tc.children, tc.prefix)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FindByPrefix = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseLayout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Layout
		err  bool
	}{{"curator", Curator, false}, {"kazoo", Kazoo, false}, {"latch", 0, true}, {"", 0, true}} {
		got, err := ParseLayout(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseLayout(%q) = %v, %v", tc.in, got, err)
		}
	}
}
