package check

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Constructors keep the tables short: client, call, return come first.
func create(c int, call, ret int64, path, data string, st Status) RegisterOp {
	return RegisterOp{Client: c, Path: path, Kind: OpCreate, Data: data, Call: call, Return: ret, Status: st}
}

func set(c int, call, ret int64, path, data string, ver int32, st Status, newVer int32) RegisterOp {
	return RegisterOp{Client: c, Path: path, Kind: OpSet, Data: data, Version: ver, Call: call, Return: ret, Status: st, RespVersion: newVer}
}

func del(c int, call, ret int64, path string, ver int32, st Status) RegisterOp {
	return RegisterOp{Client: c, Path: path, Kind: OpDelete, Version: ver, Call: call, Return: ret, Status: st}
}

// sget is a linearizable (sync+read) get; pget a plain one.
func sget(c int, call, ret int64, path, data string, ver int32, st Status) RegisterOp {
	return RegisterOp{Client: c, Path: path, Kind: OpGet, Linearizable: true, Call: call, Return: ret, Status: st, RespData: data, RespVersion: ver}
}

func pget(c int, call, ret int64, path, data string, ver int32, st Status) RegisterOp {
	op := sget(c, call, ret, path, data, ver, st)
	op.Linearizable = false
	return op
}

const (
	ok         = StatusOK
	noNode     = StatusNoNode
	nodeExists = StatusNodeExists
	badVersion = StatusBadVersion
	unknown    = StatusUnknown
)

