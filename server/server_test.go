package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// startServer runs an in-process standalone server on a free loopback port.
func startServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	return startServerWith(t, mutate, nil)
}

// startServerWith is startServer with before run on the Server before it
// starts (queueCap).
func startServerWith(t *testing.T, mutate func(*Config), before func(*Server)) *Server {
	t.Helper()
	cfg := Default()
	cfg.ClientPort = 0
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.DataDir = t.TempDir()
	cfg.FourLetterWords = map[string]bool{"srvr": true, "ruok": true}
	cfg.AdminEnabled = false // loopback only: no AdminServer on 0.0.0.0:8080
	if mutate != nil {
		mutate(&cfg)
	}
	s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if before != nil {
		before(s)
	}
	require.NoError(t, s.Start())
	t.Cleanup(func() { require.NoError(t, s.Stop()) })
	return s
}

// startServerLogging runs a standalone server on a free loopback port that
// logs to logs at level; the test may Stop it itself (the cleanup's Stop
// then waits for that one).
func startServerLogging(t *testing.T, logs io.Writer, level zerolog.Level) *Server {
	t.Helper()
	cfg := Default()
	cfg.ClientPort, cfg.ClientPortAddress = 0, "127.0.0.1"
	cfg.DataDir = t.TempDir()
	cfg.AdminEnabled = false
	s := New(cfg, zerolog.New(logs).Level(level))
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func dial(t *testing.T, s *Server) *zktest.RawConn {
	t.Helper()
	c, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
	require.NotZero(t, resp.SessionID)
	t.Cleanup(c.Close)
	return c
}

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func header(xid, op int32) []byte {
	return jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
}

// TestBadInputClosesOnlyThatConnection sends each kind of malformed input on
// its own connection and checks ZooKeeper's answer, then that a healthy
// connection opened before is still served.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	s := startServer(t, func(c *Config) { c.JuteMaxBuffer = 4096 })
	healthy := dial(t, s)
	tests := []struct {
		name      string
		raw       []byte
		wantReply int32 // error code of a reply expected first; 1 = no reply
		wantOpen  bool
	}{
		{"frame above jute.maxbuffer", binary.BigEndian.AppendUint32(nil, 4097), 1, false},
		{"negative frame length", binary.BigEndian.AppendUint32(nil, 0xffffff00), 1, false},
		{"header shorter than 8 bytes", frame([]byte{0, 0, 0, 1}), 1, false},
		{"garbage getData body", frame(append(header(5, jute.OpGetData), 0xff, 0xff, 0xff, 0x7f)), jute.ErrMarshallingError, true},
		{"garbage create body", frame(append(header(5, jute.OpCreate), 0, 0, 0, 9, 'x')), jute.ErrMarshallingError, true},
		{"unknown opcode", frame(header(5, 77)), jute.ErrUnimplemented, false},
		{"notification opcode from a client", frame(header(5, jute.OpNotification)), jute.ErrUnimplemented, false},
		{"createSession opcode from a client", frame(header(5, jute.OpCreateSession)), 1, false},
		{"deleteContainer from a client", frame(append(header(5, jute.OpDeleteContainer), jute.Marshal(&jute.PathRequest{Path: "/x"})...)), jute.ErrBadArguments, true},
		{"lone check", frame(append(header(5, jute.OpCheck), jute.Marshal(&jute.CheckVersionRequest{Path: "/", Version: 1})...)), jute.ErrUnimplemented, true},
		{"multi mixing reads and writes", frame(append(header(5, jute.OpMulti), jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/m"}}, {Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: "/"}}}})...)),
			jute.ErrMarshallingError, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, s)
			c.SetTimeout(5 * time.Second)
			require.NoError(t, c.WriteRaw(tt.raw))
			if tt.wantReply != 1 {
				hdr, _, err := c.Recv()
				require.NoError(t, err)
				require.Equal(t, int32(5), hdr.Xid)
				require.Equal(t, tt.wantReply, hdr.Err)
			}
			if tt.wantOpen {
				var resp jute.StatResponse
				hdr, err := c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &resp)
				require.NoError(t, err)
				require.Zero(t, hdr.Err)
			} else {
				require.NoError(t, c.ExpectClosed(5*time.Second))
			}
			// The other connection is untouched.
			hdr, err := healthy.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/zookeeper"}, &jute.StatResponse{})
			require.NoError(t, err)
			require.Zero(t, hdr.Err)
		})
	}
}

func TestFrameAtMaxBufferIsAccepted(t *testing.T) {
	s := startServer(t, func(c *Config) { c.JuteMaxBuffer = 4096 })
	c := dial(t, s)
	body := append(header(1, jute.OpCreate), jute.Marshal(&jute.CreateRequest{Path: "/big",
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})...)
	// Pad the data so the frame is exactly jute.maxbuffer bytes.
	req := jute.CreateRequest{Path: "/big", ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}
	req.Data = make([]byte, 4096-len(body))
	body = append(header(1, jute.OpCreate), jute.Marshal(&req)...)
	require.Len(t, body, 4096)
	require.NoError(t, c.WriteRaw(frame(body)))
	hdr, _, err := c.Recv()
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
}

func TestConnectionLimitPerIP(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClientCnxns = 2 })
	dial(t, s)
	dial(t, s)
	_, _, err := zktest.DialRawRequest(s.Addr().String(), jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	require.Error(t, err, "third connection from one address must be refused")
}

// startEnsemble runs n in-process members on free loopback ports and
// returns them once every Start returned; mutate adjusts each member's
// config. Cleanup stops them all.
func startEnsemble(t *testing.T, n int, mutate func(cfg *Config)) ([]*Server, map[uint64]Member) {
	t.Helper()
	ports, err := freeport.Ports(3 * n)
	require.NoError(t, err)
	members := map[uint64]Member{}
	for i := uint64(1); i <= uint64(n); i++ {
		p := ports[(i-1)*3:]
		members[i] = Member{ID: i, Host: "127.0.0.1", PeerPort: p[0], ElectionPort: p[1], Role: "participant",
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", p[2])}
	}
	servers := make([]*Server, n)
	errs := make(chan error, n)
	for i := range servers {
		cfg := Default()
		cfg.AdminEnabled = false
		cfg.ClientPortAddress, cfg.ClientPort = "127.0.0.1", ports[i*3+2]
		cfg.DataDir = t.TempDir()
		cfg.ServerID = uint64(i + 1)
		cfg.Members = members
		cfg.ElectionTickMs = 20
		if mutate != nil {
			mutate(&cfg)
		}
		s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
		servers[i] = s
		go func() { errs <- s.Start() }()
	}
	for range servers {
		require.NoError(t, <-errs)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Stop()
		}
	})
	return servers, members
}
