package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// connCount is the number of registered client connections.
func connCount(s *Server) int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.conns)
}

// waitNoConns waits until every client connection was unregistered.
func waitNoConns(t *testing.T, s *Server) {
	t.Helper()
	require.Eventually(t, func() bool { return connCount(s) == 0 }, 30*time.Second, 5*time.Millisecond,
		"client connections still registered")
}

// TestNoWatchOutlivesItsConnection opens many raw clients that each register
// a watch and close their socket at once, without waiting for the reply. The
// server reads the request and then EOF, so the read that registers the
// watch can run after the connection ended. Once every connection is gone,
// the server must hold no watch (ZooKeeper 3.8: 0).
func TestNoWatchOutlivesItsConnection(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClientCnxns = 0 })
	tests := []struct {
		name    string
		clients int
		op      int32
		req     jute.Record
	}{
		{"recursive addWatch", 300, jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: jute.AddWatchModePersistentRecursive}},
		{"persistent addWatch", 100, jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: jute.AddWatchModePersistent}},
		{"exists watch", 100, jute.OpExists, &jute.PathWatchRequest{Path: "/missing", Watch: true}},
		{"getChildren watch", 100, jute.OpGetChildren, &jute.PathWatchRequest{Path: "/", Watch: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, tt.clients)
			for range tt.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, _, err := zktest.DialRawRequest(s.Addr().String(), jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
					if err != nil {
						errs <- err
						return
					}
					err = c.Send(1, tt.op, tt.req)
					c.Close()
					if err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			waitNoConns(t, s)
			// The server's own counters: mntr's watch_count, wchs's total.
			require.Zero(t, s.watchCount(), "watches left with no connection")
			require.Zero(t, s.dataWatches().total, "wchs reports watches with no connection")
			sum := s.watches.summary()
			require.Zero(t, sum.Total)
			require.Zero(t, s.watches.data.recursive+s.watches.child.recursive, "recursive count")
		})
	}
}

// blockingCloseConn is a net.Conn whose Close blocks until released, as a
// TLS Close does while it sends close_notify to a client that stopped
// reading.
type blockingCloseConn struct {
	net.Conn
	closing chan struct{} // closed when Close is first entered
	release chan struct{} // Close returns once this is closed
	once    sync.Once
	relOnce sync.Once
}

// unblock lets Close return; idempotent.
func (b *blockingCloseConn) unblock() { b.relOnce.Do(func() { close(b.release) }) }

