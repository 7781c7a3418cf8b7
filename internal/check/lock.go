package check

import (
	"fmt"
	"sort"
)

// LockHold is one interval during which a client believed it held a lock.
type LockHold struct {
	Client int
	Lock   string
	// Token is the fencing token the acquisition produced (for example the
	// czxid or sequence number of the lock znode).
	Token int64
	// Acquired is the instant the client learnt it holds the lock.
	Acquired int64
	// Released is the instant the client released it (sent the delete), or
	// Never.
	Released int64
	// Lost is the instant the client's session was lost (expired, or the
	// client gave the lock up for a connection loss), or Never. It may
	// precede Acquired (an answer that arrived after the session was gone):
	// the hold is then empty. Both Released and Lost must be set; their zero
	// value is the instant 0, not Never.
	Lost int64
}

// End is the instant the hold ends: the earlier of release and loss.
func (h LockHold) End() int64 { return min(h.Released, h.Lost) }

func (h LockHold) String() string {
	return fmt.Sprintf("client %d held %s with token %d from %d to %s", h.Client, h.Lock, h.Token, h.Acquired, fmtTime(h.End()))
}

// LockSafety checks, lock by lock, that no two holds overlap (holds are
// half-open intervals [Acquired, End), so one may start at the instant the
// previous one ends) and that fencing tokens strictly increase in the order
// of acquisition.
func LockSafety(holds []LockHold) error {
	byLock := make(map[string][]LockHold)
	for i, h := range holds {
		if h.Released < h.Acquired {
			return errorf("lock hold %d (%s): released at %d before it was acquired at %d", i, h.Lock, h.Released, h.Acquired)
		}
		byLock[h.Lock] = append(byLock[h.Lock], h)
	}
	locks := make([]string, 0, len(byLock))
	for l := range byLock {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	var first *Violation
	var firstAt int64
	report := func(at int64, v *Violation) {
		if first == nil || at < firstAt {
			first, firstAt = v, at
		}
	}
	for _, l := range locks {
		hs := byLock[l]
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].Acquired < hs[j].Acquired })
		// Mutual exclusion: a sweep keeping the hold that ends last.
		var widest *LockHold
		for i := range hs {
			h := &hs[i]
			if h.End() <= h.Acquired {
				continue // an empty interval holds nothing
			}
			if widest != nil && h.Acquired < widest.End() {
				report(h.Acquired, violationf(CheckerLockSafety, "two holders of %s at %d: %s; %s", l, h.Acquired, widest, h))
				break
			}
			if widest == nil || h.End() > widest.End() {
				widest = h
			}
		}
		// Fencing tokens strictly increase with acquisition.
		for i := 1; i < len(hs); i++ {
			if hs[i].Token <= hs[i-1].Token {
				report(hs[i].Acquired, violationf(CheckerLockSafety, "fencing token of %s did not increase: %s, then %s", l, &hs[i-1], &hs[i]))
				break
			}
		}
	}
	if first == nil {
		return nil
	}
	return first
}
