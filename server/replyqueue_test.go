package server

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplyQueueOutOfBand drives the out-of-band rules of replyQueue with
// the writer's calls (op) and checks what goes on the wire: eN is the event
// of zxid N, pN a ping reply carrying N, | separates the writer's calls.
func TestReplyQueueOutOfBand(t *testing.T) {
	type op struct {
		event   int64 // queue the event of this zxid (pushEvent)
		ping    int64 // queue a ping reply while this zxid is the last applied (pushPing)
		waiting int64 // a write waits while this zxid is the last applied (whileWaiting)
		reply   int64 // a reply of this zxid is about to be written (beforeReply)
		idle    bool  // nothing is pending (idle)
	}
	ev := func(z int64) op { return op{event: z} }
	tests := []struct {
		name string
		ops  []op
		want string
	}{
		{"while a write waits, events up to the last applied zxid go",
			[]op{ev(5), ev(7), ev(9), {waiting: 7}, {idle: true}}, "e5 e7 | e9"},
		{"while a write waits, no event above the last applied zxid goes",
			[]op{ev(9), {waiting: 8}, {reply: 9}}, " | e9"},
		{"before a reply, the events up to its zxid go, not those above",
			[]op{ev(3), ev(4), ev(6), {reply: 4}, {idle: true}}, "e3 e4 | e6"},
		{"before a reply, the highest reply zxid written so far counts, not a lower later one",
			[]op{ev(3), {reply: 8}, ev(6), ev(9), {reply: 2}, {reply: 9}}, "e3 | e6 | e9"},
		{"a reply without a zxid lets nothing above the written zxid pass",
			[]op{ev(1), {reply: 0}}, ""},
		{"when idle, everything goes",
			[]op{ev(10), ev(20), {ping: 30}, {idle: true}}, "e10 e20 p30"},
		{"a ping reply goes after the events up to its zxid, before those above",
			[]op{ev(3), ev(6), {ping: 4}, ev(7), {idle: true}}, "e3 p4 e6 e7"},
		{"a ping reply above the written zxid waits like an event",
			[]op{{ping: 5}, {reply: 4}, {reply: 5}}, " | p5"},
		{"ping replies keep their order among themselves",
			[]op{{ping: 1}, {ping: 2}, ev(2), {idle: true}}, "p1 e2 p2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &replyQueue{maxOOB: 100}
			var calls []string
			for _, o := range tt.ops {
				var pings, events []queuedEvent
				switch {
				case o.event != 0:
					require.True(t, q.pushEvent(o.event, []byte(fmt.Sprintf("e%d", o.event))))
					continue
				case o.ping != 0:
					require.True(t, q.pushPing(func() int64 { return o.ping }))
					continue
				case o.waiting != 0:
					pings, events = q.whileWaiting(o.waiting)
				case o.idle:
					pings, events = q.idle()
				default:
					pings, events = q.beforeReply(o.reply)
				}
				var wire []string
				require.True(t, writeOOB(pings, events, func(f []byte) bool {
					wire = append(wire, frameName(f))
					return true
				}))
				calls = append(calls, strings.Join(wire, " "))
			}
			require.Equal(t, tt.want, strings.Join(calls, " | "))
		})
	}
}

// frameName names an event frame of the test (its bytes) or a ping reply.
func frameName(f []byte) string {
	for z := int64(0); z < 100; z++ {
		if bytes.Equal(f, pingFrame(z)) {
			return fmt.Sprintf("p%d", z)
		}
	}
	return string(f)
}

// TestReplyQueueItems covers the rules of the items themselves: waiting
// with a deadline, replies withheld on a lost proposal, writes held back by
// earlier reads and holdWrites items, back-pressure, and the ping zxid read
// under the queue's lock.
func TestReplyQueueItems(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name string
		run  func(t *testing.T, q *replyQueue)
	}{
		{"a write waits until its deadline, then its waiter is cancelled", func(t *testing.T, q *replyQueue) {
			it := &item{waits: true, deadline: now.Add(3 * time.Second), reqID: 42}
			require.Equal(t, 3*time.Second, q.waitFor(it, now))
			require.LessOrEqual(t, q.waitFor(it, now.Add(3*time.Second)), time.Duration(0))
			require.Equal(t, uint64(42), q.timedOut(it))
		}},
		{"a sync waits until its deadline and has no proposal to cancel", func(t *testing.T, q *replyQueue) {
			it := &item{waits: true, deadline: now.Add(time.Second), holdWrites: true}
			require.Equal(t, time.Second, q.waitFor(it, now))
			require.Zero(t, q.timedOut(it))
		}},
		{"a lost proposal (errOutOfOrder) is closed with no reply", func(t *testing.T, q *replyQueue) {
			it := &item{waits: true}
			it.res.Err = errOutOfOrder
			require.False(t, q.answers(it))
		}},
		{"a failed barrier is closed with no reply", func(t *testing.T, q *replyQueue) {
			require.False(t, q.answers(&item{waits: true, err: errors.New("no barrier")}))
		}},
		{"an applied write and an item not waited for are answered", func(t *testing.T, q *replyQueue) {
			require.True(t, q.answers(&item{waits: true}))
			require.True(t, q.answers(&item{read: true}))
		}},
		{"notification back-pressure: past maxOOB unread events the push fails", func(t *testing.T, q *replyQueue) {
			require.True(t, q.pushEvent(1, []byte("e1")))
			require.True(t, q.pushEvent(2, []byte("e2")))
			require.False(t, q.pushEvent(3, []byte("e3")))
			q.idle()
			require.True(t, q.pushEvent(3, []byte("e3")), "taken events free their room")
		}},
		{"ping back-pressure: past maxOOB unread ping replies the push fails", func(t *testing.T, q *replyQueue) {
			z := func() int64 { return 1 }
			require.True(t, q.pushPing(z))
			require.True(t, q.pushPing(z))
			require.False(t, q.pushPing(z))
		}},
		{"a ping reply's zxid is read under the queue's lock", func(t *testing.T, q *replyQueue) {
			require.True(t, q.pushPing(func() int64 {
				require.False(t, q.mu.TryLock(), "lastZxid read without the lock")
				return 7
			}))
			pings, _ := q.idle()
			require.Len(t, pings, 1)
			require.Equal(t, int64(7), pings[0].zxid)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, &replyQueue{maxOOB: 2})
		})
	}
}
