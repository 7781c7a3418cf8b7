package server

import (
	"testing"

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
	return &item{ready: make(chan struct{}), build: func(it *item) ([]byte, bool) {
		g.replyZxid = it.res.Zxid
		return []byte{byte(it.res.Zxid)}, false
	}}
}

func (g *queueRig) apply(it *item, zxid int64) {
	g.state = zxid
	it.res.Zxid = zxid
	close(it.ready)
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