func TestLinearizable(t *testing.T) {
	tests := []struct {
		name    string
		initial map[string]Register
		history []RegisterOp
		// want is empty for a linearizable history, else words the
		// explanation must contain.
		want []string
	}{
		{name: "empty"},
		{name: "sequential create set get delete", history: []RegisterOp{
			create(0, 1, 2, "/a", "x", ok),
			set(0, 3, 4, "/a", "y", 0, ok, 1),
			sget(1, 5, 6, "/a", "y", 1, ok),
			del(1, 7, 8, "/a", 1, ok),
			sget(0, 9, 10, "/a", "", 0, noNode),
		}},
		{name: "concurrent sets, reads agree on one order", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 10, "/a", "p", -1, ok, 2),
			set(2, 3, 9, "/a", "q", -1, ok, 1),
			sget(0, 4, 5, "/a", "q", 1, ok),
			sget(0, 11, 12, "/a", "p", 2, ok),
		}},
		{name: "conditional set fails with BadVersion after a concurrent set", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 4, "/a", "p", 0, ok, 1),
			set(2, 3, 5, "/a", "q", 0, badVersion, 0),
			sget(2, 6, 7, "/a", "p", 1, ok),
		}},
		{name: "create races: one wins", history: []RegisterOp{
			create(0, 0, 3, "/a", "x", nodeExists),
			create(1, 1, 2, "/a", "y", ok),
			sget(0, 4, 5, "/a", "y", 0, ok),
		}},
		{name: "unknown set that never shows", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 0, "/a", "lost", -1, unknown, 0),
			sget(0, 3, 4, "/a", "x", 0, ok),
			sget(0, 50, 51, "/a", "x", 0, ok),
		}},
		{name: "unknown set that shows up late", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 0, "/a", "late", -1, unknown, 0),
			sget(0, 3, 4, "/a", "x", 0, ok),
			sget(0, 50, 51, "/a", "late", 1, ok),
		}},
		{name: "unknown delete", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			del(1, 2, 0, "/a", -1, unknown),
			sget(0, 3, 4, "/a", "x", 0, ok),
			sget(0, 5, 6, "/a", "", 0, noNode),
			create(0, 7, 8, "/a", "again", ok),
		}},
		{name: "initial state", initial: map[string]Register{"/a": {Exists: true, Data: "init", Version: 7}}, history: []RegisterOp{
			sget(0, 1, 2, "/a", "init", 7, ok),
			set(0, 3, 4, "/a", "y", 7, ok, 8),
		}},
		{name: "plain stale read is not part of linearizability", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			pget(1, 4, 5, "/a", "x", 0, ok),
		}},
		{name: "paths are independent registers", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			create(1, 0, 1, "/b", "x", ok),
			set(0, 2, 3, "/a", "y", 0, ok, 1),
			sget(1, 4, 5, "/b", "x", 0, ok),
		}},
		{name: "unknown write bounded by the read of its unique data", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 0, "/a", "u", -1, unknown, 0),
			pget(2, 3, 6, "/a", "u", 1, ok),
			sget(0, 7, 8, "/a", "u", 1, ok),
		}},
		{name: "no bound from data that two writes carry", history: []RegisterOp{
			create(0, 0, 1, "/a", "u", ok),
			set(0, 2, 3, "/a", "x", -1, ok, 1),
			set(1, 4, 0, "/a", "u", -1, unknown, 0),
			pget(2, 5, 6, "/a", "u", 0, ok), // a plain stale read of the create
			sget(0, 7, 8, "/a", "x", 1, ok),
			sget(0, 20, 21, "/a", "u", 2, ok),
		}},
		{name: "unknown write with a caller's bound", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 5, "/a", "y", -1, unknown, 0),
			sget(0, 4, 5, "/a", "x", 0, ok),
			sget(0, 10, 11, "/a", "y", 1, ok),
		}},

		{name: "unknown write seen after a read its unique data bounds it by", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 0, "/a", "u", -1, unknown, 0),
			pget(2, 3, 6, "/a", "u", 1, ok),
			sget(0, 7, 8, "/a", "x", 0, ok),
		}, want: []string{`client 0 get /a after sync -> ("x", v0) [call 7, return 8]`}},
		{name: "unknown write taking effect after the caller's bound", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 5, "/a", "y", -1, unknown, 0),
			sget(0, 6, 7, "/a", "x", 0, ok),
			sget(0, 10, 11, "/a", "y", 1, ok),
		}, want: []string{`client 1 set /a("y", any version) -> unknown [call 2, in effect by 5 if ever]`, `client 0 get /a after sync -> ("x", v0) [call 6, return 7]`}},
		{name: "stale read after an acknowledged set", history: []RegisterOp{
			create(0, 1, 2, "/a", "x", ok),
			set(0, 3, 4, "/a", "y", 0, ok, 1),
			sget(1, 5, 6, "/a", "x", 0, ok),
		}, want: []string{"path /a", `client 1 get /a after sync -> ("x", v0) [call 5, return 6]`, `the znode is ("y", v1)`}},
		{name: "read of a created znode answers NoNode", history: []RegisterOp{
			create(0, 1, 2, "/a", "x", ok),
			sget(1, 3, 4, "/a", "", 0, noNode),
		}, want: []string{"NoNode", `the znode exists ("x", v0)`}},
		{name: "reads go back in time during a write", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 20, "/a", "y", -1, ok, 1),
			sget(1, 3, 4, "/a", "y", 1, ok),
			sget(2, 5, 6, "/a", "x", 0, ok),
		}, want: []string{"client 2 get"}},
		{name: "set skips a version", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 2),
		}, want: []string{"the new version is v1"}},
		{name: "BadVersion although the version matched", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", 0, badVersion, 0),
		}, want: []string{"BadVersion"}},
		{name: "two creates both succeed", history: []RegisterOp{
			create(0, 0, 2, "/a", "x", ok),
			create(1, 1, 3, "/a", "y", ok),
		}, want: []string{"already exists"}},
		{name: "unknown write seen before it was invoked", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			sget(1, 2, 3, "/a", "z", 1, ok),
			set(2, 4, 0, "/a", "z", -1, unknown, 0),
		}, want: []string{`("z", v1)`}},
		{name: "deleted znode still read", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			del(0, 2, 3, "/a", 0, ok),
			sget(1, 4, 5, "/a", "x", 0, ok),
		}, want: []string{"absent"}},
		{name: "violation on the second of two paths", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			create(0, 0, 1, "/b", "x", ok),
			sget(1, 4, 5, "/a", "x", 0, ok),
			sget(1, 4, 5, "/b", "", 0, noNode),
		}, want: []string{"path /b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Linearizable(tt.history, LinearizableOptions{Initial: tt.initial})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("linearizable history rejected: %v", err)
				}
				return
			}
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("violation not caught: got %v", err)
			}
			if v.Checker != CheckerLinearizable || v.Inconclusive {
				t.Fatalf("wrong violation: %+v", v)
			}
			for _, w := range tt.want {
				if !strings.Contains(v.Detail, w) {
					t.Errorf("explanation lacks %q:\n%s", w, v.Detail)
				}
			}
		})
	}
}

