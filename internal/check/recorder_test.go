package check

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRecorder(t *testing.T) {
	var clock atomic.Int64
	now := func() int64 { return clock.Add(1) }
	r := NewRecorder(now)
	h := r.Invoke(RegisterOp{Client: 0, Path: "/a", Kind: OpCreate, Data: "x"})
	r.Complete(h, StatusOK, "", 0, 0)

	// Concurrent clients on their own paths: each sets, then reads back.
	var wg sync.WaitGroup
	for c := 1; c <= 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := "/c" + strconv.Itoa(c)
			h := r.Invoke(RegisterOp{Client: c, Path: p, Kind: OpCreate, Data: p})
			r.Complete(h, StatusOK, "", 0, 0)
			h = r.Invoke(RegisterOp{Client: c, Path: p, Kind: OpGet, Linearizable: true})
			r.Complete(h, StatusOK, p, 0, 0)
		}()
	}
	wg.Wait()
	pending := r.Invoke(RegisterOp{Client: 0, Path: "/a", Kind: OpSet, Data: "y", Version: -1})
	lost := r.Invoke(RegisterOp{Client: 9, Path: "/a", Kind: OpDelete, Version: 0})
	r.Complete(lost, StatusUnknown, "", 0, 0)

	hist := r.History()
	if len(hist) != 19 {
		t.Fatalf("recorded %d operations, want 19", len(hist))
	}
	for _, i := range []int{pending, lost} {
		if hist[i].Status != StatusUnknown || hist[i].Return != 0 {
			t.Errorf("op %d: %v, want unknown and unbounded", i, hist[i])
		}
	}
	if err := Linearizable(hist, LinearizableOptions{}); err != nil {
		t.Fatal(err)
	}
	// The recorded get of /a after the pending set was invoked must see
	// the set or not; a stale read recorded after an acknowledged set is
	// caught.
	h = r.Invoke(RegisterOp{Client: 3, Path: "/c1", Kind: OpGet, Linearizable: true})
	r.Complete(h, StatusNoNode, "", 0, 0)
	expect(t, Linearizable(r.History(), LinearizableOptions{}), CheckerLinearizable, "path /c1")
}
