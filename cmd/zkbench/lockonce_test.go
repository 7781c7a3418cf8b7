package main

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// scriptedLock answers lockOnce's calls from a script: Children returns
// the next of children, GetW of a name in gone fails with ErrNoNode, and
// of any other name returns a watch that has fired.
type scriptedLock struct {
	t        *testing.T
	me       string
	children [][]string
	gone     map[string]bool
	deleted  []string
}

func (s *scriptedLock) Create(path string, _ []byte, _ int32, _ []zk.ACL) (string, error) {
	return path[:len(path)-len("lock-")] + s.me, nil
}

func (s *scriptedLock) Children(string) ([]string, *zk.Stat, error) {
	if len(s.children) == 0 {
		s.t.Fatal("lockOnce listed the lock more often than scripted")
	}
	kids := s.children[0]
	s.children = s.children[1:]
	return kids, &zk.Stat{}, nil
}

func (s *scriptedLock) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if s.gone[strings.TrimPrefix(path, "/l/")] {
		return nil, nil, nil, zk.ErrNoNode
	}
	ev := make(chan zk.Event, 1)
	ev <- zk.Event{Type: zk.EventNodeDeleted, Path: path}
	return nil, &zk.Stat{}, ev, nil
}

func (s *scriptedLock) Delete(path string, _ int32) error {
	s.deleted = append(s.deleted, path)
	return nil
}

// TestLockOnceRecordsItsOwnEvent: an acquisition counts as a hand-off's
// (waited, with its event's time) only if the event it waited for last
// preceded it: when the next predecessor is gone by the time lockOnce
// watches it, the earlier event was another node's release, and the
// acquisition did not wait for the holder's.
func TestLockOnceRecordsItsOwnEvent(t *testing.T) {
	const n1, n2, me = "lock-0000000001", "lock-0000000002", "lock-0000000003"
	tests := []struct {
		name     string
		children [][]string
		gone     map[string]bool
		waited   bool
	}{
		{"first at once", [][]string{{me}}, nil, false},
		{"waited for its predecessor", [][]string{{n2, me}, {me}}, nil, true},
		{"event, then the next predecessor already gone",
			[][]string{{n1, n2, me}, {n1, me}, {me}}, map[string]bool{n1: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &scriptedLock{t: t, me: me, children: tc.children, gone: tc.gone}
			var lt lockTimes
			if err := lockOnce(c, "/l", make(chan struct{}), &lt); err != nil {
				t.Fatalf("lockOnce: %v", err)
			}
			if len(c.children) != 0 {
				t.Fatalf("lockOnce acquired with %d listings left in the script", len(c.children))
			}
			if lt.acquired.IsZero() || len(c.deleted) != 1 || c.deleted[0] != "/l/"+me {
				t.Fatalf("acquired %v, deleted %v: want acquired and /l/%s released", lt.acquired, c.deleted, me)
			}
			if lt.waited != tc.waited {
				t.Fatalf("waited = %v, want %v", lt.waited, tc.waited)
			}
			if lt.waited && lt.event.After(lt.acquired) {
				t.Fatalf("event %v after the acquisition %v", lt.event, lt.acquired)
			}
		})
	}
}
