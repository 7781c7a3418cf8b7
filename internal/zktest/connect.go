package zktest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnOption configures a go-zookeeper connection; zk.WithLogger(...) and
// the other zk.With* options are assignable to it.
type ConnOption = func(*zk.Conn)

// DefaultSessionTimeout is the session timeout Connect asks for.
const DefaultSessionTimeout = 10 * time.Second

// connectTimeout bounds the wait for a session.
const connectTimeout = 15 * time.Second

// Connect opens a go-zookeeper connection to s with DefaultSessionTimeout,
// waits (bounded) until it has a session, and closes it in t's cleanup.
// The returned channel carries the later events of the connection.
func (s *Server) Connect(t testing.TB, opts ...ConnOption) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return s.ConnectTimeout(t, DefaultSessionTimeout, opts...)
}

// ConnectTimeout is Connect with a chosen session timeout.
func (s *Server) ConnectTimeout(t testing.TB, sessionTimeout time.Duration, opts ...ConnOption) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return ConnectHosts(t, []string{s.Addr}, sessionTimeout, opts...)
}

// ConnectHosts is Connect to a list of servers (an ensemble's members):
// go-zookeeper picks one and moves to another when it fails.
func ConnectHosts(t testing.TB, hosts []string, sessionTimeout time.Duration, opts ...ConnOption) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	addr := strings.Join(hosts, ",")
	logger := &testLogger{t: t}
	all := append([]ConnOption{zk.WithLogger(logger)}, opts...)
	conn, events, err := zk.Connect(hosts, sessionTimeout, func(c *zk.Conn) {
		for _, o := range all {
			o(c)
		}
	})
	if err != nil {
		t.Fatalf("zktest: connect to %s: %v", addr, err)
	}
	t.Cleanup(func() {
		conn.Close()
		logger.stop()
	})
	deadline := time.After(connectTimeout)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("zktest: connection to %s closed before a session was established", addr)
			}
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				return conn, events
			}
		case <-deadline:
			t.Fatalf("zktest: no session from %s within %v (state %v)", addr, connectTimeout, conn.State())
		}
	}
}

// testLogger forwards go-zookeeper's log lines to t.Logf until the test's
// cleanup runs; later lines (from goroutines still winding down) are
// dropped, because t.Logf panics after the test has finished.
type testLogger struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (l *testLogger) Printf(format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Logf("go-zk: "+format, args...)
	}
}

func (l *testLogger) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}
