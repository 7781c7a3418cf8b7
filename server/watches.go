package server

import (
	"sort"
	"strings"
	"sync"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// watchMode is how a (connection, path) watch behaves when it fires.
type watchMode uint8

const (
	watchStandard   watchMode = iota // one-shot: removed when it fires
	watchPersistent                  // stays; the exact path only
	watchRecursive                   // stays; the path and every descendant, never NodeChildrenChanged
)

// watcher is what a watch notifies: a client connection. ownWatches returns
// the watcher's own bookkeeping, which only the watchManager touches, under
// its lock.
type watcher interface {
	notify(frame []byte, zxid int64)
	ownWatches() *watchIndex
}

// watchIndex is the per-watcher side of the watch tables: the paths the
// watcher holds in each table (so dropping a connection costs its own
// watches, not every watched path), and whether it was retired. A retired
// watcher's connection is gone: no watch can be registered for it again.
// Guarded by watchManager.mu.
type watchIndex struct {
	retired bool
	paths   [2]map[string]struct{} // by watchTable.slot
}

// ownWatches implements watcher for types that embed a watchIndex.
func (x *watchIndex) ownWatches() *watchIndex { return x }

const (
	slotData  = 0
	slotChild = 1
)

// watchTable is one of ZooKeeper's two watch tables (data and child): for each
// path, the watching connections and their mode. Every entry (w, path) is
// also in w's watchIndex under the table's slot.
type watchTable struct {
	slot      int
	byPath    map[string]map[watcher]watchMode
	recursive int // number of recursive entries; ancestors are searched only when > 0
}

func newWatchTable(slot int) watchTable {
	return watchTable{slot: slot, byPath: map[string]map[watcher]watchMode{}}
}

// indexAdd and indexDel keep w's watchIndex in step with the table.
func (t *watchTable) indexAdd(w watcher, path string) {
	x := w.ownWatches()
	if x.paths[t.slot] == nil {
		x.paths[t.slot] = map[string]struct{}{}
	}
	x.paths[t.slot][path] = struct{}{}
}

func (t *watchTable) indexDel(w watcher, path string) {
	delete(w.ownWatches().paths[t.slot], path)
}

func (t *watchTable) add(w watcher, path string, mode watchMode) {
	m := t.byPath[path]
	if m == nil {
		m = map[watcher]watchMode{}
		t.byPath[path] = m
	}
	old, had := m[w]
	if had && old != watchStandard && mode == watchStandard {
		return // a one-shot registration never downgrades a persistent watch
	}
	if had && old == watchRecursive {
		t.recursive--
	}
	if mode == watchRecursive {
		t.recursive++
	}
	m[w] = mode
	if !had {
		t.indexAdd(w, path)
	}
}

func (t *watchTable) remove(w watcher, path string) bool {
	m := t.byPath[path]
	mode, ok := m[w]
	if !ok {
		return false
	}
	if mode == watchRecursive {
		t.recursive--
	}
	delete(m, w)
	if len(m) == 0 {
		delete(t.byPath, path)
	}
	t.indexDel(w, path)
	return true
}

func (t *watchTable) has(w watcher, path string) bool {
	_, ok := t.byPath[path][w]
	return ok
}

// trigger adds the watchers an event of type typ on path reaches to the set
// out, removing the one-shot ones it fires, as ZooKeeper's WatchManager does:
// every mode matches on the path itself; only recursive watches match on
// ancestors, and they never take NodeChildrenChanged.
func (t *watchTable) trigger(path string, typ int32, out map[watcher]struct{}) {
	p := path
	atParent := false
	for {
		if m := t.byPath[p]; m != nil {
			for w, mode := range m {
				switch {
				case mode == watchRecursive:
					if typ != jute.EventNodeChildrenChanged {
						out[w] = struct{}{}
					}
				case !atParent:
					out[w] = struct{}{}
					if mode == watchStandard {
						delete(m, w)
						t.indexDel(w, p)
					}
				}
			}
			if len(m) == 0 {
				delete(t.byPath, p)
			}
		}
		if t.recursive == 0 || p == "/" {
			return
		}
		p = parentPath(p)
		atParent = true
	}
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// watchManager holds every watch of this server. Watches belong to
// connections, are not replicated, and are dropped when the connection
// closes. It has its own lock: reads register watches under the state
// machine's read lock, concurrently with each other.
//
// Invariant: no watch outlives its connection. removeWatcher retires the
// watcher under the lock, and every registration checks that flag under the
// same lock, so a read that finishes after its connection was dropped
// registers nothing.
type watchManager struct {
	mu    sync.Mutex
	data  watchTable // data and exist watches, and persistent/recursive ones
	child watchTable // child watches, and persistent (not recursive) ones
}

func newWatchManager() *watchManager {
	return &watchManager{data: newWatchTable(slotData), child: newWatchTable(slotChild)}
}

func (m *watchManager) addData(w watcher, path string) {
	m.mu.Lock()
	if !w.ownWatches().retired {
		m.data.add(w, path, watchStandard)
	}
	m.mu.Unlock()
}

func (m *watchManager) addChild(w watcher, path string) {
	m.mu.Lock()
	if !w.ownWatches().retired {
		m.child.add(w, path, watchStandard)
	}
	m.mu.Unlock()
}

// addPersistent registers addWatch's modes. As in ZooKeeper 3.8.0, both
// modes go in both tables, so checkWatches finds them with either type;
// recursive entries never take NodeChildrenChanged.
func (m *watchManager) addPersistent(w watcher, path string, recursive bool) {
	mode := watchPersistent
	if recursive {
		mode = watchRecursive
	}
	m.mu.Lock()
	if !w.ownWatches().retired {
		m.data.add(w, path, mode)
		m.child.add(w, path, mode)
	}
	m.mu.Unlock()
}

// notificationFrame encodes one watch event as a framed reply with xid -1.
func notificationFrame(typ int32, path string) []byte {
	enc := jute.NewEncoder(make([]byte, 0, 32+len(path)))
	start := enc.StartFrame()
	enc.WriteRecord(&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1, Err: 0})
	enc.WriteRecord(&jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path})
	enc.EndFrame(start)
	return enc.Bytes()
}

