package znode

import (
	"github.com/zkraft/zkraft/jute"
)

// OpDeleteTTL is the internal op that deletes an expired TTL node (ZooKeeper
// uses deleteContainer for both; zkraft keeps them apart). Like
// jute.OpDeleteContainer it is only ever proposed by the leader's checker.
const OpDeleteTTL int32 = -20

// TxnContext carries what the proposer stamped into the replicated entry.
type TxnContext struct {
	Zxid      int64     // this txn's zxid
	Time      int64     // ms since epoch (leader clock at propose time)
	SessionID int64     // caller session (owner of ephemerals it creates)
	Auth      []jute.Id // the caller's identities, for ACL checks and "auth" expansion
	// Options, when set, replace the tree's own Options for this txn. A
	// replicated caller sets them from the entry (the proposer's
	// configuration), so that whether a write succeeds never depends on
	// the configuration of the member applying it.
	Options *Options
}

// options returns the Options this txn is decided with.
func (t *Tree) options(ctx *TxnContext) Options {
	if ctx.Options != nil {
		return *ctx.Options
	}
	return t.opts
}

// Write is one write request: exactly one pointer is set, matching Type.
//   - Create for jute.OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL
//     (TTL is read only for OpCreateTTL);
//   - Delete for OpDelete, SetData for OpSetData, SetACL for OpSetACL,
//     Multi for OpMulti;
//   - Path for jute.OpDeleteContainer and OpDeleteTTL.
//
// Apply copies the data it keeps, so the request may be reused afterwards.
type Write struct {
	Type    int32
	Create  *jute.CreateTTLRequest
	Delete  *jute.DeleteRequest
	SetData *jute.SetDataRequest
	SetACL  *jute.SetACLRequest
	Multi   *jute.MultiRequest
	Path    string
}

// Result is the outcome of one Write.
type Result struct {
	// Err is a jute.Err* code, 0 on success. For OpMulti it is 0 unless the
	// request itself is malformed (-5); per-op codes are in Multi.
	Err   int32
	Path  string    // create*: the actual path (with sequence suffix)
	Stat  jute.Stat // create*, setData, setACL: the node's Stat after the write
	Multi []jute.MultiResult
}

// Event is one change, in the order it happened: NodeCreated, NodeDeleted or
// NodeDataChanged on Path, NodeChildrenChanged on the parent of a created
// or deleted node.
type Event struct {
	Type int32
	Path string
}

// Apply applies one write at ctx.Zxid and ctx.Time and returns its result
// and the watch events it caused (none when it failed). It is deterministic:
// the same tree and arguments always give the same result, events and tree.
//
// A malformed Write (nil or mismatched pointer, a read op inside a multi)
// gives MarshallingError (-5); a lone check or an unknown type gives
// Unimplemented (-6). Neither changes anything.
//
// Built with -tags invariants, it runs Check after every write and panics on
// a violation.
func (t *Tree) Apply(ctx TxnContext, w *Write) (Result, []Event) {
	return t.ApplyAppend(ctx, w, nil)
}

// ApplyAppend is Apply with the events appended to ev (whose length it
// keeps when the write failed), so that a caller can reuse one slice for
// the events of every write.
func (t *Tree) ApplyAppend(ctx TxnContext, w *Write, ev []Event) (Result, []Event) {
	res, ev := t.apply(&ctx, w, ev)
	if checkEveryWrite {
		t.mustCheck()
	}
	return res, ev
}

// mustCheck panics if the tree's invariants do not hold.
func (t *Tree) mustCheck() {
	if err := t.Check(); err != nil {
		panic(err)
	}
}

