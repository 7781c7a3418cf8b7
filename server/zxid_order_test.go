package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestRepliesBeforeWritesKeepZxidOrder pipelines, on one connection,
// requests whose reply zxid is read when the reply is written (a sync, a
// write refused before it is proposed) each followed by writes. A write
// sent after such a request is applied after it was answered, as in
// ZooKeeper, where a session's requests go through in order: reply zxids
// never go backwards on a connection (the Java client takes each reply's
// zxid as its last seen zxid), and a write's zxid is above the earlier
// reply's. Found by FuzzRequestSequence: writes overtook a sync's read
// barrier, and a refused setACL's reply, and were answered with lower
// zxids than the reply before them.
func TestRepliesBeforeWritesKeepZxidOrder(t *testing.T) {
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		name    string
		first   func(xid int32) []byte // the request before the writes
		wantErr int32                  // its reply's error code
	}{
		{"sync", func(xid int32) []byte {
			return frame(append(header(xid, jute.OpSync), jute.Marshal(&jute.PathRequest{Path: "/"})...))
		}, 0},
		{"write refused before proposing", func(xid int32) []byte {
			return frame(append(header(xid, jute.OpSetData), 0xff, 0xff, 0xff, 0x7f))
		}, jute.ErrMarshallingError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, nil)
			c := dial(t, s)
			c.SetTimeout(10 * time.Second)
			const rounds, writes = 20, 3
			var raw []byte
			for r := range rounds {
				xid := int32(r * 10)
				raw = append(raw, tt.first(xid)...)
				for i := 1; i <= writes; i++ {
					raw = append(raw, frame(append(header(xid+int32(i), jute.OpCreate), jute.Marshal(&jute.CreateRequest{
						Path: fmt.Sprintf("/n%d-%d", r, i), ACL: world})...))...)
				}
			}
			require.NoError(t, c.WriteRaw(raw))
			var last int64
			for r := range rounds {
				for i := 0; i <= writes; i++ {
					xid := int32(r*10 + i)
					hdr, _, err := c.Recv()
					require.NoError(t, err)
					require.Equal(t, xid, hdr.Xid, "replies in request order")
					if i == 0 {
						require.Equal(t, tt.wantErr, hdr.Err)
					} else {
						require.Zero(t, hdr.Err)
					}
					require.GreaterOrEqual(t, hdr.Zxid, last, "reply to xid %d has zxid %#x after %#x", xid, hdr.Zxid, last)
					if i == 1 {
						require.Greater(t, hdr.Zxid, last, "write xid %d applied at or before the zxid of the reply before it", xid)
					}
					last = hdr.Zxid
				}
			}
		})
	}
}

