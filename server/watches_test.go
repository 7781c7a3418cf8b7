package server

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// recorder is a watcher that decodes the notifications it gets.
type recorder struct {
	watchIndex
	mu     sync.Mutex
	events []jute.WatcherEvent
}

func (r *recorder) notify(frame []byte, _ int64) {
	d := jute.NewDecoder(frame[4:], 0)
	var hdr jute.ReplyHeader
	var ev jute.WatcherEvent
	_ = d.ReadRecord(&hdr)
	_ = d.ReadRecord(&ev)
	if hdr.Xid != jute.XidNotification || hdr.Zxid != -1 || ev.State != jute.StateSyncConnected {
		panic("bad notification frame")
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) take() []jute.WatcherEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

func ev(typ int32, path string) jute.WatcherEvent {
	return jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path}
}

func TestWatchFiring(t *testing.T) {
	const (
		created  = jute.EventNodeCreated
		deleted  = jute.EventNodeDeleted
		changed  = jute.EventNodeDataChanged
		children = jute.EventNodeChildrenChanged
	)
	tests := []struct {
		name   string
		setup  func(m *watchManager, w watcher)
		events []znode.Event
		want   []jute.WatcherEvent
	}{
		{"data watch fires once on change", func(m *watchManager, w watcher) { m.addData(w, "/a") },
			[]znode.Event{{Type: changed, Path: "/a"}, {Type: changed, Path: "/a"}},
			[]jute.WatcherEvent{ev(changed, "/a")}},
		{"exist watch on missing node fires on create", func(m *watchManager, w watcher) { m.addData(w, "/a") },
			[]znode.Event{{Type: created, Path: "/a"}, {Type: children, Path: "/"}},
			[]jute.WatcherEvent{ev(created, "/a")}},
		{"child watch fires on children change of its path only", func(m *watchManager, w watcher) { m.addChild(w, "/a") },
			[]znode.Event{{Type: changed, Path: "/a"}, {Type: children, Path: "/a"}},
			[]jute.WatcherEvent{ev(children, "/a")}},
		{"delete reaches a connection once even with data and child watches", func(m *watchManager, w watcher) {
			m.addData(w, "/a")
			m.addChild(w, "/a")
		}, []znode.Event{{Type: deleted, Path: "/a"}, {Type: deleted, Path: "/a"}},
			[]jute.WatcherEvent{ev(deleted, "/a")}},
		{"persistent watch stays and sees its children change", func(m *watchManager, w watcher) { m.addPersistent(w, "/a", false) },
			[]znode.Event{{Type: changed, Path: "/a"}, {Type: children, Path: "/a"}, {Type: changed, Path: "/a"}, {Type: changed, Path: "/a/b"}},
			[]jute.WatcherEvent{ev(changed, "/a"), ev(children, "/a"), ev(changed, "/a")}},
		{"recursive watch sees descendants but never children-changed", func(m *watchManager, w watcher) { m.addPersistent(w, "/a", true) },
			[]znode.Event{{Type: created, Path: "/a/b/c"}, {Type: children, Path: "/a/b"}, {Type: changed, Path: "/a"}, {Type: deleted, Path: "/a/b/c"}, {Type: changed, Path: "/ab"}},
			[]jute.WatcherEvent{ev(created, "/a/b/c"), ev(changed, "/a"), ev(deleted, "/a/b/c")}},
		{"standard registration does not downgrade a persistent watch", func(m *watchManager, w watcher) {
			m.addPersistent(w, "/a", false)
			m.addData(w, "/a")
		}, []znode.Event{{Type: changed, Path: "/a"}, {Type: changed, Path: "/a"}},
			[]jute.WatcherEvent{ev(changed, "/a"), ev(changed, "/a")}},
		{"root recursive watch sees everything", func(m *watchManager, w watcher) { m.addPersistent(w, "/", true) },
			[]znode.Event{{Type: created, Path: "/x"}, {Type: children, Path: "/"}},
			[]jute.WatcherEvent{ev(created, "/x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newWatchManager()
			r := &recorder{}
			tt.setup(m, r)
			for _, e := range tt.events {
				m.trigger([]znode.Event{e}, 1)
			}
			require.Equal(t, tt.want, r.take())
		})
	}
}

func TestWatchCheckAndRemove(t *testing.T) {
	m := newWatchManager()
	r, other := &recorder{}, &recorder{}
	m.addData(r, "/a")
	m.addChild(r, "/b")
	require.True(t, m.check(r, "/a", jute.WatcherTypeData, false))
	require.False(t, m.check(r, "/a", jute.WatcherTypeChildren, false))
	require.False(t, m.check(other, "/a", jute.WatcherTypeAny, false))
	require.True(t, m.check(r, "/b", jute.WatcherTypeAny, true))
	require.False(t, m.check(r, "/b", jute.WatcherTypeAny, false), "removed")

	m.removeWatcher(r)
	m.trigger([]znode.Event{{Type: jute.EventNodeDataChanged, Path: "/a"}}, 1)
	require.Empty(t, r.take())
	require.Equal(t, 0, m.summary().Total)
}

// TestRemoveWatcherRetires checks that removeWatcher drops only the
// watcher's own entries, found through its own index, and that a retired
// watcher can register nothing again, whatever the kind of watch.
func TestRemoveWatcherRetires(t *testing.T) {
	register := []struct {
		name string
		add  func(m *watchManager, w watcher)
	}{
		{"data", func(m *watchManager, w watcher) { m.addData(w, "/a") }},
		{"child", func(m *watchManager, w watcher) { m.addChild(w, "/a") }},
		{"persistent", func(m *watchManager, w watcher) { m.addPersistent(w, "/a", false) }},
		{"recursive", func(m *watchManager, w watcher) { m.addPersistent(w, "/", true) }},
	}
	for _, tt := range register {
		t.Run(tt.name, func(t *testing.T) {
			m := newWatchManager()
			gone, other := &recorder{}, &recorder{}
			m.addData(gone, "/x")
			m.addPersistent(gone, "/y", true)
			m.addChild(other, "/x")
			m.addPersistent(other, "/z", true)
			m.removeWatcher(gone)
			require.Empty(t, gone.paths[slotData])
			require.Empty(t, gone.paths[slotChild])

			tt.add(m, gone)
			sum := m.summary()
			require.Equal(t, 2, sum.Total, "only the other watcher's watches remain")
			require.Empty(t, sum.ByWatcher[gone])
			require.Equal(t, 1, m.data.recursive)
			require.Equal(t, 1, m.child.recursive)
			m.trigger([]znode.Event{{Type: jute.EventNodeCreated, Path: "/a"}}, 1)
			require.Empty(t, gone.take())
		})
	}
}

// TestWatchIndexFollowsTables checks each watcher's own index against the
// tables after registrations, a one-shot firing and explicit removals.
func TestWatchIndexFollowsTables(t *testing.T) {
	m := newWatchManager()
	r := &recorder{}
	m.addData(r, "/a")
	m.addChild(r, "/a")
	m.addPersistent(r, "/p", false)
	m.addData(r, "/b")
	require.Len(t, r.paths[slotData], 3)
	require.Len(t, r.paths[slotChild], 2)

	m.trigger([]znode.Event{{Type: jute.EventNodeDataChanged, Path: "/a"}}, 1) // fires the one-shot data watch
	require.NotContains(t, r.paths[slotData], "/a")
	require.Contains(t, r.paths[slotChild], "/a")
	require.True(t, m.check(r, "/b", jute.WatcherTypeData, true))
	require.NotContains(t, r.paths[slotData], "/b")
	require.Equal(t, map[string]struct{}{"/p": {}}, r.paths[slotData])

	m.removeWatcher(r)
	require.Zero(t, m.summary().Total)
	require.Empty(t, m.data.byPath)
	require.Empty(t, m.child.byPath)
}
