package check

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// expect checks a checker's verdict: nil when want is empty, else a
// *Violation of the named checker whose explanation contains every want.
func expect(t *testing.T, err error, checker string, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("correct history rejected: %v", err)
		}
		return
	}
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("violation not caught: got %v", err)
	}
	if v.Checker != checker {
		t.Fatalf("violation from %q, want %q: %v", v.Checker, checker, v)
	}
	for _, w := range want {
		if !strings.Contains(v.Detail, w) {
			t.Errorf("explanation lacks %q:\n%s", w, v.Detail)
		}
	}
}

func withMzxid(op RegisterOp, z int64) RegisterOp {
	op.RespMzxid = z
	return op
}

func TestSessionReads(t *testing.T) {
	tests := []struct {
		name    string
		initial map[string]Register
		history []RegisterOp
		want    []string
	}{
		{name: "another client's stale read is allowed", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			pget(1, 4, 5, "/a", "x", 0, ok),
			pget(1, 6, 7, "/a", "y", 1, ok),
		}},
		{name: "reads of the initial state", initial: map[string]Register{"/a": {Exists: true, Data: "i", Version: 3}}, history: []RegisterOp{
			pget(0, 0, 1, "/a", "i", 3, ok),
		}},
		{name: "read of an unknown set's value", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 0, "/a", "y", 0, unknown, 0),
			pget(1, 4, 5, "/a", "y", 1, ok),
		}},
		{name: "delete and re-create with mzxids", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			withMzxid(set(0, 2, 3, "/a", "y", -1, ok, 1), 0x10),
			del(1, 4, 5, "/a", -1, ok),
			create(1, 6, 7, "/a", "z", ok),
			withMzxid(pget(0, 8, 9, "/a", "z", 0, ok), 0x12),
		}},
		{name: "version going back is allowed on a deleted path without mzxids", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			del(1, 4, 5, "/a", -1, ok),
			create(1, 6, 7, "/a", "z", ok),
			pget(0, 8, 9, "/a", "z", 0, ok),
		}},

		{name: "read your writes", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			pget(0, 4, 5, "/a", "x", 0, ok),
		}, want: []string{`client 0 get /a -> ("x", v0)`, "has version 0, older than version 1", "client 0 set"}},
		{name: "monotonic reads", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			pget(1, 4, 5, "/a", "y", 1, ok),
			pget(1, 6, 7, "/a", "x", 0, ok),
		}, want: []string{"older than version 1"}},
		{name: "monotonic reads by mzxid across a re-create", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			withMzxid(pget(1, 2, 3, "/a", "x", 0, ok), 0x20),
			del(0, 4, 5, "/a", -1, ok),
			create(0, 6, 7, "/a", "x", ok),
			withMzxid(pget(1, 8, 9, "/a", "x", 0, ok), 0x1f),
		}, want: []string{"mzxid 0x1f, older than mzxid 0x20"}},
		{name: "created znode vanishes for its creator", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			pget(0, 2, 3, "/a", "", 0, noNode),
		}, want: []string{"never deleted"}},
		{name: "value out of thin air", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			pget(1, 2, 3, "/a", "ghost", 0, ok),
		}, want: []string{"no create or set"}},
		{name: "value of a failed set", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", 5, badVersion, 0),
			pget(1, 4, 5, "/a", "y", 1, ok),
		}, want: []string{"no create or set"}},
		{name: "value read before it was written", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			pget(1, 2, 3, "/a", "y", 1, ok),
			set(0, 4, 5, "/a", "y", -1, ok, 1),
		}, want: []string{"no create or set"}},
		{name: "own set answers an older version", initial: map[string]Register{"/a": {Exists: true, Data: "x", Version: 4}}, history: []RegisterOp{
			pget(0, 2, 3, "/a", "x", 4, ok),
			set(0, 4, 5, "/a", "y", -1, ok, 2),
		}, want: []string{"client 0 set /a", "has version 2, older than version 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, SessionReads(tt.history, tt.initial), CheckerSessionReads, tt.want...)
		})
	}
}

