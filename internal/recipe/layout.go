// Package recipe implements, over go-zookeeper, the node layouts of three
// client recipes so that a Go process takes part in them as a peer: Curator
// 5's InterProcessMutex, kazoo's Lock and Curator's LeaderLatch. It is what
// `zkraft lock` and `zkraft elect` are built on.
//
// Layouts (children of the lock or latch path, all ephemeral-sequential):
//
//	Curator InterProcessMutex  _c_<uuid>-lock-NNNNNNNNNN    (protected mode, 36-char UUID)
//	kazoo Lock                 <32 hex>__lock__NNNNNNNNNN    (also waits for kazoo ReadLock's __rlock__)
//	Curator LeaderLatch        _c_<uuid>-latch-NNNNNNNNNN   (data: the participant id)
//
// Invariants:
//   - Contenders are ordered by the sequence suffix only (compared as the
//     recipes compare it: as a string, which is numeric order for the
//     10-digit non-negative suffixes ZooKeeper writes), never by the full
//     name, whose random prefix would scramble the queue.
//   - A lock contender waits on the contender just before it and, when that
//     one goes, lists the children again: it holds the lock only when no
//     contender with a lower sequence is left. Lock contenders of both lock
//     layouts count, so a lock of either layout never holds while a lower
//     node of the other exists (Curator and kazoo themselves only see their
//     own layout, so a PATH must be shared with one recipe's layout).
//   - A create whose reply is lost to a connection loss is recovered by
//     finding the node by its unique prefix, as Curator's protected mode and
//     kazoo do; a create whose session expired is made again.
//   - Every wait returns when its context ends; a request blocked on a
//     disconnected connection returns when the connection is closed, which
//     is what the owner of the connection does to abandon a wait.
package recipe

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Layout is one recipe's node layout.
type Layout int

// The supported layouts.
const (
	Curator Layout = iota // Curator 5 InterProcessMutex
	Kazoo                 // kazoo Lock
	Latch                 // Curator LeaderLatch
)

// ParseLayout reads a --layout value: "curator" or "kazoo".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "curator":
		return Curator, nil
	case "kazoo":
		return Kazoo, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want curator or kazoo)", s)
}

func (l Layout) String() string {
	switch l {
	case Curator:
		return "curator"
	case Kazoo:
		return "kazoo"
	case Latch:
		return "latch"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// protectedPrefix starts every node Curator creates in protected mode.
const protectedPrefix = "_c_"

// contender matches the name of a contender of each family and captures its
// sequence suffix: kazoo's (?:__lock__)(-?\d{10})$ with Curator's "lock-" added
// for locks, and Curator's "latch-" for latches. The kazoo layout also
// counts kazoo's ReadLock nodes (__rlock__), as kazoo's Lock does
// (_EXCLUDE_NAMES = ["__lock__", "__rlock__"]): a write lock waits for the
// readers ahead of it.
var (
	lockContender      = regexp.MustCompile(`(?:__lock__|lock-)(-?\d{10})$`)
	kazooLockContender = regexp.MustCompile(`(?:__lock__|__rlock__|lock-)(-?\d{10})$`)
	latchContender     = regexp.MustCompile(`latch-(-?\d{10})$`)
)

// NewPrefix returns the name of a new contender node before ZooKeeper
// appends the sequence: a fresh random id and the layout's lock name.
func (l Layout) NewPrefix() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random node id: %w", err)
	}
	switch l {
	case Kazoo:
		return hex.EncodeToString(b[:]) + "__lock__", nil
	case Latch:
		return protectedPrefix + uuid(b) + "-latch-", nil
	default:
		return protectedPrefix + uuid(b) + "-lock-", nil
	}
}

// uuid formats b as a version 4 UUID, as Java's UUID.randomUUID().toString().
func uuid(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Sequence returns the sequence suffix of a contender of l's family, and
// false for a child that is not one.
func (l Layout) Sequence(name string) (string, bool) {
	re := lockContender
	switch l {
	case Latch:
		re = latchContender
	case Kazoo:
		re = kazooLockContender
	}
	m := re.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Contenders returns the children that are contenders of l's family,
// ordered by sequence suffix (the queue: the first holds the lock).
func (l Layout) Contenders(children []string) []string {
	type entry struct{ name, seq string }
	var es []entry
	for _, c := range children {
		if seq, ok := l.Sequence(c); ok {
			es = append(es, entry{c, seq})
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].seq != es[j].seq {
			return es[i].seq < es[j].seq
		}
		return es[i].name < es[j].name
	})
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.name
	}
	return out
}

// Predecessor finds own among children: found is false if it is not there
// (its session expired or someone deleted it); otherwise pred is the
// contender just before it, or "" if own is first (it holds the lock).
func (l Layout) Predecessor(children []string, own string) (pred string, found bool) {
	sorted := l.Contenders(children)
	for i, c := range sorted {
		if c == own {
			if i == 0 {
				return "", true
			}
			return sorted[i-1], true
		}
	}
	return "", false
}

// FindByPrefix returns the child created with prefix (the name before the
// sequence), the recovery of a create whose reply was lost.
func FindByPrefix(children []string, prefix string) (string, bool) {
	for _, c := range children {
		if strings.HasPrefix(c, prefix) {
			return c, true
		}
	}
	return "", false
}
