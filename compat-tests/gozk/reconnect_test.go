package gozk

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
)

// gatedDialer records go-zk's connections and holds every dial after the
// first until released, so a test can change the tree while the client is
// disconnected.
type gatedDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	release chan struct{}
}

func (d *gatedDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	first := len(d.conns) == 0
	d.mu.Unlock()
	if !first {
		select {
		case <-d.release:
		case <-time.After(eventTimeout):
		}
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

func (d *gatedDialer) last() net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[len(d.conns)-1]
}

// TestGoZKReconnect drops go-zk's TCP connection, changes watched nodes
// while it is away, and lets it reconnect: it keeps its session, and the
// setWatches it sends fires the missed events and re-registers the rest.
func TestGoZKReconnect(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		mustCreate(t, c, p+"/data", []byte("a"), zk.FlagPersistent)
		mustCreate(t, c, p+"/quiet", []byte("a"), zk.FlagPersistent)

		d := &gatedDialer{release: make(chan struct{})}
		w, events := s.Connect(t, zk.WithDialer(d.dial))
		sid := w.SessionID()
		mustCreate(t, w, p+"/mine", nil, zk.FlagEphemeral)
		_, _, dataCh, err := w.GetW(p + "/data")
		noErr(t, err, "getW")
		_, _, existCh, err := w.ExistsW(p + "/born")
		noErr(t, err, "existsW")
		_, _, quietCh, err := w.GetW(p + "/quiet")
		noErr(t, err, "getW quiet")
		_, _, childCh, err := w.ChildrenW(p)
		noErr(t, err, "childrenW")

		noErr(t, d.last().Close(), "drop go-zk's connection")
		waitState(t, events, zk.StateDisconnected)
		_, err = c.Set(p+"/data", []byte("b"), -1)
		noErr(t, err, "set while disconnected")
		// Creating p/born also changes p's children: the child watch fires.
		mustCreate(t, c, p+"/born", nil, zk.FlagPersistent)
		close(d.release)
		waitState(t, events, zk.StateHasSession)
		eq(t, w.SessionID(), sid, "session id after reconnect")

		wantEvent(t, dataCh, zk.EventNodeDataChanged, p+"/data")
		wantEvent(t, existCh, zk.EventNodeCreated, p+"/born")
		wantEvent(t, childCh, zk.EventNodeChildrenChanged, p)
		// The untouched watch was re-registered and fires later.
		_, err = c.Set(p+"/quiet", []byte("b"), -1)
		noErr(t, err, "set quiet")
		wantEvent(t, quietCh, zk.EventNodeDataChanged, p+"/quiet")
		st := mustStat(t, c, p+"/mine")
		eq(t, st.EphemeralOwner, sid, "ephemeral kept across the reconnect")
	})
}

// waitState waits for a session event with the given state.
func waitState(t *testing.T, events <-chan zk.Event, state zk.State) {
	t.Helper()
	deadline := time.After(eventTimeout)
	for {
		select {
		case e, ok := <-events:
			isTrue(t, ok, "event channel open")
			if e.Type == zk.EventSession && e.State == state {
				return
			}
		case <-deadline:
			t.Fatalf("no %v session event within %v", state, eventTimeout)
		}
	}
}