func TestLinearizableEarliestPathReported(t *testing.T) {
	h := []RegisterOp{
		create(0, 0, 1, "/a", "x", ok),
		sget(1, 20, 21, "/a", "", 0, noNode), // /a breaks at 21
		create(0, 0, 1, "/z", "x", ok),
		sget(1, 4, 5, "/z", "", 0, noNode), // /z breaks at 5
	}
	err := Linearizable(h, LinearizableOptions{})
	if err == nil || !strings.Contains(err.Error(), "path /z") {
		t.Fatalf("want the violation on /z, got %v", err)
	}
}

func TestLinearizableExplanationIsDeterministic(t *testing.T) {
	h := []RegisterOp{
		create(0, 0, 1, "/a", "x", ok),
		set(1, 2, 30, "/a", "p", -1, ok, 1),
		set(2, 2, 30, "/a", "q", -1, ok, 2),
		set(3, 2, 30, "/a", "r", -1, unknown, 0),
		sget(4, 31, 32, "/a", "x", 0, ok),
	}
	first := Linearizable(h, LinearizableOptions{})
	if first == nil {
		t.Fatal("violation not caught")
	}
	for range 20 {
		if err := Linearizable(h, LinearizableOptions{}); err == nil || err.Error() != first.Error() {
			t.Fatalf("explanation changed between runs:\n%v\n%v", first, err)
		}
	}
}

func TestLinearizableVisualization(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	h := []RegisterOp{
		create(0, 1, 2, "/a", "x", ok),
		sget(1, 3, 4, "/a", "", 0, noNode),
	}
	err := Linearizable(h, LinearizableOptions{VisualizationPath: bad})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("want a violation naming %s, got %v", bad, err)
	}
	b, rerr := os.ReadFile(bad)
	if rerr != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization not written: %v", rerr)
	}

	good := filepath.Join(dir, "good.html")
	h[1] = sget(1, 3, 4, "/a", "x", 0, ok)
	if err := Linearizable(h, LinearizableOptions{VisualizationPath: good}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(good); !os.IsNotExist(err) {
		t.Fatalf("visualization written for a linearizable history: %v", err)
	}
}

func TestLinearizableInconclusive(t *testing.T) {
	h := []RegisterOp{create(0, 1, 2, "/a", "x", ok)}
	err := Linearizable(h, LinearizableOptions{Timeout: time.Nanosecond})
	var v *Violation
	if !errors.As(err, &v) || !v.Inconclusive {
		t.Fatalf("want an inconclusive result, got %v", err)
	}
}

func TestLinearizableInvalidInput(t *testing.T) {
	for _, op := range []RegisterOp{
		{Path: "/a", Kind: OpGet, Call: 5, Return: 4, Status: StatusOK},
		{Path: "/a", Kind: 0, Status: StatusOK},
		{Path: "/a", Kind: OpGet},
		{Client: -1, Path: "/a", Kind: OpGet, Status: StatusOK},
	} {
		err := Linearizable([]RegisterOp{op}, LinearizableOptions{})
		var v *Violation
		if err == nil || errors.As(err, &v) {
			t.Errorf("%+v: want an input error, got %v", op, err)
		}
	}
}

// randomHistory runs clients against one atomic register per path: each
// operation takes effect at one instant inside its [Call, Return] window,
// so the history is linearizable by construction. Some outcomes are made
// unknown (the effect stays).
// With unique set, every write carries data of its own.
func randomHistory(rng *rand.Rand, clients, opsPerClient int, unique bool) []RegisterOp {
	h, _ := randomHistoryFinal(rng, clients, opsPerClient, unique)
	return h
}

