package check

import (
	"errors"
	"testing"
)

func TestSessionsNotExpired(t *testing.T) {
	life := func(id, timeout, closed, expired int64, answered ...int64) SessionLife {
		return SessionLife{Session: id, Timeout: timeout, Answered: answered, Closed: closed, Expired: expired}
	}
	tests := []struct {
		name     string
		sessions []SessionLife
		slack    int64
		want     []string
	}{
		{name: "empty"},
		{name: "never expired", sessions: []SessionLife{life(1, 100, Never, Never, 10, 50, 90)}},
		{name: "expired after a silence of its timeout", sessions: []SessionLife{life(1, 100, Never, 200, 10, 100)}},
		{name: "answers after the expiry do not count", sessions: []SessionLife{life(1, 100, Never, 200, 100, 250)}},
		{name: "within slack", sessions: []SessionLife{life(1, 100, Never, 180, 100)}, slack: 20},

		{name: "expired while pinging", sessions: []SessionLife{
			life(1, 100, Never, 200, 100),
			life(2, 100, Never, 150, 10, 120, 140),
		}, want: []string{"session 0x2 expired at 150, only 10 after its request invoked at 140"}},
		{name: "beyond slack", sessions: []SessionLife{life(1, 100, Never, 179, 100)}, slack: 20,
			want: []string{"session 0x1 expired at 179"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, SessionsNotExpired(tt.sessions, tt.slack), CheckerSessionLiveness, tt.want...)
		})
	}
}

func TestEphemeralLifetimes(t *testing.T) {
	sessions := []SessionLife{
		{Session: 1, Timeout: 100, Answered: []int64{10, 500}, Closed: Never, Expired: Never},   // alive to the end
		{Session: 2, Timeout: 100, Answered: []int64{10, 200}, Closed: Never, Expired: 320},     // silent after 200
		{Session: 3, Timeout: 100, Answered: []int64{10, 200}, Closed: 250, Expired: Never},     // closed at 250
		{Session: 4, Timeout: 100, Answered: []int64{10, 200}, Closed: Never, Expired: Never},   // silent, expiry never seen
		{Session: 5, Timeout: 100, Answered: []int64{10, 200}, Closed: Never, Expired: 260},     // expired early
		{Session: 6, Timeout: 100, Answered: nil, Closed: Never, Expired: Never},                // never answered
		{Session: 7, Timeout: 100, Answered: []int64{10, 200}, Closed: Never, Expired: Never},   // silent, ends at 300
		{Session: 8, Timeout: 100, Answered: []int64{10}, Closed: Never, Expired: Never - 1000}, // no overflow
	}
	const bound, end = 50, 600
	tests := []struct {
		name       string
		ephemerals []EphemeralLife
		want       []string
	}{
		{name: "empty"},
		{name: "within bounds", ephemerals: []EphemeralLife{
			{Path: "/e1", Owner: 1, Gone: Never},
			{Path: "/e2", Owner: 2, Gone: 340},
			{Path: "/e3", Owner: 3, Gone: 250},
			{Path: "/e4", Owner: 4, Gone: 350},
			{Path: "/e5", Owner: 5, Gone: 300},
			{Path: "/e6", Owner: 6, Gone: Never},
			{Path: "/e8", Owner: 8, Gone: 100},
		}},

		{name: "outlives its silent session", ephemerals: []EphemeralLife{
			{Path: "/e4", Owner: 4, Gone: 351},
		}, want: []string{"ephemeral /e4 of session 0x4 was gone only at 351", "timed out (last answered request invoked at 200, timeout 100) at 300, bound 50"}},
		{name: "outlives its close", ephemerals: []EphemeralLife{
			{Path: "/e3", Owner: 3, Gone: 301},
		}, want: []string{"closed or expired at 250"}},
		{name: "outlives its expiry", ephemerals: []EphemeralLife{
			{Path: "/e5", Owner: 5, Gone: 311},
		}, want: []string{"/e5", "at 260"}},
		{name: "still present at the end", ephemerals: []EphemeralLife{
			{Path: "/e1", Owner: 1, Gone: Never},
			{Path: "/e7", Owner: 7, Gone: Never},
		}, want: []string{"ephemeral /e7 of session 0x7 is still present at the end (600)"}},
		{name: "earliest reported", ephemerals: []EphemeralLife{
			{Path: "/e7", Owner: 7, Gone: Never},
			{Path: "/e3", Owner: 3, Gone: 400},
		}, want: []string{"/e3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, EphemeralLifetimes(tt.ephemerals, sessions, bound, end), CheckerEphemerals, tt.want...)
		})
	}
	t.Run("unknown owner", func(t *testing.T) {
		err := EphemeralLifetimes([]EphemeralLife{{Path: "/x", Owner: 99}}, sessions, bound, end)
		var v *Violation
		if err == nil || errors.As(err, &v) {
			t.Fatalf("want an input error, got %v", err)
		}
	})
}
