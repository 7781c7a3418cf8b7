package consensus

import (
	"container/heap"
	"context"
	"sync"
)

// appliedTracker publishes the applied index and wakes waiters whose index
// has been reached. Waiters sit in a min-heap keyed by index, so each advance
// touches only the waiters it releases (no polling, no thundering herd).
type appliedTracker struct {
	mu      sync.Mutex
	applied uint64
	waiters waiterHeap
}

type appliedWaiter struct {
	index uint64
	ch    chan struct{} // closed when applied >= index
	pos   int           // position in the heap, -1 once removed
}

func (t *appliedTracker) get() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied
}

// advance sets the applied index (never moving it backwards) and releases
// every waiter at or below it.
func (t *appliedTracker) advance(index uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if index <= t.applied {
		return
	}
	t.applied = index
	for len(t.waiters) > 0 && t.waiters[0].index <= index {
		w := heap.Pop(&t.waiters).(*appliedWaiter)
		close(w.ch)
	}
}

// wait blocks until applied >= index, ctx is done, or stopped is closed.
func (t *appliedTracker) wait(ctx context.Context, index uint64, stopped <-chan struct{}) error {
	t.mu.Lock()
	if t.applied >= index {
		t.mu.Unlock()
		return nil
	}
	w := &appliedWaiter{index: index, ch: make(chan struct{})}
	heap.Push(&t.waiters, w)
	t.mu.Unlock()

	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		t.remove(w)
		return ctx.Err()
	case <-stopped:
		t.remove(w)
		// The final applied index may still satisfy the wait.
		if t.get() >= index {
			return nil
		}
		return ErrStopped
	}
}

func (t *appliedTracker) remove(w *appliedWaiter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.pos >= 0 {
		heap.Remove(&t.waiters, w.pos)
	}
}

type waiterHeap []*appliedWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].index < h[j].index }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos = i
	h[j].pos = j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*appliedWaiter)
	w.pos = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.pos = -1
	*h = old[:n-1]
	return w
}
