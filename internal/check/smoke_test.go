package check

import "testing"

func TestSmokeLinearizable(t *testing.T) {
	h := []RegisterOp{
		{Client: 0, Path: "/a", Kind: OpCreate, Data: "x", Call: 1, Return: 2, Status: StatusOK},
		{Client: 1, Path: "/a", Kind: OpGet, Linearizable: true, Call: 3, Return: 4, Status: StatusNoNode},
	}
	err := Linearizable(h, LinearizableOptions{})
	if err == nil {
		t.Fatal("stale read not caught")
	}
	t.Log(err)
	h[1].Status, h[1].RespData = StatusOK, "x"
	if err := Linearizable(h, LinearizableOptions{}); err != nil {
		t.Fatal(err)
	}
}
