package main

import (
	"fmt"
	"sort"
	"time"
)

// lockTimes is one acquisition of the lock hand-off workload, as its client
// saw it: when the watch on its predecessor fired (waited: it had one),
// and when getChildren showed its node first (acquired; the release's
// delete is sent right after).
type lockTimes struct {
	waited          bool
	event, acquired time.Time
}

// handoffPhases splits a hand-off into what the server does for it: from
// the holder's release (its delete sent) to the next holder's watch event
// (the delete committed and applied on the next holder's server, the event
// written), and from that event to the acquisition (the next holder's
// getChildren). Sums over n hand-offs.
type handoffPhases struct {
	n                            int
	releaseToEvent, eventToOwner time.Duration
}

// handoffsOf pairs each acquisition that waited for an event with the one
// before it (acquisitions in acquisition order: one lock, one holder at a
// time) and sums the phases. An acquisition that did not wait (it found
// itself first at once) starts no phase. Only acquisitions before end (the
// run's end) count, as for the latencies: the clients finish the lock they
// wait for when the run ends.
func handoffsOf(locks []lockTimes, end time.Time) *handoffPhases {
	var sorted []lockTimes
	for _, l := range locks {
		if l.acquired.Before(end) {
			sorted = append(sorted, l)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].acquired.Before(sorted[j].acquired) })
	h := &handoffPhases{}
	for k := 1; k < len(sorted); k++ {
		prev, cur := sorted[k-1], sorted[k]
		if !cur.waited || cur.event.Before(prev.acquired) {
			continue // the event came before the previous holder had the lock: not its release
		}
		h.n++
		h.releaseToEvent += cur.event.Sub(prev.acquired)
		h.eventToOwner += cur.acquired.Sub(cur.event)
	}
	return h
}

func (h *handoffPhases) add(o handoffPhases) {
	h.n += o.n
	h.releaseToEvent += o.releaseToEvent
	h.eventToOwner += o.eventToOwner
}

// means returns the mean of each phase.
func (h handoffPhases) means() (releaseToEvent, eventToOwner time.Duration) {
	if h.n == 0 {
		return 0, 0
	}
	n := time.Duration(h.n)
	return (h.releaseToEvent / n).Round(time.Microsecond), (h.eventToOwner / n).Round(time.Microsecond)
}

func (h handoffPhases) String() string {
	r, e := h.means()
	return fmt.Sprintf("hand-off: release→event %v, event→acquired %v (mean of %d)", r, e, h.n)
}

// handoffTable is the phase table of the lock hand-off workload, zkraft
// beside ZooKeeper; "" if neither measured one.
func handoffTable(z, a *handoffPhases) string {
	if (z == nil || z.n == 0) && (a == nil || a.n == 0) {
		return ""
	}
	cell := func(h *handoffPhases, phase int) string {
		if h == nil || h.n == 0 {
			return "-"
		}
		r, e := h.means()
		return []time.Duration{r, e, r + e}[phase].String()
	}
	s := "\nLock hand-offs, mean per hand-off: release (the holder's delete sent) → the next holder's watch event → its getChildren showing it first\n\n"
	s += "| phase | zkraft | ZooKeeper |\n|---|---|---|\n"
	for i, name := range []string{"release → next holder's event", "event → acquired", "hand-off"} {
		s += fmt.Sprintf("| %s | %s | %s |\n", name, cell(z, i), cell(a, i))
	}
	return s
}
