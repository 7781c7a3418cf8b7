package server

import (
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/znode"
)

// item is one request of a connection, answered in arrival order. If waits,
// the item is answered only once complete ran (a write's apply, a sync's
// read barrier, a reconfig's outcome); build then makes its reply.
type item struct {
	// Fields are ordered so that the item takes 256 bytes (a write
	// allocates one per request).

	// signal, when not nil, is signalled (without blocking) by complete:
	// the connection's writer waits on it for the item it answers next
	// (conn.readyC). Set before anything can complete the item.
	signal   chan struct{}
	res      writeResult // set before complete
	err      error       // set before complete; answer closes the connection on it
	deadline time.Time
	// build makes the reply frame when the item's turn comes (a read runs
	// then); closeAfter: the connection is closed after it. The frame may
	// alias the owner's encoder until the next build.
	build    func(it *item) (frame []byte, closeAfter bool)
	received time.Time
	reqID    uint64 // the proposal a write waits for, so a timeout can drop its waiter
	// early is the reply built at arrival, under the read-overtakes-write
	// mutation only; nil otherwise.
	early *builtReply
	// conn, xid and op are a connection's write's (conn.handleWrite): the
	// item is its proposal's waiter, and its reply is built from them.
	conn    *conn
	xid, op int32
	// done is set by complete, after res and err: the item is ready.
	done  atomic.Bool
	waits bool // answered only once complete ran
	read  bool // a read: later writes of the connection wait until it ran
	// holdWrites: later writes of the connection wait until it was answered,
	// as after a read. Set on every item whose reply zxid is read when it is
	// built (syncs, replies refused before proposing) or is not known when
	// later writes arrive (reconfig), so reply zxids never go backwards.
	holdWrites bool
	// held: the item counts in requestQueue.holding (arrive), until answered.
	held bool
}

// writeResult is what an item keeps of its entry's applyResult: all but
// the session, which only the handshake's entries have (and it waits for
// them without an item), so that an item fits a smaller allocation.
type writeResult struct {
	Zxid int64
	Err  int32
	Res  znode.Result
}

// builtReply is a reply built before its turn (read-overtakes-write).
type builtReply struct {
	frame      []byte
	closeAfter bool
	zxid       int64
}

// The items of a connection's requests, made here for both drivers of a
// requestQueue (requests.go's reader and Endpoint.handle), so whether an
// item waits and whether it holds later writes back cannot differ between
// them. build makes the reply (item.build); deadline bounds the wait of an
// item that waits (the zero time: none, Endpoint's caller owns timeouts).

// readItem is a read: built on its turn, so it sees the writes sent before
// it; later writes wait until it was answered.
func readItem(build func(it *item) ([]byte, bool)) *item {
	return &item{read: true, build: build}
}

// refusalItem is a reply that needs no waiting and carries the zxid
// applied when it is built (a request refused before proposing, a sync
// without barrier): later writes wait until it was answered, so reply
// zxids never go backwards.
func refusalItem(build func(it *item) ([]byte, bool)) *item {
	return &item{holdWrites: true, build: build}
}

// syncItem is a sync, answered with the zxid applied when it is built: if
// barrier, once its ReadIndex barrier applied (complete). Later writes
// wait until it was answered, so a write sent after a sync is applied
// after it, as in ZooKeeper.
func syncItem(barrier bool, deadline time.Time, build func(it *item) ([]byte, bool)) *item {
	it := &item{holdWrites: true, build: build}
	if barrier {
		it.waits, it.deadline = true, deadline
	}
	return it
}

// writeItem is a write or closeSession, answered once its entry applied
// (res set, complete). It holds nothing back: entries of a connection
// apply in the order they were proposed.
func writeItem(deadline time.Time, build func(it *item) ([]byte, bool)) *item {
	return &item{waits: true, deadline: deadline, build: build}
}

// holdsWrites reports whether later writes of the connection must wait
// until it was answered (mayPropose): reads, so they see exactly the writes
// sent before them, and holdWrites items, so a write sent after a sync is
// applied after it, as in ZooKeeper, and reply zxids never go backwards.
func (it *item) holdsWrites() bool { return it.read || it.holdWrites }

// isReady reports whether it may be answered now: it waits for nothing, or
// what it waits for happened (complete ran).
func (it *item) isReady() bool {
	return !it.waits || it.done.Load()
}

