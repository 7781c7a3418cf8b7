package check

import (
	"math/rand/v2"
	"testing"
)

// bruteLinearizable decides linearizability of one path's small history by
// trying every subset of the unknown-outcome operations and every order of
// the chosen operations that respects real time.
func bruteLinearizable(h []RegisterOp) bool {
	var end int64
	for _, op := range h {
		end = max(end, op.Call, op.Return)
	}
	end++
	var ops []RegisterOp
	var unknowns []int
	for _, op := range h {
		if op.Kind == OpGet && (!op.Linearizable || op.Status == StatusUnknown) {
			continue
		}
		if op.Status == StatusUnknown {
			if op.Return < op.Call {
				op.Return = end
			}
			unknowns = append(unknowns, len(ops))
		}
		ops = append(ops, op)
	}
	for mask := 0; mask < 1<<len(unknowns); mask++ {
		skip := make(map[int]bool)
		for b, i := range unknowns {
			if mask&(1<<b) != 0 {
				skip[i] = true
			}
		}
		var chosen []RegisterOp
		for i, op := range ops {
			if !skip[i] {
				chosen = append(chosen, op)
			}
		}
		if permute(chosen, nil, make([]bool, len(chosen)), regState{}) {
			return true
		}
	}
	return false
}

// permute extends the order so far (placed) with every legal next operation.
func permute(ops []RegisterOp, placed []int, used []bool, s regState) bool {
	if len(placed) == len(ops) {
		return true
	}
	for i := range ops {
		if used[i] {
			continue
		}
		// i may come next only if no unplaced operation returned before i
		// was invoked.
		legal := true
		for j := range ops {
			if j != i && !used[j] && ops[j].Return < ops[i].Call {
				legal = false
				break
			}
		}
		if !legal {
			continue
		}
		ok, next, _ := stepRegister(s, &ops[i])
		if !ok {
			continue
		}
		used[i] = true
		if permute(ops, append(placed, i), used, next) {
			return true
		}
		used[i] = false
	}
	return false
}

// randomSmallHistory draws arbitrary (mostly not linearizable) histories of
// up to 6 operations on one path, from small alphabets so that data repeats
// and operations overlap.
func randomSmallHistory(rng *rand.Rand) []RegisterOp {
	n := 1 + rng.IntN(6)
	h := make([]RegisterOp, n)
	statuses := []Status{StatusOK, StatusOK, StatusNoNode, StatusNodeExists, StatusBadVersion, StatusUnknown}
	for i := range h {
		call := int64(rng.IntN(10))
		op := RegisterOp{Client: i, Path: "/a", Call: call, Return: call + int64(rng.IntN(5)),
			Data: string(rune('a' + rng.IntN(3))), Version: int32(rng.IntN(3)) - 1}
		op.Kind = []OpKind{OpCreate, OpSet, OpSet, OpGet, OpGet, OpDelete}[rng.IntN(6)]
		op.Status = statuses[rng.IntN(len(statuses))]
		if op.Kind == OpGet {
			op.Linearizable = true
			op.RespData, op.RespVersion = string(rune('a'+rng.IntN(3))), int32(rng.IntN(3))
			if op.Status == StatusUnknown {
				op.Status = StatusOK
			}
		}
		if op.Kind == OpSet {
			op.RespVersion = int32(rng.IntN(3))
		}
		if op.Status == StatusUnknown && rng.IntN(2) == 0 {
			op.Return = 0 // unbounded
		}
		h[i] = op
	}
	return h
}

// Linearizable (porcupine, unique-data bounds, caller bounds) agrees with
// an exhaustive search on thousands of small arbitrary histories.
func TestLinearizableAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var legal, illegal int
	for i := range 5000 {
		h := randomSmallHistory(rng)
		want := bruteLinearizable(h)
		err := Linearizable(h, LinearizableOptions{})
		if got := err == nil; got != want {
			t.Fatalf("history %d: Linearizable says %v, exhaustive search says linearizable=%v:\n%v", i, err, want, h)
		}
		if want {
			legal++
		} else {
			illegal++
		}
	}
	if legal < 250 || illegal < 250 {
		t.Fatalf("unbalanced sample: %d linearizable, %d not", legal, illegal)
	}
	t.Logf("%d linearizable, %d not", legal, illegal)
}
