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

// watcher is what a watch notifies: a client connection.
type watcher interface {
	notify(frame []byte, zxid int64)
}

// watchTable is one of ZooKeeper's two watch tables (data and child): for each
// path, the watching connections and their mode.
type watchTable struct {
	byPath    map[string]map[watcher]watchMode
	recursive int // number of recursive entries; ancestors are searched only when > 0
}

func newWatchTable() watchTable {
	return watchTable{byPath: map[string]map[watcher]watchMode{}}
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
type watchManager struct {
	mu    sync.Mutex
	data  watchTable // data and exist watches, and persistent/recursive ones
	child watchTable // child watches, and persistent (not recursive) ones
}

func newWatchManager() *watchManager {
	return &watchManager{data: newWatchTable(), child: newWatchTable()}
}

func (m *watchManager) addData(w watcher, path string) {
	m.mu.Lock()
	m.data.add(w, path, watchStandard)
	m.mu.Unlock()
}

func (m *watchManager) addChild(w watcher, path string) {
	m.mu.Lock()
	m.child.add(w, path, watchStandard)
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
	m.data.add(w, path, mode)
	m.child.add(w, path, mode)
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

// removeWatcher drops every watch of a closed connection.
func (m *watchManager) removeWatcher(w watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range []*watchTable{&m.data, &m.child} {
		for p, ws := range t.byPath {
			if mode, ok := ws[w]; ok {
				if mode == watchRecursive {
					t.recursive--
				}
				delete(ws, w)
				if len(ws) == 0 {
					delete(t.byPath, p)
				}
			}
		}
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
