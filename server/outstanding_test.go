package server

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestClosedConnectionsReleaseOutstandingRequests closes connections while
// many of their requests are still queued (pipelined creates, then a frame
// above jute.maxbuffer). Requests a connection never answered must leave
// the server's outstanding count (globalOutstandingLimit): otherwise a few
// such clients make it reach the limit for good and every connection's
// reader blocks, the healthy ones too. Found by FuzzRequestSequence (its
// control connection stopped being served after ~20,000 sequences).
func TestClosedConnectionsReleaseOutstandingRequests(t *testing.T) {
	s := startServer(t, func(c *Config) { c.GlobalOutstandingLimit = 200 })
	healthy := dial(t, s)
	healthy.SetTimeout(5 * time.Second)
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	for round := range 20 {
		c := dial(t, s)
		var raw []byte
		for i := 1; i <= 100; i++ {
			raw = append(raw, frame(append(header(int32(i), jute.OpCreate), jute.Marshal(&jute.CreateRequest{
				Path: fmt.Sprintf("/r%d-%d", round, i), ACL: world})...))...)
		}
		raw = binary.BigEndian.AppendUint32(raw, 0x7fffffff) // above jute.maxbuffer: closes the connection
		require.NoError(t, c.WriteRaw(raw))
		require.Eventually(t, func() bool {
			s.connMu.Lock()
			defer s.connMu.Unlock()
			return len(s.conns) == 1
		}, 10*time.Second, time.Millisecond, "round %d: connection not released", round)
		require.Zero(t, s.stats.outstanding.Load(), "round %d: requests of a closed connection still outstanding", round)
	}
	hdr, err := healthy.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
}

// TestDroppedRequestsForgetTheirWaiters: a request a closing connection
// leaves unanswered is forgotten by the proposal waiters too: its proposal
// may never be applied (dropped by raft, or by a leader that refuses a
// forwarded proposal), and its waiter would keep the item and the
// connection until the next leader change.
func TestDroppedRequestsForgetTheirWaiters(t *testing.T) {
	s := startServer(t, nil)
	c, _ := pipeConn(t, s)
	const reqID = 0xfeed
	s.waitMu.Lock()
	s.waiters[reqID] = applyFunc(func(applyResult) {})
	s.waitMu.Unlock()
	s.stats.outstanding.Add(1)
	require.True(t, c.replies.push(&item{reqID: reqID, waits: true}))
	c.dropUnanswered()
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	require.NotContains(t, s.waiters, uint64(reqID), "the dropped request's waiter is forgotten")
}
