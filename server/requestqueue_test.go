package server

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/mutation"
)

// queueRig is a requestQueue with an owner whose replies carry the value of
// state when they are built, and the owner's zxid as their zxid.
type queueRig struct {
	q         requestQueue
	replyZxid int64
	state     int64 // what a read reads (and the zxid its reply carries)
}

func newQueueRig(capacity int) *queueRig {
	g := &queueRig{}
	g.q.init(capacity, 10, &g.replyZxid)
	g.q.buildsEarly = true // one goroutine, as Endpoint
	return g
}

// read is an item that replies with the state at build time.
func (g *queueRig) read() *item {
	return &item{read: true, build: func(*item) ([]byte, bool) {
		g.replyZxid = g.state
		return []byte{byte(g.state)}, false
	}}
}

// write is an item waiting for its apply; apply sets the state.
func (g *queueRig) write() *item {
	return &item{waits: true, build: func(it *item) ([]byte, bool) {
		g.replyZxid = it.res.Zxid
		return []byte{byte(it.res.Zxid)}, false
	}}
}

func (g *queueRig) apply(it *item, zxid int64) {
	g.state = zxid
	it.res.Zxid = zxid
	it.complete()
}

// add arrives and pushes it, as the reader does.
func (g *queueRig) add(t *testing.T, it *item) *item {
	t.Helper()
	g.q.arrive(it)
	require.True(t, g.q.push(it), "queue full")
	return it
}

// answer answers the front item, which must be it and ready, as the writer
// does, and returns its frame.
func (g *queueRig) answer(t *testing.T, it *item) []byte {
	t.Helper()
	require.Same(t, it, g.q.front(), "answered out of arrival order")
	require.True(t, it.isReady())
	require.True(t, g.q.answers(it))
	frame, _, _, _, _ := g.q.turn(it)
	g.q.pop()
	return frame
}

func TestRequestQueueOrder(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, g *queueRig)
	}{
		{"items are answered in arrival order", func(t *testing.T, g *queueRig) {
			a, b, c := g.add(t, g.read()), g.add(t, g.read()), g.add(t, g.read())
			require.Equal(t, 3, g.q.pending())
			for _, it := range []*item{a, b, c} {
				g.answer(t, it)
			}
			require.Nil(t, g.q.front())
			require.Zero(t, g.q.pending())
		}},
		{"a full queue refuses a push; a pop after wantRoom reports the waiting reader", func(t *testing.T, g *queueRig) {
			for range 4 {
				g.add(t, g.read())
			}
			extra := g.read()
			g.q.arrive(extra)
			require.False(t, g.q.push(extra))
			require.True(t, g.q.full())
			g.q.wantRoom()
			g.q.turn(g.q.front())
			require.True(t, g.q.pop(), "the waiting reader is woken")
			require.True(t, g.q.push(extra))
			g.q.turn(g.q.front())
			require.False(t, g.q.pop(), "no reader waits any more")
		}},
		{"the reader's second push after wantRoom sees a pop made in between", func(t *testing.T, g *queueRig) {
			for range 4 {
				g.add(t, g.read())
			}
			extra := g.read()
			g.q.arrive(extra)
			require.False(t, g.q.push(extra))
			g.q.turn(g.q.front())
			require.False(t, g.q.pop(), "popped before the reader announced itself")
			g.q.wantRoom()
			require.True(t, g.q.push(extra), "so the push after wantRoom succeeds and the reader does not wait")
		}},
		{"a write not applied is not ready, and the reads behind it wait", func(t *testing.T, g *queueRig) {
			w := g.add(t, g.write())
			r := g.add(t, g.read())
			require.Same(t, w, g.q.front())
			require.False(t, w.isReady())
			g.apply(w, 7)
			require.Equal(t, []byte{7}, g.answer(t, w))
			require.Equal(t, []byte{7}, g.answer(t, r), "the read sees the write sent before it")
		}},
		{"a read is built on its turn, not at arrival", func(t *testing.T, g *queueRig) {
			r := g.add(t, g.read())
			g.state = 9 // a change applied between arrival and turn
			require.Equal(t, []byte{9}, g.answer(t, r))
		}},
		{"a write is proposed only after earlier reads and holdWrites items were answered", func(t *testing.T, g *queueRig) {
			read, sync := g.read(), &item{holdWrites: true, build: func(*item) ([]byte, bool) { return nil, false }}
			require.True(t, g.q.mayPropose())
			g.add(t, read)
			g.add(t, sync)
			require.False(t, g.q.mayPropose())
			_, _, wake, _, _ := g.q.turn(read)
			g.q.pop()
			require.False(t, wake, "a sync is still pending")
			require.False(t, g.q.mayPropose())
			_, _, wake, _, _ = g.q.turn(sync)
			g.q.pop()
			require.True(t, wake, "the last holding item wakes the reader")
			require.True(t, g.q.mayPropose())
			w := g.add(t, g.write())
			require.True(t, g.q.mayPropose(), "a write holds nothing back")
			g.apply(w, 1)
			_, _, wake, _, _ = g.q.turn(w)
			require.False(t, wake)
		}},
		{"an item dropped before it was pushed releases its hold", func(t *testing.T, g *queueRig) {
			read := g.read()
			g.q.arrive(read)
			require.True(t, g.q.answered(read))
			require.True(t, g.q.mayPropose())
			require.False(t, g.q.answered(read), "released once")
		}},
		{"events up to the reply's zxid go before it, later ones wait", func(t *testing.T, g *queueRig) {
			w := g.add(t, g.write())
			g.add(t, g.read())
			require.True(t, g.q.pushEvent(5, []byte("e5")))
			require.True(t, g.q.pushEvent(8, []byte("e8")))
			g.apply(w, 6)
			_, _, _, pings, events := g.q.turn(w)
			require.Empty(t, pings)
			require.Equal(t, []queuedEvent{{zxid: 5, frame: []byte("e5")}}, events)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newQueueRig(4)) })
	}
}