func newBlockingCloseConn(nc net.Conn) *blockingCloseConn {
	return &blockingCloseConn{Conn: nc, closing: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingCloseConn) Close() error {
	b.once.Do(func() { close(b.closing) })
	<-b.release
	return b.Conn.Close()
}

// pipeConn registers and serves a connection over an in-memory pipe whose
// server side Close blocks until released (released at the latest in t's
// cleanup, before the server stops).
func pipeConn(t *testing.T, s *Server) (*conn, *blockingCloseConn) {
	t.Helper()
	client, server := net.Pipe()
	nc := newBlockingCloseConn(server)
	t.Cleanup(func() {
		nc.unblock()
		_ = client.Close()
	})
	c := newConn(s, nc)
	require.True(t, s.runConn(c, c.serve))
	return c, nc
}

// TestCloseFromApplyHookDoesNotBlock closes a connection through an apply
// hook (a session expired through the log) while the socket's Close blocks.
// The hook runs on the raft goroutine: it must return at once, and the
// connection's own goroutine must close the socket.
func TestCloseFromApplyHookDoesNotBlock(t *testing.T) {
	tests := []struct {
		name string
		hook func(s *Server, c *conn)
	}{
		{"session expired", func(s *Server, c *conn) { s.sessionClosed(c.sessionID, true, 0) }},
		{"state replaced by a snapshot", func(s *Server, _ *conn) { s.stateReplaced() }},
		{"write refused as out of order", func(_ *Server, c *conn) {
			(&item{waits: true, conn: c}).applied(applyResult{Err: errOutOfOrder})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, nil)
			c, nc := pipeConn(t, s)
			c.sessionID = 0x4242
			s.connMu.Lock()
			s.bySess[c.sessionID] = c
			s.connMu.Unlock()

			returned := make(chan struct{})
			go func() {
				defer close(returned)
				tt.hook(s, c)
			}()
			select {
			case <-returned:
			case <-nc.closing:
				// The socket's Close was entered; the hook must still return
				// while it is blocked.
				select {
				case <-returned:
				case <-time.After(10 * time.Second):
					t.Fatal("apply hook blocked on the connection's Close")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("apply hook did not return")
			}
			select {
			case <-nc.closing: // the connection's goroutine closes the socket
			case <-time.After(10 * time.Second):
				t.Fatal("socket never closed")
			}
			nc.unblock()
			waitNoConns(t, s)
		})
	}
}

// goroutineStacks returns the stack of every running goroutine, one
// string each.
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// connGoroutines lists the stacks of running goroutines that belong to a
// client connection.
func connGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		for _, fn := range []string{"server.(*conn).", "server.(*Server).runConn", "server.(*Server).serveTLS"} {
			if strings.Contains(g, fn) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// TestStopWaitsForConnectionGoroutines stops a server while a connection's
// goroutine is still inside the socket's Close, with real clients connected
// too. Stop must not return before that goroutine ended, and once it
// returned no goroutine of any connection may be left.
func TestStopWaitsForConnectionGoroutines(t *testing.T) {
	cfg := Default()
	cfg.ClientPort, cfg.ClientPortAddress = 0, "127.0.0.1"
	cfg.DataDir = t.TempDir()
	cfg.AdminEnabled = false
	s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Stop() }) // waits for a Stop in progress
	for range 5 {
		c := dial(t, s)
		_, err := c.Call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: jute.AddWatchModePersistentRecursive}, nil)
		require.NoError(t, err)
	}
	_, nc := pipeConn(t, s)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		assert.NoError(t, s.Stop())
	}()
	<-nc.closing // Stop closed the connection; its goroutine is inside Close
	// While Close is blocked, Stop must not return; a correct Stop never does,
	// so this bound cannot fail a correct server.
	select {
	case <-stopped:
		t.Fatal("Stop returned while a connection goroutine was still running")
	case <-time.After(200 * time.Millisecond):
	}
	nc.unblock()
	<-stopped
	require.Empty(t, connGoroutines(), "connection goroutines left after Stop")
	require.Zero(t, s.watchCount())
}

