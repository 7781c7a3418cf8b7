package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// gatedHooks holds the applied hook of the create with xid gateXid (the
// test's only connection that writes sends it) until gate closes: the raft loop, which waits for the apply, stops meanwhile.
type gatedHooks struct {
	applyHooks
	gate chan struct{}
}

const gateXid = 1

func (h gatedHooks) applied(e *entry, res applyResult) {
	if e.Type == jute.OpCreate && e.Cxid == gateXid {
		select {
		case <-h.gate:
		case <-time.After(time.Minute): // bounded, should the test fail first
		}
	}
	h.applyHooks.applied(e, res)
}

// holdGatedCreate installs gatedHooks on s and returns the function that
// releases the held apply (also run at the test's end).
func holdGatedCreate(t *testing.T, s *Server) (release func()) {
	gate := make(chan struct{})
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	s.sm.mu.Lock() // orders this write before the loop's next Apply reads hooks
	s.sm.hooks = gatedHooks{applyHooks: s.sm.hooks, gate: gate}
	s.sm.mu.Unlock()
	return release
}

// TestPipelinedWritesQueuedWhileRaftBusy: a connection's reader hands its
// writes to raft without waiting for the raft loop, so the writes pipelined
// behind one whose apply holds the loop are all proposed (queued for the
// loop's next log write), not one: waiting for the loop to take each
// proposal put at most one entry per connection in each log write. Then
// every write is answered, in request order.
func TestPipelinedWritesQueuedWhileRaftBusy(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s)
	c.SetTimeout(20 * time.Second)
	release := holdGatedCreate(t, s)

	const behind = 32
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	var raw []byte
	for i := 0; i <= behind; i++ {
		p := fmt.Sprintf("/p%d", i)
		raw = append(raw, frame(append(header(gateXid+int32(i), jute.OpCreate), jute.Marshal(&jute.CreateRequest{
			Path: p, ACL: world})...))...)
	}
	require.NoError(t, c.WriteRaw(raw))
	waiting := func() int {
		s.waitMu.Lock()
		defer s.waitMu.Unlock()
		return len(s.waiters)
	}
	require.Eventually(t, func() bool { return waiting() == behind+1 }, 10*time.Second, time.Millisecond,
		"writes proposed while the loop is held: want all %d", behind+1)
	release()
	for i := 0; i <= behind; i++ {
		hdr, _, err := c.Recv()
		require.NoError(t, err)
		require.Equal(t, gateXid+int32(i), hdr.Xid, "replies in request order")
		require.Zero(t, hdr.Err)
	}
}

// TestReplyNotHeldBehindUnappliedWrite: a connection pipelines a create
// and then a second create whose apply is held (gatedHooks). The first
// create's reply must reach the client while the second waits: the writer
// once left it in its buffer until the next reply or an empty queue, so a
// pipelining client waited a log write (or, here, forever) for an answer
// that was ready.
func TestReplyNotHeldBehindUnappliedWrite(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s)
	release := holdGatedCreate(t, s)

	const firstXid = gateXid + 10
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	create := func(xid int32, p string) []byte {
		return frame(append(header(xid, jute.OpCreate), jute.Marshal(&jute.CreateRequest{Path: p, ACL: world})...))
	}
	require.NoError(t, c.WriteRaw(append(create(firstXid, "/first"), create(gateXid, "/held")...)))
	c.SetTimeout(5 * time.Second)
	hdr, _, err := c.Recv()
	require.NoError(t, err, "the first create's reply while the second's apply is held")
	require.Equal(t, int32(firstXid), hdr.Xid)
	require.Zero(t, hdr.Err)
	release()
	c.SetTimeout(20 * time.Second)
	hdr, _, err = c.Recv()
	require.NoError(t, err)
	require.Equal(t, int32(gateXid), hdr.Xid, "the held create answered once released")
	require.Zero(t, hdr.Err)
}
