package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/jute"
)

// The session workload's clients. A session is short: connect, wait for the
// session, close it. go-zookeeper's zk.Connect costs 160–310 µs of CPU per
// session on the benchmark's machine (it allocates and zeroes a 1.5 MiB send
// buffer whatever the options, and starts goroutines, channels and an event
// loop), so with 16 clients on 2 cores the clients, not the servers, bound
// the rate: against a server that answered at once without fsync it reached
// only about 1.3x ZooKeeper. The benchmark measures the servers, so by
// default (-session-client wire) the workload speaks the protocol directly,
// with the frames go-zookeeper sends; -session-client gozk keeps the
// go-zookeeper client for comparison.

// Session client kinds (the -session-client flag).
const (
	sessionClientWire = "wire"
	sessionClientGozk = "gozk"
)

// sessionClient is the session workload's client kind, set from the flag
// before any workload runs and read only afterwards.
var sessionClient = sessionClientWire

// sessionDeadline bounds one whole session (dial, connect, close) of either
// client; a session that does not finish in time is an error, never a pass.
const sessionDeadline = 20 * time.Second

// sessionTimeoutMs is the session timeout both clients ask for
// (zk.Connect(…, 10*time.Second) sends 10000).
const sessionTimeoutMs = 10000

// connectFrame and closeFrame are the two frames the wire client writes:
// what go-zookeeper v1.0.4 writes for a new session followed by Close, plus
// the readOnly byte (false) that the Java client sends and go-zookeeper
// omits. That is a ConnectRequest with protocolVersion 0, lastZxidSeen 0,
// timeout 10000 ms, sessionId 0, a 16-byte zero password and readOnly false;
// then the request header {xid 1, closeSession (-11)} with no body
// (go-zookeeper's first xid is 1, and a session this short sends no ping
// before it). The readOnly byte matters to the comparison: ZooKeeper 3.8
// logs a WARN line ("old client") for every connect without it, a cost a
// Java client never makes it pay (TestWireSessionApacheLogsNoWarning).
var connectFrame, closeFrame = sessionFrames()

// closeXid is the xid of closeFrame's request.
const closeXid = 1

func sessionFrames() (connect, closeReq []byte) {
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	e.WriteRecord(&jute.ConnectRequest{
		ProtocolVersion: 0,
		LastZxidSeen:    0,
		TimeOut:         sessionTimeoutMs,
		SessionID:       0,
		Passwd:          make([]byte, 16),
		HasReadOnly:     true,
		ReadOnly:        false,
	})
	e.EndFrame(start)
	connect = append([]byte(nil), e.Bytes()...)
	e.Reset()
	start = e.StartFrame()
	e.WriteRecord(&jute.RequestHeader{Xid: closeXid, Type: jute.OpCloseSession})
	e.EndFrame(start)
	return connect, append([]byte(nil), e.Bytes()...)
}

// maxSessionFrame bounds a frame the wire client accepts: a ConnectResponse
// (41 bytes with the readOnly byte) or a reply header (16 bytes).
const maxSessionFrame = 256

// errNoSession means a server answered the ConnectRequest without granting a
// session (session id 0 or timeout 0: ZooKeeper's answer to a connect it
// refuses).
var errNoSession = errors.New("connect refused: no session granted")

// wireSession opens a session at addr and closes it, as go-zookeeper does
// on the wire (see connectFrame), and returns the session's id. Every step is
// bounded by d from the start; any failure (dial, a refused session, a
// closeSession reply with an error, a connection closed early) is an error.
func wireSession(addr string, d time.Duration) (int64, error) {
	return wireSessionHook(addr, d, nil)
}

// wireSessionHook is wireSession calling held, if not nil, once the session
// is granted and before it is closed (tests look at the server then).
func wireSessionHook(addr string, d time.Duration, held func()) (int64, error) {
	deadline := time.Now().Add(d)
	nc, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(deadline); err != nil {
		return 0, fmt.Errorf("set deadline on %s: %w", addr, err)
	}
	if _, err := nc.Write(connectFrame); err != nil {
		return 0, fmt.Errorf("send ConnectRequest to %s: %w", addr, err)
	}
	r := bufio.NewReaderSize(nc, maxSessionFrame)
	var buf [maxSessionFrame]byte
	body, err := jute.ReadFrame(r, buf[:0], maxSessionFrame)
	if err != nil {
		return 0, fmt.Errorf("read ConnectResponse from %s: %w", addr, err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(body, &resp); err != nil {
		return 0, fmt.Errorf("ConnectResponse from %s: %w", addr, err)
	}
	if resp.SessionID == 0 || resp.TimeOut <= 0 {
		return 0, fmt.Errorf("%s: %w (session %#x, timeout %d ms)", addr, errNoSession, resp.SessionID, resp.TimeOut)
	}
	if held != nil {
		held()
	}
	if _, err := nc.Write(closeFrame); err != nil {
		return resp.SessionID, fmt.Errorf("send closeSession of %#x to %s: %w", resp.SessionID, addr, err)
	}
	for {
		body, err = jute.ReadFrame(r, buf[:0], maxSessionFrame)
		if err != nil {
			return resp.SessionID, fmt.Errorf("read closeSession reply of %#x from %s: %w", resp.SessionID, addr, err)
		}
		var hdr jute.ReplyHeader
		if err := jute.Unmarshal(body, &hdr); err != nil {
			return resp.SessionID, fmt.Errorf("closeSession reply of %#x from %s: %w", resp.SessionID, addr, err)
		}
		if hdr.Xid == -1 { // a notification; this session set no watch, but a client skips them
			continue
		}
		if hdr.Xid != closeXid {
			return resp.SessionID, fmt.Errorf("closeSession of %#x at %s: reply xid %d, want %d", resp.SessionID, addr, hdr.Xid, closeXid)
		}
		if hdr.Err != 0 {
			return resp.SessionID, fmt.Errorf("closeSession of %#x at %s: error code %d", resp.SessionID, addr, hdr.Err)
		}
		return resp.SessionID, nil
	}
}

// gozkSession opens a session at addr with go-zookeeper, waits for it and
// closes it (Close sends closeSession and waits up to 1 s for its reply).
func gozkSession(addr string, d time.Duration) error {
	c, events, err := zk.Connect([]string{addr}, sessionTimeoutMs*time.Millisecond, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}),
		zk.WithMaxBufferSize(sessionRecvBuffer))
	if err != nil {
		return err
	}
	defer c.Close()
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-timeout.C:
			return fmt.Errorf("no session with %s in %v", addr, d)
		}
	}
}

// sessionRecvBuffer caps the receive buffer of go-zookeeper's short-lived
// session clients (WithMaxBufferSize; its default is 1.5 MiB, allocated and
// zeroed by every Connect). Its replies are a connect response and a
// closeSession reply, tens of bytes, so 64 KiB changes nothing the servers
// see; the send buffer, another 1.5 MiB per Connect, cannot be avoided
// through the client's API.
const sessionRecvBuffer = 64 << 10

// sessionOnce runs one operation of the session workload with the client
// kind chosen by -session-client.
func sessionOnce(addr string) error {
	if sessionClient == sessionClientGozk {
		return gozkSession(addr, sessionDeadline)
	}
	_, err := wireSession(addr, sessionDeadline)
	return err
}
