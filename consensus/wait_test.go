package consensus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAppliedTrackerReleasesInOrder(t *testing.T) {
	var tr appliedTracker
	stop := make(chan struct{})
	ctx := testCtx(t)
	results := make(map[uint64]chan error)
	for _, idx := range []uint64{5, 1, 3, 9} {
		ch := make(chan error, 1)
		results[idx] = ch
		go func() { ch <- tr.wait(ctx, idx, stop) }()
	}
	// Every waiter is registered before advancing.
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.waiters) == 4
	}, testTimeout, time.Millisecond)

	tr.advance(3)
	require.NoError(t, <-results[1])
	require.NoError(t, <-results[3])
	tr.advance(2) // never moves backwards
	require.Equal(t, uint64(3), tr.get())
	tr.advance(6)
	require.NoError(t, <-results[5])
	close(stop)
	require.ErrorIs(t, <-results[9], ErrStopped)
	require.Empty(t, tr.waiters)

	// Already reached: returns at once even after stop.
	require.NoError(t, tr.wait(ctx, 6, stop))
}

func TestAppliedTrackerCancel(t *testing.T) {
	var tr appliedTracker
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, tr.wait(ctx, 10, nil), context.Canceled)
	require.Empty(t, tr.waiters, "a cancelled waiter is removed")
}