// trigger delivers the events of one applied entry (zxid), in order. Each
// event reaches a connection at most once, whatever it watched.
func (m *watchManager) trigger(events []znode.Event, zxid int64) {
	if len(events) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range events {
		targets := map[watcher]struct{}{}
		switch ev.Type {
		case jute.EventNodeCreated, jute.EventNodeDataChanged:
			m.data.trigger(ev.Path, ev.Type, targets)
		case jute.EventNodeDeleted:
			m.data.trigger(ev.Path, ev.Type, targets)
			m.child.trigger(ev.Path, ev.Type, targets) // targets is a set: one event per connection
		case jute.EventNodeChildrenChanged:
			m.child.trigger(ev.Path, ev.Type, targets)
		}
		if len(targets) == 0 {
			continue
		}
		frame := notificationFrame(ev.Type, ev.Path)
		for w := range targets {
			w.notify(frame, zxid)
		}
	}
}

// check reports whether w holds a watch of the given type (jute.WatcherType*)
// on path; remove also removes it. Both return false when nothing matched.
func (m *watchManager) check(w watcher, path string, typ int32, remove bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	found := false
	if typ == jute.WatcherTypeData || typ == jute.WatcherTypeAny {
		if remove {
			found = m.data.remove(w, path) || found
		} else {
			found = m.data.has(w, path) || found
		}
	}
	if typ == jute.WatcherTypeChildren || typ == jute.WatcherTypeAny {
		if remove {
			found = m.child.remove(w, path) || found
		} else {
			found = m.child.has(w, path) || found
		}
	}
	return found
}

// removeWatcher drops every watch of a closed connection and retires it, so
// a registration that comes later (a read that was still running) is
// refused. Its cost is the connection's own watches.
func (m *watchManager) removeWatcher(w watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	x := w.ownWatches()
	x.retired = true
	for _, t := range []*watchTable{&m.data, &m.child} {
		for p := range x.paths[t.slot] {
			t.remove(w, p)
		}
		x.paths[t.slot] = nil
	}
}

// watchSummary is what wchs/wchc/wchp report.
type watchSummary struct {
	Connections int
	Paths       int
	Total       int
	ByWatcher   map[watcher][]string // sorted paths
	ByPath      map[string][]watcher
}

func (m *watchManager) summary() watchSummary {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := watchSummary{ByWatcher: map[watcher][]string{}, ByPath: map[string][]watcher{}}
	seen := map[string]map[watcher]bool{}
	for _, t := range []*watchTable{&m.data, &m.child} {
		for p, ws := range t.byPath {
			for w := range ws {
				if seen[p] == nil {
					seen[p] = map[watcher]bool{}
				}
				if seen[p][w] {
					continue
				}
				seen[p][w] = true
				s.Total++
				s.ByWatcher[w] = append(s.ByWatcher[w], p)
				s.ByPath[p] = append(s.ByPath[p], w)
			}
		}
	}
	for _, ps := range s.ByWatcher {
		sort.Strings(ps)
	}
	s.Connections, s.Paths = len(s.ByWatcher), len(s.ByPath)
	return s
}