// TestFailedStartReleasesPorts starts a member whose client port is taken,
// after its election port was bound and its node started. Start must fail
// and release everything it opened: the election and peer ports are free,
// and once the client port is free a new Start on the same ports and data
// succeeds.
func TestFailedStartReleasesPorts(t *testing.T) {
	ports, err := freeport.Ports(9)
	require.NoError(t, err)
	members := map[uint64]Member{}
	for i := uint64(1); i <= 3; i++ {
		p := ports[(i-1)*3:]
		members[i] = Member{ID: i, Host: "127.0.0.1", PeerPort: p[0], ElectionPort: p[1], Role: "participant",
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", p[2])}
	}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	config := func(id uint64) Config {
		cfg := Default()
		cfg.AdminEnabled = false
		cfg.ClientPortAddress, cfg.ClientPort = "127.0.0.1", ports[(id-1)*3+2]
		cfg.DataDir = dirs[id-1]
		cfg.ServerID = id
		cfg.Members = members
		cfg.ElectionTickMs = 20
		return cfg
	}
	logger := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	var running []*Server
	t.Cleanup(func() {
		for _, s := range running {
			_ = s.Stop()
		}
	})
	errs := make(chan error, 2)
	for id := uint64(2); id <= 3; id++ {
		s := New(config(id), logger)
		running = append(running, s)
		go func() { errs <- s.Start() }()
	}
	for range 2 {
		require.NoError(t, <-errs)
	}

	// Member 1's client port is taken: Start fails after the election port,
	// the raft transport and the node are up.
	blocker, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ports[2]))
	require.NoError(t, err)
	failed := New(config(1), logger)
	err = failed.Start()
	require.ErrorContains(t, err, "listen on 127.0.0.1")

	// The caller of a failed Start does not call Stop: nothing may be left.
	for _, addr := range []string{members[1].ElectionAddr(), members[1].PeerAddr()} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "port %s still bound after a failed Start", addr)
		require.NoError(t, ln.Close())
	}
	require.NoError(t, failed.Stop(), "Stop after a failed Start is a no-op")
	require.NoError(t, blocker.Close())
	s := New(config(1), logger)
	running = append(running, s)
	require.NoError(t, s.Start())
	c := dial(t, s)
	_, err = c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
	require.NoError(t, err)
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestContainerRemovalAtStop checks the container round's proposals
// (serverLeaderHooks.proposeDecision) against Stop:
// a running server proposes and goes on; once Stop began, a proposal is
// canceled (its context derives from the server's stop context) or fails
// because the node stopped, the loop ends, and nothing is logged as a
// failure. The loop used to test for context.Canceled on a context that
// could only time out, so a proposal failing at shutdown was logged.
func TestContainerRemovalAtStop(t *testing.T) {
	tests := []struct {
		name     string
		stop     bool
		wantMore bool
	}{
		{"running", false, true},
		{"stopping", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			s := startServerLogging(t, &logs, zerolog.WarnLevel)
			if tt.stop {
				require.NoError(t, s.Stop())
				require.ErrorIs(t, s.stopCtx.Err(), context.Canceled)
			}
			more := serverLeaderHooks{s}.proposeDecision(&entry{Type: entryDeleteContainer, Time: time.Now().UnixMilli(),
				Body: jute.Marshal(&jute.PathRequest{Path: "/c"})})
			require.NotContains(t, logs.String(), "propose leader decision failed")
			require.Equal(t, tt.wantMore, more, "the loop goes on only while the server runs")
		})
	}
}

// TestAttachRefusedForASessionThatEnded: a handshake whose createSession or
// attach entry was applied, but whose session was then closed or expired
// (or attached to another connection) before the connection was listed,
// must not be attached: the close found no connection to end, so the client
// would otherwise believe in a session, and ephemerals, that are gone.
func TestAttachRefusedForASessionThatEnded(t *testing.T) {
	s := startServer(t, nil)
	zc := workload(t, s)
	live := zc.SessionID()
	tests := []struct {
		name      string
		sessionID int64
		connID    func() uint64
	}{
		{"session gone", 0x7777, func() uint64 { return 1 }},
		{"session attached to another connection", live, func() uint64 { return s.sm.sessionConn(live) + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := pipeConn(t, s)
			c.sessionID, c.connID = tt.sessionID, tt.connID()
			require.False(t, s.attachSession(c))
			s.connMu.Lock()
			defer s.connMu.Unlock()
			require.NotEqual(t, c, s.bySess[tt.sessionID], "the refused connection is not listed for the session")
		})
	}
}

// TestNewConnAllocatesLittle: accepting a connection allocates its conn and
// channels but no reply encoder (pooled, taken at the first reply), no
// logger context (made when it first logs) and no request ring of
// maxInFlight slots: a session that only connects and closes allocated
// several KiB per connection, which the garbage collector paid for.
func TestNewConnAllocatesLittle(t *testing.T) {
	s := startServer(t, nil)
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	const n = 200
	conns := make([]*conn, n)
	newOne := func(i int) {
		conns[i] = newConn(s, server)
		// As finish does: the pooled write buffer is not the connection's.
		writerPool.Put(conns[i].bw)
		conns[i].bw = nil
	}
	newOne(0) // the pools are filled
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range conns {
		newOne(i)
	}
	runtime.ReadMemStats(&after)
	perConn := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes per connection", perConn)
	require.Less(t, perConn, uint64(newConnBytes), "bytes allocated per accepted connection")
	runtime.KeepAlive(conns)
}

