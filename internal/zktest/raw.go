package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkraft/zkraft/jute"
)

// rawReadTimeout bounds every read of a RawConn unless SetTimeout changes it.
const rawReadTimeout = 10 * time.Second

// RawConn is a minimal ZooKeeper client that speaks jute directly, for the
// requests and the byte-level behaviour that go-zookeeper cannot produce
// (create2, addWatch, setWatches with a chosen zxid, pipelining, malformed
// input...). It sends no pings of its own: a session stays alive only while
// the test keeps talking, which is what expiry tests want.
//
// A RawConn is not safe for concurrent use, except Close. Replies are read
// synchronously by Call, Recv and WaitEvent; notifications (xid -1) met on
// the way are queued and returned by Events and WaitEvent.
type RawConn struct {
	addr    string
	conn    net.Conn
	r       *bufio.Reader
	buf     []byte
	timeout time.Duration

	xid      int32
	lastZxid int64

	events   []jute.WatcherEvent // every notification received
	consumed int                 // events already returned by WaitEvent

	closeOnce sync.Once
}

// DialRaw connects to addr and performs the handshake: sessionID 0 (and any
// passwd) asks for a new session, otherwise it resumes that session.
// readOnlyByte appends the optional readOnly byte (false) to the request, as
// the Java client does. It fails the test if no ConnectResponse arrives; an
// expired or refused session still returns (with TimeOut 0, SessionID 0).
// The socket is closed in t's cleanup.
func DialRaw(t testing.TB, addr string, sessionID int64, passwd []byte, timeoutMs int32, readOnlyByte bool) (*RawConn, jute.ConnectResponse) {
	t.Helper()
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	c, resp, err := DialRawRequest(addr, jute.ConnectRequest{
		TimeOut:     timeoutMs,
		SessionID:   sessionID,
		Passwd:      passwd,
		HasReadOnly: readOnlyByte,
	})
	if err != nil {
		t.Fatalf("zktest: raw connect to %s (session %#x): %v", addr, sessionID, err)
	}
	t.Cleanup(c.Close)
	return c, resp
}

// DialRawRequest connects to addr, sends req as the ConnectRequest and reads
// the ConnectResponse. The caller must Close the connection. An error means
// the server closed the socket (or sent garbage) instead of answering.
func DialRawRequest(addr string, req jute.ConnectRequest) (*RawConn, jute.ConnectResponse, error) {
	var resp jute.ConnectResponse
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, resp, fmt.Errorf("dial: %w", err)
	}
	c := &RawConn{addr: addr, conn: conn, r: bufio.NewReader(conn), timeout: rawReadTimeout, lastZxid: req.LastZxidSeen}
	if err := c.writeFrame(&req); err != nil {
		c.Close()
		return nil, resp, fmt.Errorf("send ConnectRequest: %w", err)
	}
	body, err := c.readFrame()
	if err != nil {
		c.Close()
		return nil, resp, fmt.Errorf("read ConnectResponse: %w", err)
	}
	if err := jute.Unmarshal(body, &resp); err != nil {
		c.Close()
		return nil, resp, err
	}
	return c, resp, nil
}

// SetTimeout changes the bound on each read (default 10 s).
func (c *RawConn) SetTimeout(d time.Duration) { c.timeout = d }

// LastZxid returns the largest zxid seen in a reply header (or the
// LastZxidSeen of the handshake).
func (c *RawConn) LastZxid() int64 { return c.lastZxid }

// NextXid returns the xid the next Call will use.
func (c *RawConn) NextXid() int32 { return c.xid + 1 }

// Close closes the socket without closing the session. It is idempotent.
func (c *RawConn) Close() {
	c.closeOnce.Do(func() { c.conn.Close() })
}

// CloseSession sends closeSession (-11), waits for its reply and closes the
// socket.
func (c *RawConn) CloseSession() (jute.ReplyHeader, error) {
	hdr, err := c.Call(jute.OpCloseSession, nil, nil)
	c.Close()
	return hdr, err
}

// writeFrame writes one length-prefixed frame holding the given records.
func (c *RawConn) writeFrame(recs ...jute.Record) error {
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	for _, r := range recs {
		if r != nil {
			e.WriteRecord(r)
		}
	}
	e.EndFrame(start)
	return c.WriteRaw(e.Bytes())
}

// WriteRaw writes b to the socket as it is (b must hold the frame lengths),
// for malformed-input tests.
func (c *RawConn) WriteRaw(b []byte) error {
	if err := c.conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	_, err := c.conn.Write(b)
	return err
}

// readFrame reads one frame body; it is valid until the next read.
func (c *RawConn) readFrame() ([]byte, error) {
	if err := c.conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	body, err := jute.ReadFrame(c.r, c.buf, 64<<20)
	if err != nil {
		return nil, err
	}
	c.buf = body[:0]
	return body, nil
}

// Send writes RequestHeader{xid, opcode} followed by req (nil: no body)
// without waiting for the reply.
func (c *RawConn) Send(xid, opcode int32, req jute.Record) error {
	if err := c.writeFrame(&jute.RequestHeader{Xid: xid, Type: opcode}, req); err != nil {
		return fmt.Errorf("send xid %d op %d: %w", xid, opcode, err)
	}
	return nil
}

