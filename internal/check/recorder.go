package check

import "sync"

// Recorder collects a register history from concurrent clients (the
// real-process fault tests run one goroutine per client). Times come from
// now, which must never go backwards: a monotonic wall clock since the start
// of the test, or the simulator's clock.
type Recorder struct {
	now func() int64
	mu  sync.Mutex
	ops []RegisterOp
}

// NewRecorder returns an empty Recorder reading times from now.
func NewRecorder(now func() int64) *Recorder {
	return &Recorder{now: now}
}

// Invoke records the invocation of op, stamping its Call, and returns the
// handle Complete takes. For a read after a sync, invoke before the sync.
// The outcome fields of op are ignored.
func (r *Recorder) Invoke(op RegisterOp) int {
	op.Status, op.Return, op.RespData, op.RespVersion, op.RespMzxid = 0, 0, "", 0, 0
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Call = r.now()
	r.ops = append(r.ops, op)
	return len(r.ops) - 1
}

// Complete records the outcome of the operation Invoke returned h for,
// stamping its Return. For StatusUnknown the Return stays unbounded
// (see RegisterOp.Return). respData and respVersion are what a get read or
// the version a set produced; respMzxid is the reply's mzxid, 0 if unknown.
func (r *Recorder) Complete(h int, status Status, respData string, respVersion int32, respMzxid int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &r.ops[h]
	op.Status, op.RespData, op.RespVersion, op.RespMzxid = status, respData, respVersion, respMzxid
	if status != StatusUnknown {
		op.Return = r.now()
	}
}

// History returns a copy of the operations recorded so far, in invocation
// order; an operation not completed yet has StatusUnknown.
func (r *Recorder) History() []RegisterOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RegisterOp, len(r.ops))
	copy(out, r.ops)
	for i := range out {
		if out[i].Status == 0 {
			out[i].Status = StatusUnknown
		}
	}
	return out
}