// complete marks a waiting item ready, once its res or err is set, and
// wakes its connection's writer. Any goroutine may call it, once. An item
// has no channel of its own: one per write was an allocation on the write
// path.
func (it *item) complete() {
	it.done.Store(true)
	if it.signal != nil {
		select {
		case it.signal <- struct{}{}:
		default: // a wake-up is pending already: the writer checks every item it waits for
		}
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
//
// The ring starts small, in the queue itself (firstSlots), and only the
// reader grows it, doubling up to capacity, when a push finds it full: most
// connections have one or two requests in flight, and a ring of capacity
// (maxInFlight) slots made for each one was half of what a session that
// only connects and closes allocated. grow copies the unanswered items
// (head to tail) into the new ring before publishing it, and tail moves
// only after that, so a writer that sees an item through tail finds it in
// whichever ring it then loads. Slots are atomic because grow reads slots
// the writer may be clearing (pop); a popped item that grow copied stays
// in the new ring's slot, below head and never read again, until a push
// reuses the slot.
type requestQueue struct {
	replyQueue

	ring       atomic.Pointer[itemRing] // the current ring; replaced by the reader only (grow)
	capacity   int                      // most unanswered items (back-pressure)
	head       atomic.Uint64            // next item to answer (writer)
	tail       atomic.Uint64            // next free slot (reader)
	roomWanted atomic.Bool              // the reader waits for a pop (wantRoom)

	// first is the ring until the first grow, over firstSlots: no
	// allocation for a connection that never has more in flight.
	first      itemRing
	firstSlots [firstRingSize]atomic.Pointer[item]
	// firstCleared (writer side): once the writer sees a grown ring, it
	// clears firstSlots, which the reader copied before it published that
	// ring and never reads again; otherwise the queue, which lives as long
	// as its connection, would keep up to firstRingSize answered items
	// (and their requests' data) alive.
	firstCleared bool

	// replyZxid points at the owner's record of the zxid of the last
	// reply frame it built (conn.replyZxid, Endpoint.replyZxid); turn reads
	// it after build to order events before the reply.
	replyZxid *int64
	// buildsEarly: the owner arrives and builds on one goroutine
	// (Endpoint), so the read-overtakes-write mutation may build a read at
	// arrival (arrive). Set after init, before the first arrive.
	buildsEarly bool
}

// firstRingSize is the ring of a new connection's queue (requestQueue.first).
const firstRingSize = 4

// itemRing is the storage of a requestQueue's items: the item of index i
// (head <= i < tail) is in slots[i % len(slots)].
type itemRing struct {
	slots []atomic.Pointer[item]
}

// slot is where the item of index i is kept.
func (r *itemRing) slot(i uint64) *atomic.Pointer[item] {
	return &r.slots[i%uint64(len(r.slots))]
}

// init sizes the queue: at most capacity unanswered items (the reader
// stops reading at that: back-pressure) and maxOOB queued events and ping
// replies each. The ring starts at firstRingSize slots (fewer if capacity
// is smaller) and grows on demand.
func (q *requestQueue) init(capacity, maxOOB int, replyZxid *int64) {
	q.capacity = max(capacity, 1)
	q.first.slots = q.firstSlots[:min(firstRingSize, q.capacity)]
	q.ring.Store(&q.first)
	q.maxOOB = maxOOB
	q.replyZxid = replyZxid
}

// grow replaces r, the full current ring holding the items from h to t,
// with one twice as large (at most capacity) holding the same items
// (reader side). h may be behind the writer's head: items popped meanwhile
// are copied too, into slots below head that are never read.
func (q *requestQueue) grow(r *itemRing, h, t uint64) *itemRing {
	nr := &itemRing{slots: make([]atomic.Pointer[item], min(2*len(r.slots), q.capacity))}
	for i := h; i < t; i++ {
		nr.slot(i).Store(r.slot(i).Load())
	}
	q.ring.Store(nr)
	return nr
}

// readOvertakesWrite is the read-overtakes-write mutation's switch, looked
// up once: arrive reads it on every request.
var readOvertakesWrite = mutation.Lookup(mutation.ReadOvertakesWrite)

// arrive records it, a request just decoded, before it is pushed: a read or
// holdWrites item holds later writes back until answered. Under the
// read-overtakes-write mutation, if the owner builds replies on the
// arriving goroutine too (buildsEarly: Endpoint), a read is built here, at
// arrival, and holds nothing back. The server's connection does not set
// buildsEarly: its reader would build on the encoder its writer uses.
func (q *requestQueue) arrive(it *item) {
	if it.read && q.buildsEarly && readOvertakesWrite.On() {
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
	t, h := q.tail.Load(), q.head.Load()
	r := q.ring.Load()
	if t-h >= uint64(len(r.slots)) {
		if t-h >= uint64(q.capacity) {
			return false
		}
		r = q.grow(r, h, t)
	}
	r.slot(t).Store(it)
	q.tail.Store(t + 1)
	return true
}

// wantRoom records that the reader found the queue full and will wait for
// a pop (reader side); it must try push again before it waits.
func (q *requestQueue) wantRoom() { q.roomWanted.Store(true) }

// full reports that push would fail now.
func (q *requestQueue) full() bool { return q.pending() >= q.capacity }

// front is the item answered next: the oldest not popped (writer side);
// nil if none.
func (q *requestQueue) front() *item {
	h := q.head.Load()
	if h == q.tail.Load() {
		return nil
	}
	// Loaded after tail: the ring that held item h when tail moved past
	// it, or a later one, which holds it too (grow).
	return q.ring.Load().slot(h).Load()
}

// pop removes the front item (writer side); wakeReader reports that the
// reader waits for room (wantRoom), so it is to be woken.
func (q *requestQueue) pop() (wakeReader bool) {
	h := q.head.Load()
	r := q.ring.Load()
	r.slot(h).Store(nil)
	q.head.Store(h + 1)
	if r != &q.first && !q.firstCleared {
		for i := range q.firstSlots {
			q.firstSlots[i].Store(nil)
		}
		q.firstCleared = true
	}
	// After the store: either the reader's push after wantRoom sees the
	// room made here, or this sees its flag (sequentially consistent
	// atomics), so a waiting reader is never left without a wake-up.
	return q.roomWanted.Load() && q.roomWanted.Swap(false)
}

// pending is the number of items pushed and not popped. Head is loaded
// before tail: both only grow and tail never falls behind head, so the
// difference is never negative. To the reader and the writer it is exact
// at their own end (the reader sees it fall, the writer rise, meanwhile);
// another goroutine (connViews, for cons and stat) may load head, then a
// tail that many pushes and pops moved on, so it is capped at the
// capacity.
func (q *requestQueue) pending() int {
	h := q.head.Load()
	return int(min(q.tail.Load()-h, uint64(q.capacity)))
}

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
