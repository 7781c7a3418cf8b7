package main

import (
	"strings"
	"testing"
	"time"
)

func TestHandoffsOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	tests := []struct {
		name           string
		locks          []lockTimes
		n              int
		release, owner time.Duration
	}{
		{"none", nil, 0, 0, 0},
		{"first acquisition starts nothing", []lockTimes{{acquired: at(0)}}, 0, 0, 0},
		{"two hand-offs, given out of order", []lockTimes{
			{waited: true, event: at(1800), acquired: at(1900)},
			{acquired: at(0)},
			{waited: true, event: at(800), acquired: at(1000)},
		}, 2, 1600 * time.Microsecond, 300 * time.Microsecond},
		{"acquired without waiting: no phase", []lockTimes{{acquired: at(0)}, {acquired: at(500)}}, 0, 0, 0},
		{"event before the previous holder acquired: not its release", []lockTimes{
			{acquired: at(1000)},
			{waited: true, event: at(900), acquired: at(1100)},
		}, 0, 0, 0},
		{"acquired after the run's end: not counted", []lockTimes{
			{acquired: at(0)},
			{waited: true, event: at(800), acquired: at(1000)},
			{waited: true, event: at(1800), acquired: at(2100)},
		}, 1, 800 * time.Microsecond, 200 * time.Microsecond},
	}
	end := at(2000)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := handoffsOf(tc.locks, end)
			if h.n != tc.n || h.releaseToEvent != tc.release || h.eventToOwner != tc.owner {
				t.Fatalf("handoffsOf = %d hand-offs, release→event %v, event→acquired %v; want %d, %v, %v",
					h.n, h.releaseToEvent, h.eventToOwner, tc.n, tc.release, tc.owner)
			}
		})
	}
}

func TestHandoffTable(t *testing.T) {
	z := &handoffPhases{n: 2, releaseToEvent: 1600 * time.Microsecond, eventToOwner: 200 * time.Microsecond}
	got := handoffTable(z, nil)
	for _, want := range []string{"| release → next holder's event | 800µs | - |", "| event → acquired | 100µs | - |", "| hand-off | 900µs | - |"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if s := handoffTable(nil, &handoffPhases{}); s != "" {
		t.Errorf("table without hand-offs = %q, want none", s)
	}
}

func TestRoundRatios(t *testing.T) {
	tests := []struct {
		z, a []float64
		want string
	}{
		{[]float64{150}, []float64{100}, ""},
		{[]float64{150, 120}, []float64{100, 100}, " (rounds 1.20–1.50)"},
		{[]float64{150, 120, 160}, []float64{100, 100}, " (rounds 1.20–1.50)"},
		{[]float64{150, 120}, []float64{100, 0}, ""},
	}
	for _, tc := range tests {
		if got := roundRatios(&result{rates: tc.z}, &result{rates: tc.a}); got != tc.want {
			t.Errorf("roundRatios(%v, %v) = %q, want %q", tc.z, tc.a, got, tc.want)
		}
	}
}
