package session

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const tick = 2000 // ms, ZooKeeper's default tickTime

// epoch is a multiple of the tick, so that the tests can name exact deadlines.
var epoch = time.UnixMilli(1_767_225_600_000)

func newTestTracker() (*Tracker, *FakeClock) {
	clock := NewFakeClock(epoch)
	return NewTracker(clock, tick), clock
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func TestRoundUp(t *testing.T) {
	tests := []struct{ ms, tick, want int64 }{
		{0, 2000, 2000},
		{1, 2000, 2000},
		{1999, 2000, 2000},
		{2000, 2000, 4000}, // strictly greater, as ZooKeeper's roundToNextInterval
		{2001, 2000, 4000},
		{-1, 2000, 0},
		{-2000, 2000, 0},
		{-2001, 2000, -2000},
		{7, 1, 8},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, roundUp(tt.ms, tt.tick), "roundUp(%d, %d)", tt.ms, tt.tick)
	}
}

// TestTrackerExpiryWindow checks the ZooKeeper guarantee that a session
// expires between T and T+tick after its last touch, for touches at every
// phase of the tick.
func TestTrackerExpiryWindow(t *testing.T) {
	const timeoutMs = 4000
	for offset := int64(0); offset < tick; offset += 250 {
		tr, clock := newTestTracker()
		clock.Advance(ms(offset))
		touched := clock.Now()
		tr.Track(1, timeoutMs)

		clock.Set(touched.Add(ms(timeoutMs - 1)))
		require.Empty(t, tr.Expired(), "offset %d: not expired before T", offset)

		deadline, ok := tr.NextDeadline()
		require.True(t, ok)
		after := deadline.Sub(touched)
		require.Greater(t, after, ms(timeoutMs), "offset %d", offset)
		require.LessOrEqual(t, after, ms(timeoutMs+tick), "offset %d", offset)
		require.Zero(t, deadline.UnixMilli()%tick, "deadline is a multiple of the tick")

		clock.Set(deadline.Add(-time.Millisecond))
		require.Empty(t, tr.Expired(), "offset %d: not expired just before the deadline", offset)
		clock.Set(deadline)
		require.Equal(t, []int64{1}, tr.Expired(), "offset %d: expired at the deadline", offset)
		clock.Set(touched.Add(ms(timeoutMs + tick)))
		require.Equal(t, []int64{1}, tr.Expired(), "offset %d: expired by T+tick", offset)
		require.Equal(t, []int64{1}, tr.Expired(), "Expired does not remove")
		require.Equal(t, 1, tr.Len())
	}
}

func TestTrackerTouchPostpones(t *testing.T) {
	tr, clock := newTestTracker()
	tr.Track(1, 4000)
	tr.Track(2, 4000)
	for range 10 {
		clock.Advance(3 * time.Second)
		require.True(t, tr.Touch(1))
	}
	require.Equal(t, []int64{2}, tr.Expired(), "touched session lives, the other expires")
	d, ok := tr.Deadline(1)
	require.True(t, ok)
	require.Equal(t, epoch.Add(30*time.Second+6*time.Second).UnixMilli(), d.UnixMilli())

	require.False(t, tr.Touch(3), "unknown session")
}

func TestTrackerTrackResets(t *testing.T) {
	tr, clock := newTestTracker()
	tr.Track(1, 4000)
	clock.Advance(3 * time.Second)
	tr.Track(1, 10000) // reattach with a new timeout
	require.Equal(t, 1, tr.Len())
	clock.Advance(9 * time.Second)
	require.Empty(t, tr.Expired())
	clock.Advance(3 * time.Second)
	require.Equal(t, []int64{1}, tr.Expired())
	// The new timeout is used by later touches.
	require.True(t, tr.Touch(1))
	d, _ := tr.Deadline(1)
	require.Equal(t, roundUp(clock.Now().UnixMilli()+10000, tick), d.UnixMilli())
}

func TestTrackerSetClosing(t *testing.T) {
	tr, clock := newTestTracker()
	tr.Track(1, 4000)
	tr.Track(2, 8000)
	clock.Advance(7 * time.Second)
	require.Equal(t, []int64{1}, tr.Expired())

	tr.SetClosing(1)
	require.True(t, tr.IsClosing(1))
	require.False(t, tr.IsClosing(2))
	require.False(t, tr.IsClosing(3))
	require.Empty(t, tr.Expired(), "closing sessions are not returned again")
	require.False(t, tr.Touch(1), "closing sessions cannot be touched")
	require.Equal(t, []int64{1}, tr.Closing())
	_, ok := tr.Deadline(1)
	require.False(t, ok)

	next, ok := tr.NextDeadline()
	require.True(t, ok)
	require.Equal(t, epoch.Add(10*time.Second), next, "NextDeadline ignores closing sessions")

	tr.Track(1, 4000)
	require.True(t, tr.IsClosing(1), "Track does not revive a closing session")
	require.Empty(t, tr.Expired())

	require.Equal(t, 2, tr.Len())
	tr.Remove(1)
	require.Equal(t, 1, tr.Len())
	require.False(t, tr.IsClosing(1))
	require.Empty(t, tr.Closing())
	tr.Remove(1) // unknown: no-op
	tr.SetClosing(99)
	require.Equal(t, 1, tr.Len())

	tr.Remove(2)
	_, ok = tr.NextDeadline()
	require.False(t, ok)
	require.Zero(t, tr.Len())
}