// TestRequestQueueReadOvertakesWrite: under the read-overtakes-write
// mutation a read pipelined behind a write is built at arrival and misses
// the write; without it, it sees the write.
func TestRequestQueueReadOvertakesWrite(t *testing.T) {
	for _, tc := range []struct {
		mutated bool
		want    byte
	}{{false, 3}, {true, 0}} {
		t.Run(map[bool]string{false: "fifo", true: "mutated"}[tc.mutated], func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.ReadOvertakesWrite, tc.mutated))
			g := newQueueRig(4)
			w := g.add(t, g.write())
			r := g.add(t, g.read())
			g.apply(w, 3)
			g.answer(t, w)
			require.Equal(t, []byte{tc.want}, g.answer(t, r))
			require.True(t, g.q.mayPropose())
		})
	}
}

// TestRequestQueuePendingSeenFromElsewhere: pending is read by goroutines
// other than the reader and the writer (connViews for cons and stat). While
// a busy connection pushes and pops, such a reader must never see a count
// below zero or above the queue's capacity.
func TestRequestQueuePendingSeenFromElsewhere(t *testing.T) {
	g := newQueueRig(4)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the reader and the writer of a busy connection, in turn
		defer close(done)
		it := &item{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 100 {
				g.q.push(it)
				g.q.pop()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for g.q.head.Load() == 0 { // the pair runs
		runtime.Gosched()
	}
	for i := range 5_000_000 {
		if n := g.q.pending(); n < 0 || n > g.q.capacity {
			t.Fatalf("load %d: pending() = %d, want 0..%d (cons would print queued=%d)", i, n, g.q.capacity, n)
		}
	}
}

// TestRequestQueueWriteOvertakesRead: a write may not be proposed while a
// read before it is unanswered, unless the write-overtakes-read mutation
// is on.
func TestRequestQueueWriteOvertakesRead(t *testing.T) {
	for _, mutated := range []bool{false, true} {
		t.Run(map[bool]string{false: "fifo", true: "mutated"}[mutated], func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.WriteOvertakesRead, mutated))
			g := newQueueRig(4)
			r := g.add(t, g.read())
			require.Equal(t, mutated, g.q.mayPropose())
			g.answer(t, r)
			require.True(t, g.q.mayPropose())
		})
	}
}

