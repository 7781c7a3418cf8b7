package check_test

import (
	"fmt"

	"github.com/zkraft/zkraft/internal/check"
)

// A client's acknowledged setData followed by another client's sync+read
// that still sees the old data.
func ExampleLinearizable() {
	history := []check.RegisterOp{
		{Client: 0, Path: "/k", Kind: check.OpCreate, Data: "a", Call: 10, Return: 20, Status: check.StatusOK},
		{Client: 0, Path: "/k", Kind: check.OpSet, Data: "b", Version: 0, Call: 30, Return: 40, Status: check.StatusOK, RespVersion: 1},
		// Call is when the sync before the read was sent.
		{Client: 1, Path: "/k", Kind: check.OpGet, Linearizable: true, Call: 50, Return: 60, Status: check.StatusOK, RespData: "a", RespVersion: 0},
		// A write whose answer was lost: it may or may not have happened.
		{Client: 2, Path: "/k", Kind: check.OpSet, Data: "c", Version: -1, Call: 35, Status: check.StatusUnknown},
	}
	fmt.Println(check.Linearizable(history, check.LinearizableOptions{}))
	// Output:
	// linearizable: path /k: not linearizable; at most 3 of its 4 operations linearize, the last being client 2 set /k("c", any version) -> unknown [call 35], leaving the znode ("c", v2); none of the operations that must come next can: client 1 get /k after sync -> ("a", v0) [call 50, return 60]: the znode is ("c", v2)
}

func ExampleLockSafety() {
	holds := []check.LockHold{
		// Client 0's session was lost at 15; it released (too late) at 30.
		{Client: 0, Lock: "/lock", Token: 1, Acquired: 0, Released: 30, Lost: 15},
		{Client: 1, Lock: "/lock", Token: 2, Acquired: 12, Released: 40, Lost: check.Never},
	}
	fmt.Println(check.LockSafety(holds))
	// Output:
	// lock-safety: two holders of /lock at 12: client 0 held /lock with token 1 from 0 to 15; client 1 held /lock with token 2 from 12 to 40
}

func ExampleFencedCounter() {
	ops := []check.FenceOp{
		{Client: 0, Token: 1, Value: 1, Accepted: true, Acked: true},
		// Client 1 read 0 before client 0's write, and wrote 1 over it.
		{Client: 1, Token: 2, Value: 1, Accepted: true, Acked: true},
	}
	fmt.Println(check.FencedCounter(ops, 0, 1))
	// Output:
	// fenced-counter: attempt 1 (client 1 write 1 with token 2, accepted and acknowledged) overwrote the value 1: lost update of client 0 write 1 with token 1, accepted and acknowledged
}
