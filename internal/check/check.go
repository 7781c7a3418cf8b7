package check

import (
	"fmt"
	"math"
)

// Never is the time of an event that did not happen within the history: the
// release of a lock still held at the end, the loss of a session that
// survived.
const Never int64 = math.MaxInt64

// Names of the checkers, as reported in Violation.Checker.
const (
	CheckerLinearizable  = "linearizable"
	CheckerSessionReads  = "session-reads"
	CheckerLockSafety    = "lock-safety"
	CheckerFencedCounter = "fenced-counter"
	CheckerNoLostWrites  = "no-lost-writes"
	CheckerReplicasAgree = "replicas-agree"
	CheckerSessionZxids  = "session-zxids"
	// CheckerSessionLiveness reports a session expired while heard from.
	CheckerSessionLiveness = "session-liveness"
	// CheckerEphemerals reports an ephemeral that outlived its session.
	CheckerEphemerals = "ephemeral-lifetime"
)

// Violation is a history that breaks a checker's invariant.
type Violation struct {
	// Checker is one of the Checker* names.
	Checker string
	// Detail explains the first violation in words: which operations, which
	// clients, which times.
	Detail string
	// Inconclusive is set when the checker gave up (the linearizability
	// search ran out of its time budget) rather than found a violation. The
	// caller decides whether that counts as a failure.
	Inconclusive bool
}

// Error returns "<checker>: <detail>".
func (v *Violation) Error() string {
	return v.Checker + ": " + v.Detail
}

func violationf(checker, format string, args ...any) *Violation {
	return &Violation{Checker: checker, Detail: fmt.Sprintf(format, args...)}
}

// fmtTime prints an instant, spelling Never out.
func fmtTime(t int64) string {
	if t == Never {
		return "never"
	}
	return fmt.Sprint(t)
}
