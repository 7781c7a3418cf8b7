package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/cputime"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// globalSessions reads zk_global_sessions from the server's mntr.
func globalSessions(t *testing.T, s *zktest.Server) string {
	t.Helper()
	out, err := s.FourLetter("mntr")
	if err != nil {
		t.Fatalf("mntr: %v", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == "zk_global_sessions" {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no zk_global_sessions in mntr:\n%s", out)
	return ""
}

// TestWireSessionServers runs the wire client against each real server: a
// session exists while the client holds it (seen by mntr from another
// connection), is gone once wireSession returns, and a connect a server
// refuses (maxClientCnxns reached) is an error.
func TestWireSessionServers(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			s := zktest.Start(t, target, zktest.Options{})
			if got := globalSessions(t, s); got != "0" {
				t.Fatalf("sessions before = %s, want 0", got)
			}
			// The session is seen from mntr between connect and close.
			seen := make(chan string, 1)
			id, err := wireSessionHook(s.Addr, 10*time.Second, func() { seen <- globalSessions(t, s) })
			if err != nil {
				t.Fatalf("wireSession: %v", err)
			}
			if id == 0 {
				t.Fatal("session id 0 without an error")
			}
			if got := <-seen; got != "1" {
				t.Fatalf("sessions while open = %s, want 1", got)
			}
			if got := globalSessions(t, s); got != "0" {
				t.Fatalf("sessions after close = %s, want 0 (session %#x not closed)", got, id)
			}

			// Refused: one connection from 127.0.0.1 is all maxClientCnxns
			// allows, so the server drops the client's without a session.
			one := zktest.Start(t, target, zktest.Options{Extra: map[string]string{"maxClientCnxns": "1"}})
			held, _ := zktest.DialRaw(t, one.Addr, 0, nil, 10000, false)
			defer held.Close()
			if _, err := wireSession(one.Addr, 10*time.Second); err == nil {
				t.Fatal("wireSession succeeded past maxClientCnxns, want an error")
			} else {
				t.Logf("refused as expected: %v", err)
			}
		})
	}
}

func TestWireSessionDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	if _, err := wireSession(addr, 5*time.Second); err == nil || !strings.Contains(err.Error(), "dial") {
		t.Fatalf("err = %v, want a dial error", err)
	}
}

