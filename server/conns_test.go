package server

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
