package server

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// TestStopEndsAPendingSync: a member that lost its quorum has a client's
// sync waiting for a ReadIndex round that cannot complete (it re-sends it
// every election timeout until its context ends, the write timeout of 30 s).
// Stop must end that wait and wait for the goroutine doing it. The goroutine
// used to have no owner (node.Stop happened to end it); now connWG owns it
// and Stop waits for it before stopping the node, so without Stop's cancel
// reaching the sync's context this test fails after 10 s.
func TestStopEndsAPendingSync(t *testing.T) {
	servers, _ := startEnsemble(t, 3, nil)
	var follower *Server
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.node.IsLeader() {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a leader")
	for _, s := range servers {
		if !s.node.IsLeader() && follower == nil {
			follower = s
		}
	}
	zc, _, err := zk.Connect([]string{follower.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(zc.Close)
	_, err = zc.Create("/before", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for _, s := range servers {
		if s != follower {
			require.NoError(t, s.Stop())
		}
	}
	go func() { _, _ = zc.Sync("/") }()
	require.Eventually(t, func() bool { return len(syncGoroutines()) > 0 }, 10*time.Second, time.Millisecond,
		"the sync is waiting for its ReadIndex round")
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- follower.Stop() }()
	select {
	case <-stopped:
		t.Logf("Stop took %v", time.Since(start))
	case <-time.After(writeTimeout / 3):
		t.Fatalf("Stop still waiting after %v: a pending sync holds it until the write timeout (%v)", writeTimeout/3, writeTimeout)
	}
	require.Empty(t, syncGoroutines(), "a sync's goroutine outlived Stop")
}

// syncGoroutines lists the goroutines waiting for a sync's ReadIndex round.
func syncGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		if strings.Contains(g, "(*conn).handleSync.func") {
			out = append(out, g)
		}
	}
	return out
}
