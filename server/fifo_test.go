package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
)

// TestFifoPipelinedConn pipelines, on one connection of a real server,
// 1500 requests (more than maxInFlight, though each write waits for the
// reads before it, so the queue never fills: TestFifoQueueFull fills it),
// rounds of a setData followed by reads of the same node:
// replies come in request order, each read shows the write sent just
// before it (its data, and a reply zxid at least the write's), and reply
// zxids never go backwards. With the read-overtakes-write mutation on too:
// a server's connection does not honour it (its reader would build reads
// on the writer's encoder; the mutation is exercised through Endpoint,
// TestEndpointFifo and the simulator).
func TestFifoPipelinedConn(t *testing.T) {
	for _, mutated := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "read-overtakes-write on"}[mutated], func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.ReadOvertakesWrite, mutated))
			testFifoPipelinedConn(t)
		})
	}
}

func testFifoPipelinedConn(t *testing.T) {
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

// TestFifoTinyQueue: connections with a request queue of 2 items, pipelining mixed writes, reads with watches, syncs and
// exists, concurrently, on their own node and on a shared one. Exercises
// the reader waiting for room (wantRoom/space), the writer waiting for
// items (avail) and writes waiting for reads (readsDone) on every request.
// Checks per connection: reply order, reply zxids never go backwards, a read
// shows the write sent before it, and a watch's event arrives before any
// reply showing a change after the watch was set.
func TestFifoTinyQueue(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.GlobalOutstandingLimit = 100000 }, func(s *Server) { s.queueCap = 2 })
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	setup := dial(t, s)
	for _, p := range []string{"/s", "/n0", "/n1", "/n2", "/n3"} {
		hdr, err := setup.Call(jute.OpCreate, &jute.CreateRequest{Path: p, ACL: world}, nil)
		require.NoError(t, err)
		require.Zero(t, hdr.Err)
	}
	const conns, rounds = 4, 150
	type req struct {
		op    int32
		path  string
		data  string
		watch bool
	}
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for k := range conns {
		c := dial(t, s)
		c.SetTimeout(30 * time.Second)
		own := fmt.Sprintf("/n%d", k)
		var reqs []req
		for r := range rounds {
			v := fmt.Sprintf("c%d-%d", k, r)
			reqs = append(reqs,
				req{op: jute.OpSetData, path: own, data: v},
				req{op: jute.OpGetData, path: own, data: v, watch: true},
				req{op: jute.OpSync, path: own},
				req{op: jute.OpExists, path: "/s", watch: true},
				req{op: jute.OpSetData, path: "/s", data: v},
				req{op: jute.OpGetData, path: "/s", data: v},
			)
		}
		var raw []byte
		for i, q := range reqs {
			xid := int32(i + 1)
			var body []byte
			switch q.op {
			case jute.OpSetData:
				body = jute.Marshal(&jute.SetDataRequest{Path: q.path, Data: []byte(q.data), Version: -1})
			case jute.OpGetData, jute.OpExists:
				body = jute.Marshal(&jute.PathWatchRequest{Path: q.path, Watch: q.watch})
			case jute.OpSync:
				body = jute.Marshal(&jute.PathRequest{Path: q.path})
			}
			raw = append(raw, frame(append(header(xid, q.op), body...))...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := make(chan error, 1)
			go func() { sent <- c.WriteRaw(raw) }()
			fail := func(format string, a ...any) { errs <- fmt.Errorf("conn %d: "+format, append([]any{k}, a...)...) }
			var last int64
			armed := map[string]int64{}
			wroteOwn := int64(0)
			for i := 0; i < len(reqs); {
				hdr, body, err := c.Recv()
				if err != nil {
					fail("recv: %v", err)
					return
				}
				if hdr.Xid == jute.XidNotification {
					var ev jute.WatcherEvent
					_ = jute.Unmarshal(body, &ev)
					delete(armed, ev.Path)
					continue
				}
				if hdr.Xid == jute.XidPing {
					continue
				}
				q := reqs[i]
				if hdr.Xid != int32(i+1) {
					fail("reply to xid %d, want %d", hdr.Xid, i+1)
					return
				}
				i++
				if hdr.Err != 0 {
					fail("xid %d err %d", hdr.Xid, hdr.Err)
					return
				}
				if hdr.Zxid < last {
					fail("xid %d zxid %#x after %#x", hdr.Xid, hdr.Zxid, last)
					return
				}
				last = hdr.Zxid
				var st jute.Stat
				switch q.op {
				case jute.OpSetData, jute.OpExists:
					var r jute.StatResponse
					require.NoError(t, jute.Unmarshal(body, &r))
					st = r.Stat
				case jute.OpGetData:
					var r jute.GetDataResponse
					require.NoError(t, jute.Unmarshal(body, &r))
					st = r.Stat
					if q.path != "/s" && string(r.Data) != q.data {
						fail("xid %d read %q after own write of %q", hdr.Xid, r.Data, q.data)
						return
					}
					if q.path == "/s" && r.Stat.Mzxid < wroteOwn {
						fail("xid %d read of /s mzxid %#x before own write %#x", hdr.Xid, r.Stat.Mzxid, wroteOwn)
						return
					}
				case jute.OpSync:
					continue
				}
				if at, ok := armed[q.path]; ok && st.Mzxid > at {
					fail("xid %d shows %s changed at %#x after watch at %#x, before its event", hdr.Xid, q.path, st.Mzxid, at)
					return
				}
				if q.op == jute.OpSetData && q.path == "/s" {
					wroteOwn = st.Mzxid
				}
				if q.watch {
					armed[q.path] = st.Mzxid
				}
			}
			if err := <-sent; err != nil {
				fail("send: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Eventually(t, func() bool { return s.stats.outstanding.Load() == 0 }, 5*time.Second, time.Millisecond)
}

// TestFifoCloseWhileQueueFull: a client pipelines writes and reads past a
// 2-item queue, with no reader on its side, and then drops the connection
// while the reader waits for room, for a read or in a write's waitReads
// (the rounds close after 0 to 4 ms, to vary where). Afterwards: no request
// outstanding, no proposal waiter left for the connection (proposeItem).
func TestFifoCloseWhileQueueFull(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.GlobalOutstandingLimit = 100000 }, func(s *Server) { s.queueCap = 2 })
	for round := range 30 {
		c := dial(t, s)
		var raw []byte
		for i := 1; i <= 200; i++ {
			op := jute.OpGetData
			body := jute.Marshal(&jute.PathWatchRequest{Path: "/", Watch: true})
			if i%3 == 0 {
				op = jute.OpSetData
				body = jute.Marshal(&jute.SetDataRequest{Path: "/", Data: []byte("x"), Version: -1})
			}
			raw = append(raw, frame(append(header(int32(i), op), body...))...)
		}
		go func() { _ = c.WriteRaw(raw) }()
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		c.Close()
		require.Eventually(t, func() bool {
			s.connMu.Lock()
			defer s.connMu.Unlock()
			return len(s.conns) == 0
		}, 10*time.Second, time.Millisecond, "round %d: connection not released", round)
		require.Eventually(t, func() bool { return s.stats.outstanding.Load() == 0 }, 5*time.Second, time.Millisecond,
			"round %d: outstanding %d", round, s.stats.outstanding.Load())
		require.Eventually(t, func() bool {
			s.waitMu.Lock()
			defer s.waitMu.Unlock()
			return len(s.waiters) == 0
		}, 5*time.Second, time.Millisecond, "round %d: waiters left", round)
	}
}