// fakeServer accepts one connection on a loopback port, reads the client's
// frames and answers with the replies script returns for each; it reports
// the frames it received (length included) on the returned channel.
func fakeServer(t *testing.T, script func(i int, frame []byte) ([]byte, bool)) (string, <-chan [][]byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan [][]byte, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var frames [][]byte
		defer func() { got <- frames }()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		for i := 0; ; i++ {
			body, err := jute.ReadFrame(c, nil, 1<<20)
			if err != nil {
				return
			}
			frame := append([]byte{0, 0, 0, 0}, body...)
			frame[3] = byte(len(body)) // bodies here are short
			frames = append(frames, frame)
			reply, more := script(i, frame)
			if reply != nil {
				if _, err := c.Write(reply); err != nil {
					return
				}
			}
			if !more {
				return
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), got
}

func frameOf(recs ...jute.Record) []byte {
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	for _, r := range recs {
		e.WriteRecord(r)
	}
	e.EndFrame(start)
	return e.Bytes()
}

var granted = frameOf(&jute.ConnectResponse{TimeOut: 10000, SessionID: 0x1234, Passwd: make([]byte, 16)})

// TestWireSessionFramesMatchGozk checks that the wire client writes, byte
// for byte, the frames go-zookeeper writes for connect then Close, but for
// the readOnly byte (false) that ends the wire client's ConnectRequest.
func TestWireSessionFramesMatchGozk(t *testing.T) {
	answer := func(i int, _ []byte) ([]byte, bool) {
		if i == 0 {
			return granted, true
		}
		return frameOf(&jute.ReplyHeader{Xid: closeXid, Zxid: 2}), false
	}
	addr, gozkFrames := fakeServer(t, answer)
	if err := gozkSession(addr, 10*time.Second); err != nil {
		t.Fatalf("gozkSession: %v", err)
	}
	want := <-gozkFrames
	addr, wireFrames := fakeServer(t, answer)
	if _, err := wireSession(addr, 10*time.Second); err != nil {
		t.Fatalf("wireSession: %v", err)
	}
	got := <-wireFrames
	if len(want) != 2 {
		t.Fatalf("go-zookeeper wrote %d frames, want connect and close: %x", len(want), want)
	}
	// go-zookeeper's ConnectRequest plus the readOnly byte (false), with the
	// frame's length one more.
	withReadOnly := append([]byte(nil), want[0]...)
	withReadOnly = append(withReadOnly, 0)
	withReadOnly[3]++
	want[0] = withReadOnly
	for i := range want {
		if i >= len(got) || !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d: wire client %x, go-zookeeper %x", i, at(got, i), want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("wire client wrote %d frames, go-zookeeper %d", len(got), len(want))
	}
	if !bytes.Equal(want[0], connectFrame) || !bytes.Equal(want[1], closeFrame) {
		t.Fatalf("frames differ from connectFrame/closeFrame")
	}
	var req jute.ConnectRequest
	if err := jute.Unmarshal(connectFrame[4:], &req); err != nil {
		t.Fatal(err)
	}
	if req.ProtocolVersion != 0 || req.LastZxidSeen != 0 || req.TimeOut != 10000 || req.SessionID != 0 ||
		!bytes.Equal(req.Passwd, make([]byte, 16)) || !req.HasReadOnly || req.ReadOnly {
		t.Fatalf("ConnectRequest = %+v", req)
	}
}

func at(f [][]byte, i int) []byte {
	if i < len(f) {
		return f[i]
	}
	return nil
}

// TestWireSessionFailures: every way a server can fail the session is an
// error, never a pass.
func TestWireSessionFailures(t *testing.T) {
	closeReply := func(h jute.ReplyHeader) func(int, []byte) ([]byte, bool) {
		return func(i int, _ []byte) ([]byte, bool) {
			if i == 0 {
				return granted, true
			}
			return frameOf(&h), false
		}
	}
	tests := []struct {
		name    string
		script  func(i int, frame []byte) ([]byte, bool)
		wantErr string
	}{
		{"session id 0 (refused or expired)", func(int, []byte) ([]byte, bool) {
			return frameOf(&jute.ConnectResponse{TimeOut: 0, SessionID: 0, Passwd: make([]byte, 16)}), false
		}, "no session granted"},
		{"timeout 0", func(int, []byte) ([]byte, bool) {
			return frameOf(&jute.ConnectResponse{TimeOut: 0, SessionID: 7, Passwd: make([]byte, 16)}), false
		}, "no session granted"},
		{"closed before the ConnectResponse", func(int, []byte) ([]byte, bool) { return nil, false }, "read ConnectResponse"},
		{"short ConnectResponse", func(int, []byte) ([]byte, bool) { return []byte{0, 0, 0, 4, 0, 0, 0, 0}, false }, "ConnectResponse"},
		{"closed before the close reply", func(i int, _ []byte) ([]byte, bool) {
			if i == 0 {
				return granted, true
			}
			return nil, false
		}, "read closeSession reply"},
		{"close reply with an error", closeReply(jute.ReplyHeader{Xid: closeXid, Err: -112}), "error code -112"},
		{"close reply with another xid", closeReply(jute.ReplyHeader{Xid: 5}), "reply xid 5"},
		{"oversized frame", func(int, []byte) ([]byte, bool) { return []byte{0, 1, 0, 0}, false }, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, _ := fakeServer(t, tt.script)
			_, err := wireSession(addr, 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestWireSessionDeadline: a server that never answers fails the session
// when its deadline passes.
func TestWireSessionDeadline(t *testing.T) {
	addr, _ := fakeServer(t, func(int, []byte) ([]byte, bool) {
		time.Sleep(time.Second) // longer than the client's deadline; then hang up
		return nil, false
	})
	_, err := wireSession(addr, 100*time.Millisecond)
	if !zktest.IsTimeout(err) {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

// BenchmarkWireSession is the wire client's side of the session workload
// against a zkraft server process: cpu-µs/op is this process's CPU (the
// client's alone) per session.
func BenchmarkWireSession(b *testing.B) {
	s := zktest.Start(b, zktest.Zkraft, zktest.Options{})
	b.SetParallelism(8) // 16 clients on 2 CPUs, as zkbench
	cpu0 := cputime.Process()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := wireSession(s.Addr, 10*time.Second); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// TestWireSessionApacheLogsNoWarning: ZooKeeper 3.8 logs a WARN line for
// every ConnectRequest without the readOnly byte ("old client"); the wire
// client sends it, as the Java client does, so that the benchmark does not
// make ZooKeeper write a log line per session that zkraft does not.
func TestWireSessionApacheLogsNoWarning(t *testing.T) {
	s := zktest.Start(t, zktest.Apache, zktest.Options{})
	count := func() int {
		b, err := os.ReadFile(s.LogPath)
		if err != nil {
			t.Fatalf("read ZooKeeper's log: %v", err)
		}
		return strings.Count(string(b), "Connection request from old client")
	}
	before := count()
	const n = 20
	for range n {
		if _, err := wireSession(s.Addr, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// The WARN is logged before the ConnectResponse is sent, so every line
	// is in the log by now; a short wait covers the logger's buffering.
	time.Sleep(200 * time.Millisecond)
	if got := count() - before; got != 0 {
		t.Errorf("ZooKeeper logged %d 'old client' WARN lines for %d wire sessions", got, n)
	}
}