func TestLockSafety(t *testing.T) {
	hold := func(c int, lock string, token, acq, rel, lost int64) LockHold {
		return LockHold{Client: c, Lock: lock, Token: token, Acquired: acq, Released: rel, Lost: lost}
	}
	tests := []struct {
		name  string
		holds []LockHold
		want  []string
	}{
		{name: "empty"},
		{name: "back to back", holds: []LockHold{
			hold(0, "l", 1, 0, 10, Never),
			hold(1, "l", 2, 10, 20, Never),
			hold(2, "l", 3, 20, Never, Never),
		}},
		{name: "session loss ends the hold before its release", holds: []LockHold{
			hold(0, "l", 1, 0, 100, 10),
			hold(1, "l", 2, 12, 20, Never),
		}},
		{name: "unordered input, two locks", holds: []LockHold{
			hold(1, "m", 5, 12, 20, Never),
			hold(0, "l", 1, 0, 10, Never),
			hold(0, "m", 4, 0, 10, Never),
			hold(1, "l", 2, 15, 20, Never),
		}},
		{name: "session lost before the acquisition was answered", holds: []LockHold{
			hold(0, "l", 1, 0, 10, Never),
			hold(1, "l", 2, 5, 30, 3),
			hold(2, "l", 3, 10, 11, Never),
		}},
		{name: "empty hold does not overlap", holds: []LockHold{
			hold(0, "l", 1, 0, 10, Never),
			hold(1, "l", 2, 5, 5, Never),
			hold(2, "l", 3, 10, 11, Never),
		}},

		{name: "overlap", holds: []LockHold{
			hold(0, "l", 1, 0, 10, Never),
			hold(1, "l", 2, 9, 20, Never),
		}, want: []string{"two holders of l at 9", "client 0 held l with token 1 from 0 to 10", "client 1"}},
		{name: "release after session loss does not count, but the loss came too late", holds: []LockHold{
			hold(0, "l", 1, 0, 30, 15),
			hold(1, "l", 2, 12, 20, Never),
		}, want: []string{"two holders of l at 12"}},
		{name: "holder never releases", holds: []LockHold{
			hold(0, "l", 1, 0, Never, Never),
			hold(1, "l", 2, 100, 200, Never),
		}, want: []string{"from 0 to never"}},
		{name: "overlap with an earlier long hold", holds: []LockHold{
			hold(0, "l", 1, 0, 100, Never),
			hold(1, "l", 2, 100, 100, Never),
			hold(2, "l", 3, 100, 120, Never),
			hold(3, "l", 4, 50, 60, Never),
		}, want: []string{"two holders of l at 50"}},
		{name: "token does not increase", holds: []LockHold{
			hold(0, "l", 5, 0, 10, Never),
			hold(1, "l", 5, 10, 20, Never),
		}, want: []string{"fencing token of l did not increase"}},
		{name: "token goes back", holds: []LockHold{
			hold(0, "l", 5, 0, 10, Never),
			hold(1, "l", 3, 10, 20, Never),
		}, want: []string{"with token 3"}},
		{name: "earliest violation among locks", holds: []LockHold{
			hold(0, "a", 1, 50, 60, Never),
			hold(1, "a", 2, 55, 70, Never),
			hold(0, "b", 1, 0, 10, Never),
			hold(1, "b", 2, 5, 20, Never),
		}, want: []string{"two holders of b at 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, LockSafety(tt.holds), CheckerLockSafety, tt.want...)
		})
	}
	t.Run("released before acquired", func(t *testing.T) {
		err := LockSafety([]LockHold{{Lock: "l", Acquired: 5, Lost: Never}})
		var v *Violation
		if err == nil || errors.As(err, &v) {
			t.Fatalf("want an input error, got %v", err)
		}
	})
}