// TestRequestQueueInitIsSmall: a new connection's queue does not allocate
// a ring of its whole capacity (maxInFlight slots, 8 KiB, was half of what
// a session that connects and closes allocated); the ring grows on demand.
func TestRequestQueueInitIsSmall(t *testing.T) {
	const n = 200
	qs := make([]*requestQueue, n)
	var zxid int64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range qs {
		qs[i] = new(requestQueue)
		qs[i].init(maxInFlight, maxQueuedNotifications, &zxid)
	}
	runtime.ReadMemStats(&after)
	perQueue := (after.TotalAlloc - before.TotalAlloc) / n
	require.Less(t, perQueue, uint64(512), "bytes allocated per new request queue (the queue itself included)")
	runtime.KeepAlive(qs)
}

// TestRequestQueueGrowsToCapacity: the ring grows as items are pushed, up
// to the capacity and no further, and items come out in order across
// growths and wrap-arounds.
func TestRequestQueueGrowsToCapacity(t *testing.T) {
	for _, capacity := range []int{1, 3, firstRingSize, firstRingSize + 1, 37, maxInFlight} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			g := newQueueRig(capacity)
			items := make([]*item, 0, 3*capacity)
			next := 0 // the index in items answered next
			pushAll := func() {
				for {
					it := &item{}
					if !g.q.push(it) {
						break
					}
					items = append(items, it)
				}
				require.Equal(t, capacity, g.q.pending())
				require.True(t, g.q.full())
			}
			popSome := func(k int) {
				for range k {
					require.Same(t, items[next], g.q.front())
					g.q.pop()
					next++
				}
			}
			pushAll()
			popSome((capacity + 1) / 2) // the next pushes wrap around
			pushAll()
			popSome(capacity)
			require.Nil(t, g.q.front())
			require.LessOrEqual(t, len(g.q.ring.Load().slots), capacity)
		})
	}
}

// TestRequestQueueGrowsWhileWriterPops: the reader pushes, growing the
// ring, while the writer pops on another goroutine; every item comes out
// once, in order. Each round starts from a new queue, so growths race with
// pops again and again. Run with -race.
func TestRequestQueueGrowsWhileWriterPops(t *testing.T) {
	const rounds, perRound = 500, 300
	for _, capacity := range []int{7, 64, maxInFlight} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			items := make([]item, perRound)
			for range rounds {
				g := newQueueRig(capacity)
				done := make(chan error, 1)
				go func() { // the writer
					for i := 0; i < perRound; {
						it := g.q.front()
						if it == nil {
							runtime.Gosched()
							continue
						}
						if it != &items[i] {
							done <- fmt.Errorf("item %d out of order", i)
							return
						}
						g.q.pop()
						i++
					}
					done <- nil
				}()
				for i := range items { // the reader
					for !g.q.push(&items[i]) {
						runtime.Gosched()
					}
				}
				require.NoError(t, <-done)
			}
		})
	}
}

// TestRequestQueueGrownRingReleasesFirstSlots: after the ring grew, the
// writer clears the queue's first ring, which lives as long as the
// connection: answered items (and their requests' data) are not kept.
func TestRequestQueueGrownRingReleasesFirstSlots(t *testing.T) {
	g := newQueueRig(maxInFlight)
	for range firstRingSize + 1 { // one more than the first ring: it grows
		require.True(t, g.q.push(&item{}))
	}
	for range firstRingSize + 1 {
		require.NotNil(t, g.q.front())
		g.q.pop()
	}
	for i := range g.q.firstSlots {
		require.Nil(t, g.q.firstSlots[i].Load(), "first ring slot %d still holds an answered item", i)
	}
}

// TestItemFitsItsSizeClass: a write allocates one item per request; at 256
// bytes it takes the 256-byte size class (a field more, or an applyResult
// instead of a writeResult, makes it 288 or 320).
func TestItemFitsItsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(item{}), uintptr(256))
}