// TestPingRepliesDoNotOvertakeOwedReplies keeps the writer of a connection
// busy (creates with ~1 MB paths, whose replies hold the path, to a client
// with a small receive buffer) while two more pipelined creates apply and a
// ping is read. When the writer is free again, a create's reply is owed and
// a ping reply (with the last create's zxid) waits: the writer must answer
// the owed replies first and write the ping just before the last create's
// reply, not take the ping's wake-up for an idle moment and write it first,
// or the zxids on the wire go backwards. Found by FuzzRequestSequence (the
// writer's select picks at random between a queued item and a wake-up).
func TestPingRepliesDoNotOvertakeOwedReplies(t *testing.T) {
	s := startServer(t, nil)
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}

	// A client with a 4 KiB receive buffer, so the big replies block the
	// server's writer until the test reads them.
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	nc, err := d.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(60*time.Second)))
	br := bufio.NewReader(nc)
	_, err = nc.Write(frame(jute.Marshal(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})))
	require.NoError(t, err)
	body, err := jute.ReadFrame(br, nil, 1<<20)
	require.NoError(t, err)
	var resp jute.ConnectResponse
	require.NoError(t, jute.Unmarshal(body, &resp))
	require.NotZero(t, resp.SessionID)
	server := func() *conn {
		s.connMu.Lock()
		defer s.connMu.Unlock()
		return s.bySess[resp.SessionID]
	}()
	require.NotNil(t, server)

	// bigWrites replies of ~1 MB exceed what the server's send buffer
	// (at most net.ipv4.tcp_wmem's 4 MiB by default) and the client's hold.
	const rounds, bigWrites = 5, 6
	long := strings.Repeat("x", 1000000)
	var last int64
	var lastXid int32
	xid := int32(0)
	for r := range rounds {
		var raw []byte
		for i := range bigWrites + 2 {
			xid++
			path := fmt.Sprintf("/p%d-%d", r, i)
			if i < bigWrites {
				path += long
			}
			raw = append(raw, frame(append(header(xid, jute.OpCreate), jute.Marshal(&jute.CreateRequest{Path: path, ACL: world})...))...)
		}
		before, received := s.sm.lastZxid.Load(), server.stats.received.Load()
		wrote := make(chan error, 1)
		go func() { _, err := nc.Write(raw); wrote <- err }() // blocks until the test reads
		// Wait (bounded) until every create applied, then send the ping:
		// the writer is still blocked on a big reply.
		require.Eventually(t, func() bool {
			return server.stats.received.Load() == received+bigWrites+2 && s.sm.lastZxid.Load() == before+bigWrites+2
		}, 20*time.Second, time.Millisecond)
		_, err := nc.Write(frame(header(jute.XidPing, jute.OpPing)))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return server.stats.received.Load() == received+bigWrites+3 },
			20*time.Second, time.Millisecond)
		for replies, pings := 0, 0; replies < bigWrites+2 || pings < 1; {
			frame, err := jute.ReadFrame(br, nil, 2<<20)
			require.NoError(t, err)
			var hdr jute.ReplyHeader
			require.NoError(t, jute.Unmarshal(frame[:16], &hdr))
			require.GreaterOrEqual(t, hdr.Zxid, last, "round %d: frame xid %d has zxid %#x after zxid %#x of xid %d", r, hdr.Xid, hdr.Zxid, last, lastXid)
			last, lastXid = hdr.Zxid, hdr.Xid
			if hdr.Xid == jute.XidPing {
				pings++
			} else {
				replies++
			}
		}
		require.NoError(t, <-wrote)
	}
}

// TestPingReplyZxidReadWhenQueued holds the connection's notification
// queue while a ping is read, and applies a write from another connection
// meanwhile. The ping reply must carry the zxid applied when it was queued,
// not one read before: the writer may have written a reply with a higher
// zxid in between (a write applied after that read), and the ping reply,
// written after it, would take the zxid backwards. Found by
// FuzzRequestSequence (a ping reply with zxid 0xba8e after a delete's reply
// with 0xba90).
func TestPingReplyZxidReadWhenQueued(t *testing.T) {
	s := startServer(t, nil)
	c, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
	c.SetTimeout(10 * time.Second)
	other := dial(t, s)
	server := func() *conn {
		s.connMu.Lock()
		defer s.connMu.Unlock()
		return s.bySess[resp.SessionID]
	}()
	require.NotNil(t, server)

	server.replies.mu.Lock()
	locked := true
	defer func() {
		if locked {
			server.replies.mu.Unlock()
		}
	}()
	received := server.stats.received.Load()
	require.NoError(t, c.Send(jute.XidPing, jute.OpPing, nil))
	require.Eventually(t, func() bool { return server.stats.received.Load() == received+1 }, 10*time.Second, time.Millisecond)
	// The reader is handling the ping and waits for the queue.
	var cr jute.CreateResponse
	hdr, err := other.Call(jute.OpCreate, &jute.CreateRequest{Path: "/later",
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, &cr)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	server.replies.mu.Unlock()
	locked = false
	ping, _, err := c.Recv()
	require.NoError(t, err)
	require.Equal(t, jute.XidPing, ping.Xid)
	require.GreaterOrEqual(t, ping.Zxid, hdr.Zxid, "ping reply queued after zxid %#x applied carries %#x", hdr.Zxid, ping.Zxid)
}