// randomHistoryFinal is randomHistory that also returns the final state of
// each path, with mzxids (the index of the write's effect plus one).
func randomHistoryFinal(rng *rand.Rand, clients, opsPerClient int, unique bool) ([]RegisterOp, map[string]Register) {
	state := map[string]regState{}
	paths := []string{"/a", "/b"}
	var h []RegisterOp
	// Each client's next operation starts after its previous one returned;
	// operations of different clients overlap. Effects apply in the order
	// of their effect instants, so simulate in time order.
	next := make([]int64, clients)
	type pending struct {
		op     RegisterOp
		effect int64
	}
	var inflight []pending
	for n := 0; n < clients*opsPerClient; n++ {
		c := rng.IntN(clients)
		call := next[c] + int64(rng.IntN(3))
		effect := call + 1 + int64(rng.IntN(5))
		ret := effect + 1 + int64(rng.IntN(5))
		next[c] = ret + 1
		op := RegisterOp{Client: c, Path: paths[rng.IntN(len(paths))], Call: call, Return: ret}
		data := string(rune('a' + rng.IntN(26)))
		if unique {
			data = strconv.Itoa(n)
		}
		switch rng.IntN(5) {
		case 0:
			op.Kind, op.Data = OpCreate, data
		case 1, 2:
			op.Kind, op.Data, op.Version = OpSet, data, int32(rng.IntN(3))-1
		case 3:
			op.Kind, op.Linearizable = OpGet, true
		case 4:
			op.Kind, op.Version = OpDelete, -1
		}
		inflight = append(inflight, pending{op: op, effect: effect})
	}
	// Apply in effect order (stable on ties).
	for i := 1; i < len(inflight); i++ {
		for j := i; j > 0 && inflight[j].effect < inflight[j-1].effect; j-- {
			inflight[j], inflight[j-1] = inflight[j-1], inflight[j]
		}
	}
	mzxid := make(map[string]int64)
	for n, p := range inflight {
		op := p.op
		s := state[op.Path]
		// Find the status the atomic register gives, then apply it.
		for _, st := range []Status{StatusOK, StatusNoNode, StatusNodeExists, StatusBadVersion} {
			op.Status = st
			if op.Kind == OpSet && st == StatusOK {
				op.RespVersion = s.version + 1
			}
			if op.Kind == OpGet && st == StatusOK {
				op.RespData, op.RespVersion = s.data, s.version
			}
			if good, next, _ := stepRegister(s, &op); good {
				state[op.Path] = next
				if next != s {
					mzxid[op.Path] = int64(n + 1)
				}
				if st == StatusOK && (op.Kind == OpGet || op.Kind == OpSet) {
					op.RespMzxid = mzxid[op.Path]
				}
				break
			}
		}
		if op.Kind != OpGet && rng.IntN(8) == 0 {
			op.Status = StatusUnknown
		}
		h = append(h, op)
	}
	final := make(map[string]Register)
	for p, st := range state {
		final[p] = Register{Exists: st.exists, Data: st.data, Version: st.version, Mzxid: mzxid[p]}
	}
	return h, final
}

func TestLinearizableRandomHistories(t *testing.T) {
	caught := 0
	const seeds = 200
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 1))
		h := randomHistory(rng, 4, 8, seed%2 == 0)
		if err := Linearizable(h, LinearizableOptions{}); err != nil {
			t.Fatalf("seed %d: atomic register history rejected: %v", seed, err)
		}
		// Corrupt one successful read: it now sees a value never written.
		for i := range h {
			if h[i].Kind == OpGet && h[i].Status == StatusOK {
				h[i].RespData = "never written"
				if err := Linearizable(h, LinearizableOptions{}); err == nil {
					t.Fatalf("seed %d: corrupted read not caught", seed)
				}
				caught++
				break
			}
		}
	}
	if caught < seeds/2 {
		t.Fatalf("only %d of %d seeds had a read to corrupt", caught, seeds)
	}
}

// A long history with unique data and some unknown-outcome writes that
// never took effect: the check stays definite both ways (the budget is far
// above what it needs; it only keeps a regression from hanging the suite).
func TestLinearizableLargeHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := randomHistory(rng, 10, 200, true)
	for i := range 10 {
		h = append(h, RegisterOp{Client: 10 + i, Path: []string{"/a", "/b"}[i%2], Kind: OpSet, Data: "never" + strconv.Itoa(i),
			Version: -1, Call: int64(rng.IntN(2000)), Status: StatusUnknown})
	}
	if err := Linearizable(h, LinearizableOptions{Timeout: time.Minute}); err != nil {
		t.Fatalf("atomic register history rejected: %v", err)
	}
	for i := len(h) / 2; i < len(h); i++ {
		if h[i].Kind == OpGet && h[i].Status == StatusOK {
			h[i].RespData = "bad"
			break
		}
	}
	err := Linearizable(h, LinearizableOptions{Timeout: time.Minute})
	var v *Violation
	if !errors.As(err, &v) || v.Inconclusive {
		t.Fatalf("want a definite violation, got %v", err)
	}
}
