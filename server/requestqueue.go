package server

import (
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/internal/mutation"
)

// item is one request of a connection, answered in arrival order. If ready
// is not nil, the item is answered only once it is closed (a write's apply,
// a sync's read barrier, a reconfig's outcome); build then makes its reply.
type item struct {
	ready    chan struct{}
	res      applyResult // set before ready is closed
	err      error       // set before ready is closed; answer closes the connection on it
	deadline time.Time
	// build makes the reply frame when the item's turn comes (a read runs
	// then); closeAfter: the connection is closed after it. The frame may
	// alias the owner's encoder until the next build.
	build    func(it *item) (frame []byte, closeAfter bool)
	received time.Time
	read     bool   // a read: later writes of the connection wait until it ran
	reqID    uint64 // the proposal a write waits for, so a timeout can drop its waiter
	// holdWrites: later writes of the connection wait until it was answered,
	// as after a read. Set on every item whose reply zxid is read when it is
	// built (syncs, replies refused before proposing) or is not known when
	// later writes arrive (reconfig), so reply zxids never go backwards.
	holdWrites bool
	// held: the item counts in requestQueue.holding (arrive), until answered.
	held bool
	// early is the reply built at arrival, under the read-overtakes-write
	// mutation only; nil otherwise.
	early *builtReply
}

// builtReply is a reply built before its turn (read-overtakes-write).
type builtReply struct {
	frame      []byte
	closeAfter bool
	zxid       int64
}

// holdsWrites reports whether later writes of the connection must wait
// until it was answered (mayPropose): reads, so they see exactly the writes
// sent before them, and holdWrites items, so a write sent after a sync is
// applied after it, as in ZooKeeper, and reply zxids never go backwards.
func (it *item) holdsWrites() bool { return it.read || it.holdWrites }

// isReady reports whether it may be answered now: it waits for nothing, or
// what it waits for happened (its ready channel is closed).
func (it *item) isReady() bool {
	if it.ready == nil {
		return true
	}
	select {
	case <-it.ready:
		return true
	default:
		return false
	}
}

// requestQueue is one connection's requests in arrival order and every
// decision on them, without goroutines: which item is answered next (the
// oldest), whether it is ready, whether it gets an answer, when its reply
// is built (a read only on its turn, after every earlier item was
// answered), whether a write may be proposed (not while a read or
// holdWrites item before it is unanswered), and which queued events and
// ping replies go before each reply (replyQueue). The server's connection
// (conn.go) drives it from two goroutines: the reader (arrive, push,
// wantRoom, mayPropose, answered when push is given up) and the writer
// (front, pop, turn, and replyQueue's takers); Endpoint drives it step by step on one
// goroutine (the simulator). The owner does the waiting, the proposing and
// the writing.
//
// The item ring is single-producer single-consumer: push only from the
// reader, front and pop only from the writer; head and tail only grow, and
// an item is stored before tail moves past it, so the writer sees it whole.
// It takes no lock of its own; replyQueue.mu is a leaf (doc.go). A reply
// is built with no lock of this queue held, so a read, which takes
// stateMachine.mu's read side, never runs under replyQueue.mu while Apply,
// holding the write side, queues events.
type requestQueue struct {
	replyQueue

	ring       []*item
	head       atomic.Uint64 // next item to answer (writer)
	tail       atomic.Uint64 // next free slot (reader)
	roomWanted atomic.Bool   // the reader waits for a pop (wantRoom)

	// replyZxid points at the owner's record of the zxid of the last
	// reply frame it built (conn.replyZxid, Endpoint.replyZxid); turn reads
	// it after build to order events before the reply.
	replyZxid *int64
}

// init sizes the queue: at most capacity unanswered items (the reader
// stops reading at that: back-pressure) and maxOOB queued events and ping
// replies each.
func (q *requestQueue) init(capacity, maxOOB int, replyZxid *int64) {
	q.ring = make([]*item, capacity)
	q.maxOOB = maxOOB
	q.replyZxid = replyZxid
}

// readOvertakesWrite reports the read-overtakes-write mutation: a read is
// built when it arrives instead of on its turn.
func readOvertakesWrite() bool { return mutation.Enabled(mutation.ReadOvertakesWrite) }

// arrive records it, a request just decoded, before it is pushed: a read or
// holdWrites item holds later writes back until answered. Under the
// read-overtakes-write mutation a read is built here, at arrival, and holds
// nothing back (on the server that is the reader goroutine, racing the
// writer's encoder: only the simulator switches mutations on).
func (q *requestQueue) arrive(it *item) {
	if it.read && readOvertakesWrite() {
		*q.replyZxid = 0
		frame, closeAfter := it.build(it)
		it.early = &builtReply{frame: append([]byte(nil), frame...), closeAfter: closeAfter, zxid: *q.replyZxid}
		return
	}
	if it.holdsWrites() {
		it.held = true
		q.holding.Add(1)
	}
}

// push queues it after every item pushed before it (reader side); false
// if the queue is full: then the reader calls wantRoom, pushes again, and
// only if that fails too waits until a pop reports it (wakeReader).
func (q *requestQueue) push(it *item) bool {
	t := q.tail.Load()
	if t-q.head.Load() >= uint64(len(q.ring)) {
		return false
	}
	q.ring[t%uint64(len(q.ring))] = it
	q.tail.Store(t + 1)
	return true
}

// wantRoom records that the reader found the queue full and will wait for
// a pop (reader side); it must try push again before it waits.
func (q *requestQueue) wantRoom() { q.roomWanted.Store(true) }

// full reports that push would fail now.
func (q *requestQueue) full() bool { return q.pending() >= len(q.ring) }

// front is the item answered next: the oldest not popped (writer side);
// nil if none.
func (q *requestQueue) front() *item {
	h := q.head.Load()
	if h == q.tail.Load() {
		return nil
	}
	return q.ring[h%uint64(len(q.ring))]
}

// pop removes the front item (writer side); wakeReader reports that the
// reader waits for room (wantRoom), so it is to be woken.
func (q *requestQueue) pop() (wakeReader bool) {
	h := q.head.Load()
	q.ring[h%uint64(len(q.ring))] = nil
	q.head.Store(h + 1)
	// After the store: either the reader's push after wantRoom sees the
	// room made here, or this sees its flag (sequentially consistent
	// atomics), so a waiting reader is never left without a wake-up.
	return q.roomWanted.Load() && q.roomWanted.Swap(false)
}

// pending is the number of items pushed and not popped.
func (q *requestQueue) pending() int { return int(q.tail.Load() - q.head.Load()) }

// turn builds the reply of it, the item whose turn came, ready and
// answered (answers): a read runs now, after every earlier item of the
// connection was answered, so it sees the writes sent before it. It
// returns the frame, whether the connection closes after it, whether it was
// the last item holding writes back (wake a reader waiting to propose), and
// the events and ping replies to write before the frame (beforeReply).
func (q *requestQueue) turn(it *item) (frame []byte, closeAfter, wakeReader bool, pings, events []queuedEvent) {
	var zxid int64
	if e := it.early; e != nil {
		frame, closeAfter, zxid = e.frame, e.closeAfter, e.zxid
	} else {
		*q.replyZxid = 0
		frame, closeAfter = it.build(it)
		zxid = *q.replyZxid
	}
	wakeReader = q.answered(it)
	pings, events = q.beforeReply(zxid)
	return frame, closeAfter, wakeReader, pings, events
}
