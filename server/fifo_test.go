package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestFifoPipelinedConn pipelines, on one connection of a real server,
// more requests than the request queue holds (maxInFlight: the reader
// waits for room), rounds of a setData followed by reads of the same node:
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