func TestFencedCounter(t *testing.T) {
	w := func(c int, token, value int64, accepted, acked bool) FenceOp {
		return FenceOp{Client: c, Token: token, Value: value, Accepted: accepted, Acked: acked}
	}
	r := func(c int, token int64) FenceOp { return FenceOp{Client: c, Token: token, ReadOnly: true} }
	tests := []struct {
		name           string
		ops            []FenceOp
		initial, final int64
		want           []string
	}{
		{name: "empty"},
		{name: "empty with initial", initial: 5, final: 5},
		{name: "increments in token order", ops: []FenceOp{
			w(0, 1, 1, true, true), w(0, 1, 2, true, true), w(1, 2, 3, true, false),
		}, final: 3},
		{name: "stale holder rejected after the new holder's read", ops: []FenceOp{
			w(0, 1, 1, true, true),
			r(1, 2),
			w(0, 1, 2, false, false),
			w(1, 2, 2, true, true),
		}, final: 2},

		{name: "stale token accepted", ops: []FenceOp{
			w(0, 1, 1, true, true),
			r(1, 2),
			w(0, 1, 2, true, true),
		}, final: 2, want: []string{"attempt 2 (client 0 write 2 with token 1", "had seen token 2"}},
		{name: "lost update", ops: []FenceOp{
			w(0, 1, 1, true, true),
			w(1, 2, 1, true, true),
		}, final: 1, want: []string{"overwrote the value 1", "lost update of client 0 write 1 with token 1, accepted and acknowledged"}},
		{name: "final value lost an increment", ops: []FenceOp{
			w(0, 1, 1, true, true), w(0, 1, 2, true, true),
		}, final: 1, want: []string{"final value 1", "count to 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, FencedCounter(tt.ops, tt.initial, tt.final), CheckerFencedCounter, tt.want...)
		})
	}
	t.Run("acknowledged but rejected", func(t *testing.T) {
		err := FencedCounter([]FenceOp{w(0, 1, 1, false, true)}, 0, 0)
		var v *Violation
		if err == nil || errors.As(err, &v) {
			t.Fatalf("want an input error, got %v", err)
		}
	})
}

func TestNoLostWrites(t *testing.T) {
	tests := []struct {
		name    string
		history []RegisterOp
		final   map[string]Register
		want    []string
	}{
		{name: "empty"},
		{name: "last write visible", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
		}, final: map[string]Register{"/a": {Exists: true, Data: "y", Version: 1}}},
		{name: "superseded by an unknown set", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 0, "/a", "y", -1, unknown, 0),
		}, final: map[string]Register{"/a": {Exists: true, Data: "y", Version: 1}}},
		{name: "deleted after", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			del(1, 2, 3, "/a", -1, ok),
		}},
		{name: "deleted by an unknown delete", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			del(1, 2, 0, "/a", -1, unknown),
		}},
		{name: "re-created after a delete", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
			del(1, 4, 5, "/a", -1, ok),
			create(1, 6, 7, "/a", "z", ok),
		}, final: map[string]Register{"/a": {Exists: true, Data: "z", Version: 0}}},
		{name: "failed writes do not count", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(1, 2, 3, "/a", "y", 7, badVersion, 0),
			create(1, 2, 3, "/a", "z", nodeExists),
		}, final: map[string]Register{"/a": {Exists: true, Data: "x", Version: 0}}},
		{name: "mzxid equal", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			withMzxid(set(0, 2, 3, "/a", "y", -1, ok, 1), 9),
		}, final: map[string]Register{"/a": {Exists: true, Data: "y", Version: 1, Mzxid: 9}}},

		{name: "acknowledged create lost", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
		}, want: []string{`client 0 create /a("x") -> ok [call 0, return 1] is lost`, "absent"}},
		{name: "acknowledged set lost", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
		}, final: map[string]Register{"/a": {Exists: true, Data: "x", Version: 0}}, want: []string{"ends at the older"}},
		{name: "wrong data at the written version", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			set(0, 2, 3, "/a", "y", -1, ok, 1),
		}, final: map[string]Register{"/a": {Exists: true, Data: "other", Version: 1}}, want: []string{`ends at ("other", v1)`}},
		{name: "delete that returned before the write cannot excuse it", history: []RegisterOp{
			del(1, 0, 1, "/a", -1, noNode),
			del(1, 0, 1, "/a", -1, ok),
			create(0, 2, 3, "/a", "x", ok),
		}, want: []string{"no delete came after it"}},
		{name: "mzxid older", history: []RegisterOp{
			create(0, 0, 1, "/a", "x", ok),
			withMzxid(set(0, 2, 3, "/a", "y", -1, ok, 1), 9),
			del(1, 4, 0, "/a", -1, unknown),
		}, final: map[string]Register{"/a": {Exists: true, Data: "x", Version: 5, Mzxid: 8}}, want: []string{"mzxid 0x9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, NoLostWrites(tt.history, tt.final), CheckerNoLostWrites, tt.want...)
		})
	}
}

