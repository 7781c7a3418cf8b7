package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/internal/mutation"
)

// replyQueue holds the reply-order decisions of one connection: which queued
// notifications and ping replies may be written before a reply, when a
// waiting item is due or timed out, whether it is answered at all, and when
// a write may be proposed. It starts no goroutine, never blocks and takes
// one leaf lock (mu, over the out-of-band queue); the caller supplies the
// time and the applied zxid. It is part of requestQueue (requestqueue.go),
// which conn.go's goroutines and Endpoint drive; they do the waiting and the
// writing. Items themselves are built outside mu, so a read
// (which takes stateMachine.mu's read side) never runs under it while Apply,
// holding the write side, queues events through pushEvent.
type replyQueue struct {
	// mu guards events and pings (a leaf: stateMachine.mu -> watchManager.mu
	// -> replyQueue.mu, doc.go).
	mu sync.Mutex
	// Events carry the zxid of the change that fired them and are queued in
	// zxid order; one is written only before a reply whose zxid is at least
	// its own (or when the connection is idle), so the wire follows zxid
	// order as in ZooKeeper.
	events []queuedEvent
	pings  []queuedEvent // ping replies, with the zxid they carry
	// maxOOB bounds events and pings each (notification back-pressure).
	maxOOB int

	// holding counts queued reads and holdWrites items not yet answered. A
	// write is proposed only when it is zero, so a read sees exactly the
	// writes sent before it and a write sent after a sync is applied after it.
	holding atomic.Int64

	written int64 // highest reply zxid written so far (writer only)
}

// pushEvent queues the notification of a change made by zxid; false if the
// client left maxOOB events unread (the connection is then closed).
func (q *replyQueue) pushEvent(zxid int64, frame []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.events) >= q.maxOOB {
		return false
	}
	q.events = append(q.events, queuedEvent{zxid: zxid, frame: frame})
	return true
}

// pushPing queues a ping reply carrying lastZxid(), read under mu: it is
// then at least the zxid of every reply the writer built before the ping was
// queued (one read earlier could be below a reply written meanwhile, and the
// ping reply, written after it, would take the connection's zxid
// backwards). False past maxOOB unread ping replies.
func (q *replyQueue) pushPing(lastZxid func() int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pings) >= q.maxOOB {
		return false
	}
	zxid := lastZxid()
	q.pings = append(q.pings, queuedEvent{zxid: zxid, frame: pingFrame(zxid)})
	return true
}

// queuedOOB reports whether events or ping replies are queued.
func (q *replyQueue) queuedOOB() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events) > 0 || len(q.pings) > 0
}

// takeOOB takes the queued events and ping replies whose zxid is at most
// upTo (all of them if upTo < 0); write them with writeOOB.
func (q *replyQueue) takeOOB(upTo int64) (pings, events []queuedEvent) {
	within := func(zxid int64) bool { return upTo < 0 || zxid <= upTo }
	q.mu.Lock()
	defer q.mu.Unlock()
	np := 0
	for np < len(q.pings) && within(q.pings[np].zxid) {
		np++
	}
	ne := 0
	for ne < len(q.events) && within(q.events[ne].zxid) {
		ne++
	}
	pings, events = q.pings[:np:np], q.events[:ne:ne]
	q.pings, q.events = q.pings[np:], q.events[ne:]
	return pings, events
}

// writeOOB writes what takeOOB took in wire order: events in zxid order,
// each ping reply after the events up to its own zxid. It stops at the
// first write that fails.
func writeOOB(pings, events []queuedEvent, write func([]byte) bool) bool {
	next := 0
	for _, p := range pings {
		for next < len(events) && events[next].zxid <= p.zxid {
			if !write(events[next].frame) {
				return false
			}
			next++
		}
		if !write(p.frame) {
			return false
		}
	}
	for ; next < len(events); next++ {
		if !write(events[next].frame) {
			return false
		}
	}
	return true
}

// idle takes everything queued: nothing is pending, so the next request is
// proposed or read later and its zxid is at least that of every event and
// ping queued now.
func (q *replyQueue) idle() (pings, events []queuedEvent) { return q.takeOOB(-1) }

// whileWaiting takes what may pass the reply of an item waiting for its
// apply or barrier: while the item is not applied its zxid will be above
// every zxid applied so far, so events up to applied (the last applied zxid,
// read before the item was seen not ready) may go.
func (q *replyQueue) whileWaiting(applied int64) (pings, events []queuedEvent) {
	return q.takeOOB(applied)
}

// beforeReply records the zxid of the reply about to be written (0 for
// none) and takes what must go before it: the events and ping replies whose
// zxid is at most the highest reply zxid written so far.
func (q *replyQueue) beforeReply(replyZxid int64) (pings, events []queuedEvent) {
	if replyZxid > q.written {
		q.written = replyZxid
	}
	return q.takeOOB(q.written)
}

// waitFor is how long the writer may still wait for item it at now; a
// write or sync that is not ready by then is given up (timedOut).
func (q *replyQueue) waitFor(it *item, now time.Time) time.Duration {
	return it.deadline.Sub(now)
}

// timedOut reports that the writer gave up waiting for it; the reqID to
// cancel (cancelWait), 0 for none, so the server drops its waiter.
func (q *replyQueue) timedOut(it *item) (cancel uint64) { return it.reqID }

// answers reports whether it, now ready (or not waited for), gets a reply.
// A request that failed without an answer (its proposal was lost in a
// leader change, errOutOfOrder, or the sync barrier could not be had)
// gets none: the connection is closed and the client reports ConnectionLoss.
func (q *replyQueue) answers(it *item) bool {
	return !it.waits || (it.err == nil && it.res.Err != errOutOfOrder)
}

// answered records that it was answered (or dropped before it was queued);
// true when it was the last item holding writes back (requestQueue.arrive),
// so a reader waiting in mayPropose's loop is to be woken.
func (q *replyQueue) answered(it *item) bool {
	if !it.held {
		return false
	}
	it.held = false
	return q.holding.Add(-1) == 0
}

// mayPropose reports whether every read and holdWrites item queued before
// now was answered, so a write may be proposed. Under the
// write-overtakes-read mutation it always does.
func (q *replyQueue) mayPropose() bool {
	return q.holding.Load() == 0 || writeOvertakesRead.On()
}

// writeOvertakesRead is the write-overtakes-read mutation's switch, looked
// up once: mayPropose reads it for every write.
var writeOvertakesRead = mutation.Lookup(mutation.WriteOvertakesRead)
