package server

import (
	"bufio"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// BenchmarkWritePath measures the whole standalone write path in process,
// over a real connection: decode, propose, raft, WAL (fsync'd), apply and
// reply. The client keeps a window of requests outstanding on one
// connection (1: one at a time; 16: as zkbench's 16 clients keep 16 in
// flight, so raft writes hold several entries) and allocates nothing per
// request: the frames are encoded once and only their xid changes, and
// replies are read into one buffer. So -benchmem's allocs/op and B/op are
// the server's per write request (with the raft loop's per-write costs
// shared by the entries of one write).
func BenchmarkWritePath(b *testing.B) {
	for _, bc := range []struct {
		name   string
		op     int32
		window int
	}{
		{"setData/window=1", jute.OpSetData, 1},
		{"setData/window=16", jute.OpSetData, 16},
		{"create/window=16", jute.OpCreate, 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := startBenchServer(b)
			c := dialBenchConn(b, s.Addr().String())
			data := make([]byte, 128) // zkbench's value size
			var req []byte
			switch bc.op {
			case jute.OpSetData:
				c.call(b, jute.OpCreate, &jute.CreateRequest{Path: "/bench", Data: data, ACL: benchOpenACL})
				req = c.frame(jute.OpSetData, &jute.SetDataRequest{Path: "/bench", Data: data, Version: -1})
			case jute.OpCreate:
				c.call(b, jute.OpCreate, &jute.CreateRequest{Path: "/bench", ACL: benchOpenACL})
				// Sequential: every create makes a new node, with the same request.
				req = c.frame(jute.OpCreate, &jute.CreateRequest{Path: "/bench/n-", Data: data, ACL: benchOpenACL, Flags: 2})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += bc.window {
				n := min(bc.window, b.N-i)
				for range n {
					c.send(b, req)
				}
				for range n {
					c.recv(b)
				}
			}
		})
	}
}

// TestWritePathAllocations bounds what the standalone write path allocates
// per request, measured as BenchmarkWritePath's setData with 16 requests in
// flight (its client allocates nothing per request; the process's other
// allocations, raft's ticks, are a few per thousand requests). Before the
// request's body was decoded in place, proposed without a context, timer
// and closures, and stepped into raft in batches, a write allocated 52
// times and 3.5 KB (measured: 11 to 13 times and 1.3 to 1.5 KB since).
func TestWritePathAllocations(t *testing.T) {
	skipAllocationBoundsUnderInvariants(t)
	s := startServer(t, nil)
	c := dialBenchConn(t, s.Addr().String())
	data := make([]byte, 128)
	c.call(t, jute.OpCreate, &jute.CreateRequest{Path: "/bench", Data: data, ACL: benchOpenACL})
	req := c.frame(jute.OpSetData, &jute.SetDataRequest{Path: "/bench", Data: data, Version: -1})
	run := func(n int) {
		const window = 16
		for i := 0; i < n; i += window {
			for range window {
				c.send(t, req)
			}
			for range window {
				c.recv(t)
			}
		}
	}
	run(1000) // raft, the WAL and the connection's scratch warm up
	const n = 4000
	allocs, bytes := allocationsBy(func() { run(n) })
	allocs, bytes = allocs/n, bytes/n
	t.Logf("%d allocations, %d bytes per setData", allocs, bytes)
	require.LessOrEqual(t, allocs, uint64(writePathAllocs), "allocations per write request")
	require.LessOrEqual(t, bytes, uint64(writePathBytes), "bytes allocated per write request")
}

// benchConn is a ZooKeeper client connection that allocates nothing per
// request once set up (BenchmarkWritePath).
type benchConn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
	xid int32
}

func dialBenchConn(b testing.TB, addr string) *benchConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(b, err)
	b.Cleanup(func() { _ = nc.Close() })
	c := &benchConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	enc := jute.NewEncoder(nil)
	start := enc.StartFrame()
	enc.WriteRecord(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	enc.EndFrame(start)
	_, err = nc.Write(enc.Bytes())
	require.NoError(b, err)
	body, err := jute.ReadFrame(c.r, nil, 1<<20)
	require.NoError(b, err)
	var resp jute.ConnectResponse
	require.NoError(b, jute.Unmarshal(body, &resp))
	require.NotZero(b, resp.SessionID)
	return c
}

// frame encodes a request frame; send sets its xid.
func (c *benchConn) frame(op int32, req jute.Record) []byte {
	enc := jute.NewEncoder(nil)
	start := enc.StartFrame()
	enc.WriteRecord(&jute.RequestHeader{Type: op})
	enc.WriteRecord(req)
	enc.EndFrame(start)
	return enc.Bytes()
}

func (c *benchConn) send(b testing.TB, frame []byte) {
	c.xid++
	binary.BigEndian.PutUint32(frame[4:], uint32(c.xid))
	if _, err := c.nc.Write(frame); err != nil {
		b.Fatal(err)
	}
}

// recv reads one reply and fails b unless it is a success.
func (c *benchConn) recv(b testing.TB) { c.recvBody(b) }

// recvBody is recv returning the reply frame (header and body), valid
// until the next read.
func (c *benchConn) recvBody(b testing.TB) []byte {
	if err := c.nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		b.Fatal(err)
	}
	body, err := jute.ReadFrame(c.r, c.buf, 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	c.buf = body[:0]
	if len(body) < 16 {
		b.Fatalf("reply of %d bytes", len(body))
	}
	if code := int32(binary.BigEndian.Uint32(body[12:])); code != 0 {
		b.Fatalf("reply to xid %d: error %d", int32(binary.BigEndian.Uint32(body)), code)
	}
	return body
}

func (c *benchConn) call(b testing.TB, op int32, req jute.Record) {
	c.send(b, c.frame(op, req))
	c.recv(b)
}

var benchOpenACL = []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
