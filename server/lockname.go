package server

import (
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/znode"
)

// Lock node names and who holds a lock: the knowledge the lock view
// (locks.go) and the lock-delay's apply (lockDelayKeeps) share, so that
// the nodes an expiry keeps are the holders the view shows.
//
// Recognised names. Every lock recipe creates one ephemeral sequential
// child per contender, named <prefix><10-digit sequence>; the prefix says
// the recipe and mode:
//
//	prefix                 recipe              mode
//	_c_<uuid>-lock-        curator             exclusive (Curator InterProcessMutex, protected; go-zookeeper's zk.Lock)
//	lock-, <guid>-lock-    lock                exclusive (unprotected Curator, the ZooKeeper docs' recipe)
//	x-<sessionid>-         zookeeper-recipe    exclusive (zookeeper-recipes-lock WriteLock)
//	<uuid>__lock__         kazoo               exclusive (kazoo Lock and WriteLock)
//	<uuid>__rlock__        kazoo               read      (kazoo ReadLock)
//	[_c_<uuid>-]__WRIT__   curator             write     (Curator InterProcessReadWriteLock)
//	[_c_<uuid>-]__READ__   curator             read      (Curator InterProcessReadWriteLock)
//
// Who holds (lockQueue.holds). In a directory the contenders are ordered by
// sequence number, then name (two contenders share a sequence number only
// if a client named a node like a sequential one itself). An exclusive or
// write contender holds the lock if no contender precedes it; a reader holds
// it if no exclusive or write contender precedes it (readers share). The
// others wait, in order. This is what the recipes do: kazoo's ReadLock and
// Curator's read lock wait only for writers, every other contender for
// everything before it. (kazoo's plain Lock ignores __rlock__ nodes; a
// directory mixing kazoo's Lock and ReadLock is not a lock of either recipe,
// and its Lock node behind a reader is counted as waiting.)

// lockMode is how a contender takes its lock.
type lockMode string

const (
	modeExclusive lockMode = "exclusive"
	modeRead      lockMode = "read"
	modeWrite     lockMode = "write"
)

// parseLockName recognises a lock contender's node name: its recipe, mode
// and sequence number.
func parseLockName(name string) (recipe string, mode lockMode, seq int64, ok bool) {
	const digits = 10
	if len(name) <= digits {
		return "", "", 0, false
	}
	prefix, suffix := name[:len(name)-digits], name[len(name)-digits:]
	for _, r := range suffix {
		if r < '0' || r > '9' {
			return "", "", 0, false
		}
	}
	seq, err := strconv.ParseInt(suffix, 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	protected := strings.HasPrefix(prefix, "_c_")
	switch {
	case strings.HasSuffix(prefix, "__rlock__"):
		return "kazoo", modeRead, seq, true
	case strings.HasSuffix(prefix, "__lock__"):
		return "kazoo", modeExclusive, seq, true
	case strings.HasSuffix(prefix, "__READ__") && (protected || prefix == "__READ__"):
		return "curator", modeRead, seq, true
	case strings.HasSuffix(prefix, "__WRIT__") && (protected || prefix == "__WRIT__"):
		return "curator", modeWrite, seq, true
	case strings.HasSuffix(prefix, "lock-") && protected:
		return "curator", modeExclusive, seq, true
	case strings.HasSuffix(prefix, "lock-"):
		return "lock", modeExclusive, seq, true
	case isRecipeWriteLockPrefix(prefix):
		return "zookeeper-recipe", modeExclusive, seq, true
	}
	return "", "", 0, false
}

// isRecipeWriteLockPrefix matches "x-<session id in decimal>-".
func isRecipeWriteLockPrefix(p string) bool {
	if !strings.HasPrefix(p, "x-") || !strings.HasSuffix(p, "-") || len(p) < 4 {
		return false
	}
	_, err := strconv.ParseInt(p[2:len(p)-1], 10, 64)
	return err == nil
}

// lockRank is a contender's place in its directory's queue.
type lockRank struct {
	seq  int64
	name string
}

func (a lockRank) less(b lockRank) bool {
	return a.seq < b.seq || (a.seq == b.seq && a.name < b.name)
}

// lockQueue summarises one directory's contenders for the holding rule:
// the first of all and the first exclusive or write contender.
type lockQueue struct {
	first, firstWriter lockRank
	any, anyWriter     bool
}

// add counts one contender; the order of the calls does not matter.
func (q *lockQueue) add(mode lockMode, r lockRank) {
	if !q.any || r.less(q.first) {
		q.first, q.any = r, true
	}
	if mode != modeRead && (!q.anyWriter || r.less(q.firstWriter)) {
		q.firstWriter, q.anyWriter = r, true
	}
}

// holds reports whether a contender of the queue holds the lock.
func (q *lockQueue) holds(mode lockMode, r lockRank) bool {
	if mode == modeRead {
		return !q.anyWriter || r.less(q.firstWriter)
	}
	return q.any && r == q.first
}

// lockDelayKeeps decides which ephemerals of an expiring session a
// lock-delay keeps: of candidates (the session's ephemerals under the
// lock-delay paths), a node named like a lock contender is kept only if it
// holds its lock in tree as it is before anything is removed; a waiter goes
// at once, as in ZooKeeper, so that the queue behind it moves and no client
// can adopt a dead waiter's node and later hold it while the deadline makes
// another holder. A node of any other name is kept (it cannot be told from
// a holder: a lock taken by creating a fixed name, a lease, a semaphore's
// node). Siblings count by name only, ephemeral or not, as the recipes see
// them. It depends only on tree and candidates, never on configuration:
// apply calls it, and the result does not depend on the order EachChild
// gives. Cost: one pass over the children of each directory that holds a
// candidate lock node.
func lockDelayKeeps(tree *znode.Tree, candidates []string) map[string]bool {
	keep := make(map[string]bool, len(candidates))
	queues := map[string]*lockQueue{}
	for _, p := range candidates {
		slash := strings.LastIndexByte(p, '/')
		name := p[slash+1:]
		_, mode, seq, ok := parseLockName(name)
		if !ok {
			keep[p] = true
			continue
		}
		dir := p[:slash]
		if dir == "" {
			dir = "/"
		}
		q, ok := queues[dir]
		if !ok {
			q = &lockQueue{}
			tree.EachChild(dir, func(c string) {
				if _, m, s, ok := parseLockName(c); ok {
					q.add(m, lockRank{s, c})
				}
			})
			queues[dir] = q
		}
		if q.holds(mode, lockRank{seq, name}) {
			keep[p] = true
		}
	}
	return keep
}
