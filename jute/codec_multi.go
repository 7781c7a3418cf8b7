package jute

import "fmt"

// This file holds multi (14) and multiRead (22): a list of MultiHeader +
// record pairs ended by the terminator header {-1, true, -1}.

// multiTerminator ends the op list of every multi request and response.
var multiTerminator = MultiHeader{Type: -1, Done: true, Err: -1}

// Encode implements Record. Each op is written as MultiHeader{Type, false,
// -1} and its record, then the terminator. An op whose matching pointer is
// nil is written as the zero record of its type; an op of a type that
// MultiOp does not know is written as a bare header (Decode rejects it).
func (r *MultiRequest) Encode(e *Encoder) {
	for i := range r.Ops {
		op := &r.Ops[i]
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		if body := op.record(); body != nil {
			body.Encode(e)
		}
	}
	multiTerminator.Encode(e)
}

// record returns the op's body for encoding, or nil for an unknown type.
func (op *MultiOp) record() Record {
	switch op.Type {
	case OpCreate, OpCreate2, OpCreateContainer:
		if op.Create == nil {
			return &CreateRequest{}
		}
		return op.Create
	case OpCreateTTL:
		if op.CreateTTL == nil {
			return &CreateTTLRequest{}
		}
		return op.CreateTTL
	case OpDelete:
		if op.Delete == nil {
			return &DeleteRequest{}
		}
		return op.Delete
	case OpSetData:
		if op.SetData == nil {
			return &SetDataRequest{}
		}
		return op.SetData
	case OpCheck:
		if op.Check == nil {
			return &CheckVersionRequest{}
		}
		return op.Check
	case OpGetData, OpGetChildren:
		if op.Read == nil {
			return &PathWatchRequest{}
		}
		return op.Read
	}
	return nil
}

// Decode implements Record. It reads ops until a header with Done set. An op
// type other than 1, 2, 4, 5, 8, 13, 15, 19 or 21 fails with
// ErrUnknownMultiOp. Every op consumes at least a 9-byte header, so the
// number of ops is bounded by the input.
func (r *MultiRequest) Decode(d *Decoder) error {
	r.Ops = nil
	var h MultiHeader
	for {
		at := d.Offset()
		if h.Decode(d) != nil || h.Done {
			break
		}
		op := MultiOp{Type: h.Type}
		var body Record
		switch h.Type {
		case OpCreate, OpCreate2, OpCreateContainer:
			op.Create = &CreateRequest{}
			body = op.Create
		case OpCreateTTL:
			op.CreateTTL = &CreateTTLRequest{}
			body = op.CreateTTL
		case OpDelete:
			op.Delete = &DeleteRequest{}
			body = op.Delete
		case OpSetData:
			op.SetData = &SetDataRequest{}
			body = op.SetData
		case OpCheck:
			op.Check = &CheckVersionRequest{}
			body = op.Check
		case OpGetData, OpGetChildren:
			op.Read = &PathWatchRequest{}
			body = op.Read
		default:
			d.fail(fmt.Errorf("%w: type %d at offset %d of multi request", ErrUnknownMultiOp, h.Type, at))
			return d.Err()
		}
		if body.Decode(d) != nil {
			break
		}
		r.Ops = append(r.Ops, op)
	}
	if d.Err() != nil {
		r.Ops = nil
	}
	return d.Err()
}

// Encode implements Record. Each result is written as MultiHeader{Type,
// false, Err} and the body its type calls for (see MultiResult), then the
// terminator. Fields that the type does not use are not written. A result of
// an unknown type is written as a bare header (Decode rejects it).
func (r *MultiResponse) Encode(e *Encoder) {
	for i := range r.Results {
		res := &r.Results[i]
		h := MultiHeader{Type: res.Type, Done: false, Err: res.Err}
		h.Encode(e)
		switch res.Type {
		case OpCreate:
			e.WriteString(res.Path)
		case OpCreate2:
			e.WriteString(res.Path)
			res.Stat.Encode(e)
		case OpDelete, OpCheck:
		case OpSetData:
			res.Stat.Encode(e)
		case OpGetData:
			e.WriteBuffer(res.Data)
			res.Stat.Encode(e)
		case OpGetChildren:
			e.WriteStrings(res.Children)
		case OpError:
			e.WriteInt(res.Err)
		}
	}
	multiTerminator.Encode(e)
}

// Decode implements Record; it is the inverse of Encode. Err comes from the
// header, except for error results (-1), where it comes from the body.
func (r *MultiResponse) Decode(d *Decoder) error {
	r.Results = nil
	var h MultiHeader
	for {
		at := d.Offset()
		if h.Decode(d) != nil || h.Done {
			break
		}
		res := MultiResult{Type: h.Type, Err: h.Err}
		switch h.Type {
		case OpCreate:
			res.Path = d.ReadString()
		case OpCreate2:
			res.Path = d.ReadString()
			_ = res.Stat.Decode(d)
		case OpDelete, OpCheck:
		case OpSetData:
			_ = res.Stat.Decode(d)
		case OpGetData:
			res.Data = d.ReadBuffer()
			_ = res.Stat.Decode(d)
		case OpGetChildren:
			res.Children = d.ReadStrings()
		case OpError:
			res.Err = d.ReadInt()
		default:
			d.fail(fmt.Errorf("%w: result type %d at offset %d of multi response", ErrUnknownMultiOp, h.Type, at))
		}
		if d.Err() != nil {
			break
		}
		r.Results = append(r.Results, res)
	}
	if d.Err() != nil {
		r.Results = nil
	}
	return d.Err()
}