func TestReplicasAgree(t *testing.T) {
	long := func(b byte) []byte { return []byte(strings.Repeat(string(b), 100)) }
	tests := []struct {
		name    string
		samples []ReplicaSample
		want    []string
	}{
		{name: "empty"},
		{name: "equal at equal index, different indexes differ", samples: []ReplicaSample{
			{Member: 1, Index: 5, Digest: []byte{1}},
			{Member: 2, Index: 5, Digest: []byte{1}},
			{Member: 3, Index: 6, Digest: []byte{2}},
			{Member: 1, Index: 6, Digest: []byte{2}},
		}},
		{name: "snapshot bytes", samples: []ReplicaSample{
			{Member: 1, Index: 5, Digest: long('a')},
			{Member: 2, Index: 5, Digest: long('a')},
		}},

		{name: "diverged", samples: []ReplicaSample{
			{Member: 1, Index: 9, Digest: []byte{9}},
			{Member: 2, Index: 9, Digest: []byte{8}},
			{Member: 1, Index: 7, Digest: []byte{1}},
			{Member: 3, Index: 7, Digest: []byte{2}},
		}, want: []string{"at applied index 7 member 1 has state 01 but member 3 has 02"}},
		{name: "one member twice", samples: []ReplicaSample{
			{Member: 1, Index: 7, Digest: []byte{1}},
			{Member: 1, Index: 7, Digest: []byte{2}},
		}, want: []string{"member 1 has state 01 but member 1 has 02"}},
		{name: "snapshot bytes differ", samples: []ReplicaSample{
			{Member: 1, Index: 5, Digest: long('a')},
			{Member: 2, Index: 5, Digest: long('b')},
		}, want: []string{"sha256:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, ReplicasAgree(tt.samples), CheckerReplicasAgree, tt.want...)
		})
	}
}

func TestSessionZxids(t *testing.T) {
	tests := []struct {
		name string
		obs  []ZxidObservation
		want []string
	}{
		{name: "empty"},
		{name: "non-decreasing, sessions interleaved, notifications ignored", obs: []ZxidObservation{
			{Session: 1, Zxid: 5}, {Session: 2, Zxid: 3}, {Session: 1, Zxid: 5},
			{Session: 1, Zxid: -1, Op: "notification"}, {Session: 2, Zxid: 9}, {Session: 1, Zxid: 6},
		}},

		{name: "goes back", obs: []ZxidObservation{
			{Session: 1, Zxid: 5, Op: "create"}, {Session: 2, Zxid: 3}, {Session: 1, Zxid: 4, Op: "getData"},
		}, want: []string{"session 0x1 saw zxid 0x4 (getData, reply 2) after zxid 0x5 (create, reply 0)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, SessionZxids(tt.obs), CheckerSessionZxids, tt.want...)
		})
	}
}

// Histories of atomic registers (correct by construction) pass the session
// and lost-write checks, with and without mzxids, with reads plain or
// synced.
func TestCorrectRandomHistoriesPass(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		h, final := randomHistoryFinal(rng, 5, 10, seed%2 == 0)
		for i := range h {
			if h[i].Kind == OpGet && rng.IntN(2) == 0 {
				h[i].Linearizable = false
			}
		}
		if err := SessionReads(h, nil); err != nil {
			t.Fatalf("seed %d: SessionReads: %v", seed, err)
		}
		if err := NoLostWrites(h, final); err != nil {
			t.Fatalf("seed %d: NoLostWrites: %v", seed, err)
		}
		if err := Linearizable(h, LinearizableOptions{}); err != nil {
			t.Fatalf("seed %d: Linearizable: %v", seed, err)
		}
		for i := range h {
			h[i].RespMzxid = 0
		}
		for p, r := range final {
			r.Mzxid = 0
			final[p] = r
		}
		if err := SessionReads(h, nil); err != nil {
			t.Fatalf("seed %d without mzxids: SessionReads: %v", seed, err)
		}
		if err := NoLostWrites(h, final); err != nil {
			t.Fatalf("seed %d without mzxids: NoLostWrites: %v", seed, err)
		}
	}
}