// Recv reads the next frame, whatever it is (reply, ping reply, or
// notification with xid -1), and returns its header and the body after the
// header (a copy). Notifications are also queued for Events/WaitEvent.
func (c *RawConn) Recv() (jute.ReplyHeader, []byte, error) {
	var hdr jute.ReplyHeader
	frame, err := c.readFrame()
	if err != nil {
		return hdr, nil, err
	}
	d := jute.NewDecoder(frame, 0)
	if err := d.ReadRecord(&hdr); err != nil {
		return hdr, nil, fmt.Errorf("reply header: %w", err)
	}
	body := append([]byte(nil), frame[d.Offset():]...)
	if hdr.Zxid > c.lastZxid {
		c.lastZxid = hdr.Zxid
	}
	if hdr.Xid == jute.XidNotification {
		var ev jute.WatcherEvent
		if err := jute.Unmarshal(body, &ev); err != nil {
			return hdr, body, fmt.Errorf("notification: %w", err)
		}
		c.events = append(c.events, ev)
	}
	return hdr, body, nil
}

// Call sends a request with the next xid and reads until its reply, queueing
// notifications and skipping ping replies met on the way. If the reply's err
// is 0 and resp is not nil, the body is decoded into resp. The returned
// error is about transport or decoding only: the server's error code is
// hdr.Err. A reply with another xid is an error (replies must come in order).
func (c *RawConn) Call(opcode int32, req jute.Record, resp jute.Record) (jute.ReplyHeader, error) {
	c.xid++
	xid := c.xid
	if err := c.Send(xid, opcode, req); err != nil {
		return jute.ReplyHeader{}, err
	}
	return c.ReadReply(xid, resp)
}

// ReadReply reads until the reply to xid, as Call does after sending.
func (c *RawConn) ReadReply(xid int32, resp jute.Record) (jute.ReplyHeader, error) {
	for {
		hdr, body, err := c.Recv()
		if err != nil {
			return hdr, fmt.Errorf("waiting for reply to xid %d: %w", xid, err)
		}
		switch {
		case hdr.Xid == jute.XidNotification || hdr.Xid == jute.XidPing:
			continue
		case hdr.Xid != xid:
			return hdr, fmt.Errorf("reply xid %d while waiting for xid %d", hdr.Xid, xid)
		}
		if hdr.Err == jute.ErrOk && resp != nil {
			if err := jute.Unmarshal(body, resp); err != nil {
				return hdr, fmt.Errorf("reply to xid %d: %w", xid, err)
			}
		}
		return hdr, nil
	}
}

// Ping sends a ping (xid -2, op 11) and waits for its reply, keeping the
// session alive; notifications met on the way are queued.
func (c *RawConn) Ping() error {
	if err := c.Send(jute.XidPing, jute.OpPing, nil); err != nil {
		return err
	}
	for {
		hdr, _, err := c.Recv()
		if err != nil {
			return fmt.Errorf("waiting for ping reply: %w", err)
		}
		switch hdr.Xid {
		case jute.XidPing:
			return nil
		case jute.XidNotification:
		default:
			return fmt.Errorf("reply xid %d while waiting for the ping reply", hdr.Xid)
		}
	}
}

// Events returns every notification received so far, oldest first.
func (c *RawConn) Events() []jute.WatcherEvent {
	return append([]jute.WatcherEvent(nil), c.events...)
}

// WaitEvent returns the oldest notification not yet returned by WaitEvent,
// reading from the socket (up to timeout) if none is queued. A reply other
// than a ping reply arriving meanwhile is an error.
func (c *RawConn) WaitEvent(timeout time.Duration) (jute.WatcherEvent, error) {
	if c.consumed < len(c.events) {
		c.consumed++
		return c.events[c.consumed-1], nil
	}
	saved := c.timeout
	defer func() { c.timeout = saved }()
	c.timeout = timeout
	deadline := time.Now().Add(timeout)
	for {
		hdr, _, err := c.Recv()
		if err != nil {
			return jute.WatcherEvent{}, fmt.Errorf("waiting for a notification: %w", err)
		}
		switch hdr.Xid {
		case jute.XidNotification:
			c.consumed++
			return c.events[c.consumed-1], nil
		case jute.XidPing:
			c.timeout = time.Until(deadline)
		default:
			return jute.WatcherEvent{}, fmt.Errorf("reply xid %d while waiting for a notification", hdr.Xid)
		}
	}
}

// ExpectClosed reads until the server closes the connection and returns
// nil, or an error if a frame arrives first or nothing happens within
// timeout. Frames are returned in the error to help debugging.
func (c *RawConn) ExpectClosed(timeout time.Duration) error {
	saved := c.timeout
	defer func() { c.timeout = saved }()
	c.timeout = timeout
	hdr, _, err := c.Recv()
	switch {
	case err == nil:
		return fmt.Errorf("got a frame (xid %d, zxid %#x, err %d) instead of a close", hdr.Xid, hdr.Zxid, hdr.Err)
	case IsClosed(err):
		return nil
	default:
		return fmt.Errorf("connection not closed: %w", err)
	}
}

// IsClosed reports whether err means the peer closed the connection.
func IsClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// IsTimeout reports whether err is a read or write deadline expiry.
func IsTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