// TestAcceptedConnSocketOptions: a client connection's replies are not held
// back by Nagle's algorithm (TCP_NODELAY, which the net package sets on
// every TCP connection it accepts; acceptLoop does not set it again), and it
// has no TCP keep-alive, as in ZooKeeper (zookeeper.clientTcpKeepAlive is
// off by default): a session has pings and a timeout, and turning keep-alive
// on took four setsockopt calls per accepted connection. Both client ports.
func TestAcceptedConnSocketOptions(t *testing.T) {
	f := newTLSFixture(t)
	tests := []struct {
		name string
		addr func(*Server) net.Addr
	}{
		{"client port", (*Server).Addr},
		{"secure client port", (*Server).SecureAddr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startTLSServer(t, f.secure("none"))
			nc, err := net.Dial("tcp", tt.addr(s).String())
			require.NoError(t, err)
			defer nc.Close()
			require.Eventually(t, func() bool { return connCount(s) == 1 }, 10*time.Second, time.Millisecond)
			s.connMu.Lock()
			var sc net.Conn
			for c := range s.conns {
				sc = c.nc
			}
			s.connMu.Unlock()
			if tc, ok := sc.(*tls.Conn); ok {
				sc = tc.NetConn()
			}
			tc, ok := sc.(*net.TCPConn)
			require.True(t, ok, "client connection is %T", sc)
			raw, err := tc.SyscallConn()
			require.NoError(t, err)
			var noDelay, keepAlive int
			var nerr, kerr error
			require.NoError(t, raw.Control(func(fd uintptr) {
				noDelay, nerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
				keepAlive, kerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			}))
			require.NoError(t, nerr)
			require.NoError(t, kerr)
			require.NotZero(t, noDelay, "TCP_NODELAY on an accepted client connection")
			require.Zero(t, keepAlive, "SO_KEEPALIVE on an accepted client connection")
		})
	}
}

// TestSessionLifecycleLogsAtDebug: a session its client opens and closes
// writes no log line at info level, as in ZooKeeper 3.8 (whose "Established
// session" is a debug line): a client opening sessions by the thousand
// wrote two lines for each, a tenth of the server's syscalls of a session.
// At debug level both lines are there.
func TestSessionLifecycleLogsAtDebug(t *testing.T) {
	tests := []struct {
		level zerolog.Level
		want  []string // messages of lines naming the session
	}{
		{zerolog.InfoLevel, nil},
		{zerolog.DebugLevel, []string{"session created", "request", "session closing"}},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			var logs syncBuffer
			s := startServerLogging(t, &logs, tt.level)
			c, resp := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
			require.NotZero(t, resp.SessionID)
			_, err := c.CloseSession()
			require.NoError(t, err)
			require.NoError(t, s.Stop()) // every connection ended: its lines are written
			var got []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, sessionHex(resp.SessionID)) {
					var rec struct{ Message string }
					require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
					got = append(got, rec.Message)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRequestMakesNoConnLogger: a connection whose requests log nothing
// (the level is above debug) never makes its logger (conn.logger), whose
// zerolog context copy was one of the allocations of every session.
func TestRequestMakesNoConnLogger(t *testing.T) {
	s := startServer(t, nil) // warn level
	c := dial(t, s)
	_, err := c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
	require.NoError(t, err)
	_, err = c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/n", ACL: openACL()}, &jute.CreateResponse{})
	require.NoError(t, err)
	s.connMu.Lock()
	var conns []*conn
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	s.connMu.Unlock()
	require.Len(t, conns, 1)
	notMade := false
	conns[0].logOnce.Do(func() { notMade = true }) // runs only if logger never ran
	require.True(t, notMade, "the connection made its logger")
}
