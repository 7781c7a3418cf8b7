package check

import "fmt"

// FenceOp is one request to a fenced counter, listed in the order the
// resource processed them. The resource accepts a write only when its token
// is at least the highest token it has seen (in any request, accepted or
// not). A client increments by reading the counter (presenting its token,
// so the read raises the highest token seen too) and writing Value, its read
// plus one; a resource that increments by itself reports the value it
// reached as Value.
type FenceOp struct {
	Client int
	Token  int64
	// ReadOnly marks a fenced read: it only raises the highest token seen.
	ReadOnly bool
	// Value is the counter value the attempt writes.
	Value int64
	// Accepted: the resource applied the write.
	Accepted bool
	// Acked: the client received the acceptance; an acknowledged attempt
	// must be accepted.
	Acked bool
}

func (o FenceOp) String() string {
	if o.ReadOnly {
		return fmt.Sprintf("client %d read with token %d", o.Client, o.Token)
	}
	verdict := "rejected"
	switch {
	case o.Acked:
		verdict = "accepted and acknowledged"
	case o.Accepted:
		verdict = "accepted"
	}
	return fmt.Sprintf("client %d write %d with token %d, %s", o.Client, o.Value, o.Token, verdict)
}

// FencedCounter checks a fenced counter's log against its final value:
//
//   - no accepted write carried a token below the highest token the
//     resource had seen before it (a stale holder got through the fence);
//   - the accepted writes count up by one from initial (each write read
//     the value its predecessor wrote); a write that does not was computed
//     from a stale read and overwrote an increment: a lost update, reported
//     with the acknowledged increment it overwrote when there is one;
//   - final equals initial plus the number of accepted writes.
func FencedCounter(ops []FenceOp, initial, final int64) error {
	highest := int64(-1 << 63)
	value := initial
	var lastAccepted *FenceOp
	for i := range ops {
		op := &ops[i]
		if op.ReadOnly {
			highest = max(highest, op.Token)
			continue
		}
		if op.Acked && !op.Accepted {
			return errorf("fence op %d (%s) is acknowledged but not accepted", i, op)
		}
		if op.Accepted {
			if op.Token < highest {
				return violationf(CheckerFencedCounter, "attempt %d (%s) was accepted although the resource had seen token %d", i, op, highest)
			}
			if op.Value != value+1 {
				lost := "an increment"
				if lastAccepted != nil {
					lost = lastAccepted.String()
				}
				return violationf(CheckerFencedCounter, "attempt %d (%s) overwrote the value %d: lost update of %s", i, op, value, lost)
			}
			value = op.Value
			lastAccepted = op
		}
		highest = max(highest, op.Token)
	}
	if final != value {
		return violationf(CheckerFencedCounter, "final value %d, but the accepted writes count to %d", final, value)
	}
	return nil
}