func TestTrackerResetAll(t *testing.T) {
	tr, clock := newTestTracker()
	tr.Track(1, 4000)
	tr.Track(2, 4000)
	tr.Track(9, 4000)
	clock.Advance(10 * time.Second)
	require.Equal(t, []int64{1, 2, 9}, tr.Expired())
	tr.SetClosing(1)

	// A new leader: every session in the table gets a full fresh timeout,
	// closing marks and unknown sessions are forgotten.
	tr.ResetAll([]Session{{ID: 1, TimeoutMs: 4000}, {ID: 2, TimeoutMs: 20000}})
	require.Equal(t, 2, tr.Len())
	require.False(t, tr.IsClosing(1))
	require.Empty(t, tr.Expired())
	require.False(t, tr.Touch(9))

	clock.Advance(6 * time.Second)
	require.Equal(t, []int64{1}, tr.Expired())
	clock.Advance(16 * time.Second)
	require.Equal(t, []int64{1, 2}, tr.Expired())
}

func TestTrackerNextDeadline(t *testing.T) {
	tr, clock := newTestTracker()
	_, ok := tr.NextDeadline()
	require.False(t, ok)

	tr.Track(1, 10000)
	tr.Track(2, 4000)
	tr.Track(3, 4100) // same bucket as 2
	next, ok := tr.NextDeadline()
	require.True(t, ok)
	require.Equal(t, epoch.Add(6*time.Second), next)

	clock.Set(next)
	require.Equal(t, []int64{2, 3}, tr.Expired())
	tr.Remove(2)
	tr.SetClosing(3)
	next, ok = tr.NextDeadline()
	require.True(t, ok)
	require.Equal(t, epoch.Add(12*time.Second), next)
}

func TestTrackerTickBelowOne(t *testing.T) {
	clock := NewFakeClock(epoch)
	tr := NewTracker(clock, 0)
	tr.Track(1, 100)
	d, ok := tr.Deadline(1)
	require.True(t, ok)
	require.Equal(t, epoch.Add(101*time.Millisecond), d, "tick 1 ms: deadline just after T")
}

func TestTrackerConcurrent(t *testing.T) {
	tr, clock := newTestTracker()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				id := int64(w*1000 + i%50)
				tr.Track(id, 4000)
				tr.Touch(id)
				if i%7 == 0 {
					tr.SetClosing(id)
				}
				if i%11 == 0 {
					tr.Remove(id)
				}
				tr.Expired()
				tr.NextDeadline()
				clock.Advance(time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, tr.Len(), 200)
}

func TestFakeClock(t *testing.T) {
	c := NewFakeClock(epoch)
	require.Equal(t, epoch, c.Now())
	c.Advance(time.Second)
	require.Equal(t, epoch.Add(time.Second), c.Now())
	c.Set(epoch)
	require.Equal(t, epoch, c.Now())

	var sys Clock = SystemClock{}
	require.WithinDuration(t, time.Now(), sys.Now(), time.Minute)
}

func TestTrackerClockBeforeBase(t *testing.T) {
	tr, clock := newTestTracker()
	clock.Set(epoch.Add(-1500 * time.Millisecond)) // e.g. a fake clock set back
	tr.Track(1, 1000)
	d, ok := tr.Deadline(1)
	require.True(t, ok)
	require.Equal(t, epoch, d, "-1500+1000 = -500 rounds up to 0")
	clock.Set(epoch.Add(-time.Millisecond))
	require.Empty(t, tr.Expired())
	clock.Set(epoch)
	require.Equal(t, []int64{1}, tr.Expired())
}

func TestTrackerSystemClock(t *testing.T) {
	tr := NewTracker(SystemClock{}, tick)
	before := time.Now()
	tr.Track(1, 4000)
	after := time.Now()
	d, ok := tr.Deadline(1)
	require.True(t, ok)
	require.True(t, d.After(before.Add(4000*time.Millisecond)), "deadline %v", d)
	require.False(t, d.After(after.Add((4000+tick)*time.Millisecond)), "deadline %v", d)
	require.Empty(t, tr.Expired())
}