func (t *Tree) apply(ctx *TxnContext, w *Write, ev []Event) (Result, []Event) {
	if w == nil {
		return Result{Err: jute.ErrMarshallingError}, ev
	}
	var res Result
	before := ev
	switch w.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		if w.Create == nil {
			return Result{Err: jute.ErrMarshallingError}, before
		}
		ttl := int64(-1)
		if w.Type == jute.OpCreateTTL {
			ttl = w.Create.TTL
		}
		c := w.Create
		res.Path, res.Stat, ev, res.Err = t.create(ctx, w.Type, c.Path, c.Data, c.ACL, c.Flags, ttl, ev)
	case jute.OpDelete:
		if w.Delete == nil {
			return Result{Err: jute.ErrMarshallingError}, before
		}
		ev, res.Err = t.delete(ctx, w.Delete.Path, w.Delete.Version, ev)
	case jute.OpSetData:
		if w.SetData == nil {
			return Result{Err: jute.ErrMarshallingError}, before
		}
		res.Stat, ev, res.Err = t.setDataOp(ctx, w.SetData.Path, w.SetData.Data, w.SetData.Version, ev)
	case jute.OpSetACL:
		if w.SetACL == nil {
			return Result{Err: jute.ErrMarshallingError}, before
		}
		res.Stat, res.Err = t.setACL(ctx, w.SetACL.Path, w.SetACL.ACL, w.SetACL.Version)
	case jute.OpMulti:
		if w.Multi == nil {
			return Result{Err: jute.ErrMarshallingError}, before
		}
		res, mev := t.multi(ctx, w.Multi.Ops)
		if len(mev) == 0 {
			return res, before
		}
		return res, append(before, mev...)
	case jute.OpDeleteContainer, OpDeleteTTL:
		ev, res.Err = t.deleteExpired(ctx, w.Type, w.Path, ev)
	default: // includes a lone check (13): the server rejects it before proposing
		return Result{Err: jute.ErrUnimplemented}, before
	}
	if res.Err != 0 {
		return Result{Err: res.Err}, before
	}
	return res, ev
}

// multi applies ops atomically (DataTree.processTxn for a MultiTxn).
func (t *Tree) multi(ctx *TxnContext, ops []jute.MultiOp) (Result, []Event) {
	for i := range ops {
		if !wellFormed(&ops[i]) {
			return Result{Err: jute.ErrMarshallingError}, nil
		}
	}
	if len(ops) == 0 {
		return Result{}, nil
	}
	results := make([]jute.MultiResult, len(ops))
	var ev []Event
	t.begin()
	for i := range ops {
		r, ev2, code := t.multiOp(ctx, &ops[i], ev)
		if code != 0 {
			t.rollback()
			for j := range results {
				results[j] = jute.MultiResult{Type: jute.OpError}
				switch {
				case j == i:
					results[j].Err = code
				case j > i:
					results[j].Err = jute.ErrRuntimeInconsistency
				}
			}
			return Result{Multi: results}, nil
		}
		results[i], ev = r, ev2
	}
	t.commit()
	return Result{Multi: results}, ev
}

// wellFormed reports whether op is a write op of a multi with its record.
func wellFormed(op *jute.MultiOp) bool {
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
		return op.Create != nil || op.CreateTTL != nil
	case jute.OpCreateTTL:
		return op.CreateTTL != nil
	case jute.OpDelete:
		return op.Delete != nil
	case jute.OpSetData:
		return op.SetData != nil
	case jute.OpCheck:
		return op.Check != nil
	}
	return false
}

// multiOp applies one op of a multi; op is well formed.
func (t *Tree) multiOp(ctx *TxnContext, op *jute.MultiOp, ev []Event) (jute.MultiResult, []Event, int32) {
	r := jute.MultiResult{Type: op.Type}
	var code int32
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		var path string
		var data []byte
		var acl []jute.ACL
		var flags int32
		ttl := int64(-1)
		if c := op.Create; c != nil && op.Type != jute.OpCreateTTL {
			path, data, acl, flags = c.Path, c.Data, c.ACL, c.Flags
		} else {
			c := op.CreateTTL
			path, data, acl, flags = c.Path, c.Data, c.ACL, c.Flags
			if op.Type == jute.OpCreateTTL {
				ttl = c.TTL
			}
		}
		r.Path, r.Stat, ev, code = t.create(ctx, op.Type, path, data, acl, flags, ttl, ev)
		if op.Type == jute.OpCreate {
			r.Stat = jute.Stat{} // result type 1 carries the path only
		} else {
			r.Type = jute.OpCreate2
		}
	case jute.OpDelete:
		ev, code = t.delete(ctx, op.Delete.Path, op.Delete.Version, ev)
	case jute.OpSetData:
		r.Stat, ev, code = t.setDataOp(ctx, op.SetData.Path, op.SetData.Data, op.SetData.Version, ev)
	case jute.OpCheck:
		code = t.check(ctx, op.Check.Path, op.Check.Version)
	}
	return r, ev, code
}
