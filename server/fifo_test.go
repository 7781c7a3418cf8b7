package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestFifoPipelinedConn pipelines, on one connection of a real server,
// 1500 requests (more than maxInFlight, though each write waits for the
// reads before it, so the queue never fills: TestFifoQueueFull fills it),
// rounds of a setData followed by reads of the same node:
// replies come in request order, each read shows the write sent just
// before it (its data, and a reply zxid at least the write's), and reply
// zxids never go backwards. (The read-overtakes-write mutation is
// exercised through Endpoint, TestEndpointFifo and the simulator: on a
// server's connection it builds reads on the reader goroutine, racing the
// writer's encoder.)
func TestFifoPipelinedConn(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s)
	c.SetTimeout(20 * time.Second)
	const rounds, reads = 300, 4 // 1500 requests > maxInFlight
	var raw []byte
	for r := range rounds {
		xid := int32(r * 10)
		raw = append(raw, frame(append(header(xid, jute.OpSetData), jute.Marshal(&jute.SetDataRequest{
			Path: "/", Data: fmt.Appendf(nil, "v%d", r), Version: -1})...))...)
		for i := 1; i <= reads; i++ {
			raw = append(raw, frame(append(header(xid+int32(i), jute.OpGetData),
				jute.Marshal(&jute.PathWatchRequest{Path: "/"})...))...)
		}
	}
	sent := make(chan error, 1)
	go func() { sent <- c.WriteRaw(raw) }() // the server stops reading while its queue is full
	var last int64
	stale := 0
	for r := range rounds {
		var wrote int64
		for i := 0; i <= reads; i++ {
			xid := int32(r*10 + i)
			hdr, body, err := c.Recv()
			require.NoError(t, err)
			require.Equal(t, xid, hdr.Xid, "replies in request order")
			require.Zero(t, hdr.Err)
			if i == 0 {
				wrote = hdr.Zxid
				continue
			}
			var resp jute.GetDataResponse
			require.NoError(t, jute.Unmarshal(body, &resp))
			if hdr.Zxid < last || hdr.Zxid < wrote || string(resp.Data) != fmt.Sprintf("v%d", r) {
				stale++
			}
			last = max(last, hdr.Zxid)
		}
		last = max(last, wrote)
	}
	require.NoError(t, <-sent)
	require.Zero(t, stale, "reads that miss the write before them, or go back in zxid")
}

// TestFifoQueueFull pipelines more reads than the request queue holds on a
// connection whose client does not read: the writer blocks on the socket,
// the queue fills up to maxInFlight and the reader waits for room
// (requestQueue.push refused, conn.space); once the client reads, every
// request is answered, in order.
func TestFifoQueueFull(t *testing.T) {
	// Above maxInFlight: the global throttle would stop the reader first.
	s := startServer(t, func(c *Config) { c.GlobalOutstandingLimit = 10 * maxInFlight })
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close() })
	c := newConn(s, server)
	require.True(t, s.runConn(c, c.serve))
	require.NoError(t, client.SetDeadline(time.Now().Add(time.Minute))) // a stuck connection fails, not hangs
	br := bufio.NewReader(client)
	readFrame := func() []byte {
		var n [4]byte
		_, err := io.ReadFull(br, n[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(n[:]))
		_, err = io.ReadFull(br, body)
		require.NoError(t, err)
		return body
	}
	_, err := client.Write(frame(jute.Marshal(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})))
	require.NoError(t, err)
	var cr jute.ConnectResponse
	require.NoError(t, jute.Unmarshal(readFrame(), &cr))
	require.NotZero(t, cr.SessionID)

	const n = 3 * maxInFlight // the writer answers about 750 before its 64 KiB buffer blocks
	var raw []byte
	for xid := int32(1); xid <= n; xid++ {
		raw = append(raw, frame(append(header(xid, jute.OpExists), jute.Marshal(&jute.PathWatchRequest{Path: "/"})...))...)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := client.Write(raw) // blocks once the server stops reading
		sent <- err
	}()
	// Nothing is read yet: the writer's buffer fills and blocks on the
	// pipe, then the queue fills.
	require.Eventually(t, func() bool { return c.replies.pending() == maxInFlight }, 20*time.Second, time.Millisecond,
		"the request queue fills up while the client does not read")
	for xid := int32(1); xid <= n; xid++ {
		var hdr jute.ReplyHeader
		require.NoError(t, jute.NewDecoder(readFrame(), 1<<20).ReadRecord(&hdr))
		require.Equal(t, xid, hdr.Xid, "replies in request order")
		require.Zero(t, hdr.Err)
	}
	require.NoError(t, <-sent)
}
