package znode

import (
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
)

// create applies create, create2, createContainer and createTTL. ttl is -1
// for the opcodes that carry none. The checks run in ZooKeeper 3.8.4's order
// (PrepRequestProcessor.pRequest2TxnCreate); nothing changes before all pass.
func (t *Tree) create(ctx *TxnContext, op int32, path string, data []byte, acl []jute.ACL, flags int32, ttl int64, ev []Event) (string, jute.Stat, []Event, int32) {
	// CreateMode.fromFlag.
	if flags < jute.FlagPersistent || flags > jute.FlagPersistentSequentialWithTTL {
		return "", jute.Stat{}, ev, jute.ErrBadArguments
	}
	ephemeral := flags == jute.FlagEphemeral || flags == jute.FlagEphemeralSequential
	sequential := flags == jute.FlagPersistentSequential || flags == jute.FlagEphemeralSequential ||
		flags == jute.FlagPersistentSequentialWithTTL
	isTTL := flags == jute.FlagPersistentWithTTL || flags == jute.FlagPersistentSequentialWithTTL
	// validateCreateRequest: extended types, then EphemeralType.validateTTL.
	if isTTL && !t.options(ctx).ExtendedTypesEnabled {
		return "", jute.Stat{}, ev, jute.ErrUnimplemented
	}
	if isTTL {
		if ttl <= 0 || ttl > maxTTL {
			return "", jute.Stat{}, ev, jute.ErrBadArguments
		}
	} else if ttl >= 0 || op == jute.OpCreateTTL {
		return "", jute.Stat{}, ev, jute.ErrBadArguments
	}
	if ephemeral && ctx.SessionID == 0 {
		return "", jute.Stat{}, ev, jute.ErrBadArguments
	}
	// validatePathForCreate.
	i := lastSlash(path)
	if i < 0 || hasNUL(path) {
		return "", jute.Stat{}, ev, jute.ErrBadArguments
	}
	parentPath := parentOf(path, i)
	stored, ok := fixupACL(acl, ctx.Auth, t.open.entries, t.options(ctx))
	if !ok {
		return "", jute.Stat{}, ev, jute.ErrInvalidACL
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return "", jute.Stat{}, ev, jute.ErrNoNode
	}
	if !CheckACL(parent.acl.list(), jute.PermCreate, ctx.Auth) {
		return "", jute.Stat{}, ev, jute.ErrNoAuth
	}
	if sequential {
		path = sequentialName(path, parent.creates)
	}
	if ValidatePath(path) != nil {
		return "", jute.Stat{}, ev, jute.ErrBadArguments
	}
	if t.nodes.get(path) != nil {
		return "", jute.Stat{}, ev, jute.ErrNodeExists
	}
	if parent.kind == kindEphemeral {
		return "", jute.Stat{}, ev, jute.ErrNoChildrenForEphemerals
	}

	n := newNode(path, data, meta{
		acl:   t.findACL(stored),
		czxid: ctx.Zxid, mzxid: ctx.Zxid, pzxid: ctx.Zxid,
		ctime: ctx.Time, mtime: ctx.Time,
	})
	switch {
	case op == jute.OpCreateContainer:
		n.kind = kindContainer
	case op == jute.OpCreateTTL:
		n.kind, n.ext = kindTTL, ttl
	case ephemeral:
		n.kind, n.ext = kindEphemeral, ctx.SessionID
	}
	t.save(parent)
	parent.creates++
	parent.pzxid = ctx.Zxid
	t.insert(n, parent)
	st := n.stat() // as created: a new stats node shows the client's data length
	t.flushQuotas()
	ev = append(ev, Event{Type: jute.EventNodeCreated, Path: path}, Event{Type: jute.EventNodeChildrenChanged, Path: parentPath})
	return path, st, ev, 0
}

// delete applies delete in ZooKeeper's order: path and special paths (-8),
// parent exists (-101), DELETE on the parent (-102), node exists (-101),
// version (-103), children (-111).
func (t *Tree) delete(ctx *TxnContext, path string, version int32, ev []Event) ([]Event, int32) {
	i := lastSlash(path)
	if i < 0 || hasNUL(path) || isSpecialPath(path) {
		return ev, jute.ErrBadArguments
	}
	parent := t.lookup(parentOf(path, i))
	if parent == nil {
		return ev, jute.ErrNoNode
	}
	if !CheckACL(parent.acl.list(), jute.PermDelete, ctx.Auth) {
		return ev, jute.ErrNoAuth
	}
	n := t.nodes.get(path)
	if n == nil {
		return ev, jute.ErrNoNode
	}
	if version != -1 && version != n.version {
		return ev, jute.ErrBadVersion
	}
	if n.children.len() > 0 {
		return ev, jute.ErrNotEmpty
	}
	return t.removeNode(ctx, n, parent, ev), 0
}

// removeNode deletes the childless n (DataTree.deleteNode): the parent's
// pzxid moves to ctx.Zxid only if that is larger; its creation counter stays.
func (t *Tree) removeNode(ctx *TxnContext, n, parent *node, ev []Event) []Event {
	t.save(parent)
	if ctx.Zxid > parent.pzxid {
		parent.pzxid = ctx.Zxid
	}
	t.remove(n, parent)
	t.flushQuotas()
	return append(ev, Event{Type: jute.EventNodeDeleted, Path: n.path()},
		Event{Type: jute.EventNodeChildrenChanged, Path: parent.path()})
}

// setDataOp applies setData: path valid (-8), exists (-101), WRITE (-102),
// version (-103).
func (t *Tree) setDataOp(ctx *TxnContext, path string, data []byte, version int32, ev []Event) (jute.Stat, []Event, int32) {
	if ValidatePath(path) != nil {
		return jute.Stat{}, ev, jute.ErrBadArguments
	}
	n := t.nodes.get(path)
	if n == nil {
		return jute.Stat{}, ev, jute.ErrNoNode
	}
	if !CheckACL(n.acl.list(), jute.PermWrite, ctx.Auth) {
		return jute.Stat{}, ev, jute.ErrNoAuth
	}
	if version != -1 && version != n.version && !mutation.Enabled(mutation.IgnoreSetVersion) {
		return jute.Stat{}, ev, jute.ErrBadVersion
	}
	t.save(n)
	t.setData(n, data)
	n.version++
	n.mzxid = ctx.Zxid
	n.mtime = ctx.Time
	st := n.stat()
	t.markStats(path) // a client's write to a stats node is replaced
	t.flushQuotas()
	return st, append(ev, Event{Type: jute.EventNodeDataChanged, Path: path}), 0
}

// setACL applies setACL: path valid (-8), ACL valid (-114), exists (-101),
// ADMIN (-102), aversion (-103). It fires no events.
func (t *Tree) setACL(ctx *TxnContext, path string, acl []jute.ACL, version int32) (jute.Stat, int32) {
	if ValidatePath(path) != nil {
		return jute.Stat{}, jute.ErrBadArguments
	}
	stored, ok := fixupACL(acl, ctx.Auth, t.open.entries, t.options(ctx))
	if !ok {
		return jute.Stat{}, jute.ErrInvalidACL
	}
	n := t.nodes.get(path)
	if n == nil {
		return jute.Stat{}, jute.ErrNoNode
	}
	if !CheckACL(n.acl.list(), jute.PermAdmin, ctx.Auth) {
		return jute.Stat{}, jute.ErrNoAuth
	}
	if version != -1 && version != n.aversion {
		return jute.Stat{}, jute.ErrBadVersion
	}
	t.save(n)
	old := n.acl
	n.acl = t.acquire(t.findACL(stored))
	t.release(old)
	n.aversion++
	return n.stat(), 0
}

// check applies a multi's check op: path valid (-8), exists (-101), READ
// (-102), version (-103).
func (t *Tree) check(ctx *TxnContext, path string, version int32) int32 {
	if ValidatePath(path) != nil {
		return jute.ErrBadArguments
	}
	n := t.nodes.get(path)
	if n == nil {
		return jute.ErrNoNode
	}
	if !CheckACL(n.acl.list(), jute.PermRead, ctx.Auth) {
		return jute.ErrNoAuth
	}
	if version != -1 && version != n.version {
		return jute.ErrBadVersion
	}
	return 0
}

// deleteExpired applies OpDeleteContainer / OpDeleteTTL, re-checking the
// condition the leader saw: path (-8), exists (-101), node of the right kind
// (-8), no children (-111), still expired at ctx.Time (-8): a container must
// have had a child, a TTL node must be unmodified for longer than its ttl.
func (t *Tree) deleteExpired(ctx *TxnContext, op int32, path string, ev []Event) ([]Event, int32) {
	i := lastSlash(path)
	if i < 0 || hasNUL(path) || isSpecialPath(path) {
		return ev, jute.ErrBadArguments
	}
	n := t.nodes.get(path)
	if n == nil {
		return ev, jute.ErrNoNode
	}
	want := kindContainer
	if op == OpDeleteTTL {
		want = kindTTL
	}
	if n.kind != want {
		return ev, jute.ErrBadArguments
	}
	if n.children.len() > 0 {
		return ev, jute.ErrNotEmpty
	}
	if !expired(n, ctx.Time) {
		return ev, jute.ErrBadArguments
	}
	return t.removeNode(ctx, n, t.lookup(parentOf(path, i)), ev), 0
}

// DeleteEphemerals removes every ephemeral owned by session, in path order,
// as one txn at ctx.Zxid (a closeSession), and returns the events.
func (t *Tree) DeleteEphemerals(ctx TxnContext, session int64) []Event {
	paths := t.Ephemerals(session, "")
	var ev []Event
	for _, p := range paths {
		n := t.nodes.get(p)
		ev = t.removeNode(&ctx, n, t.lookup(parentOf(p, lastSlash(p))), ev)
	}
	if checkEveryWrite {
		t.mustCheck()
	}
	return ev
}

// DeleteEphemeralsKeeping is DeleteEphemerals for an expiry with
// lock-delay: it removes, in path order, every ephemeral owned by session
// for which keep returns false, and returns the events and how many it
// kept. keep is called for every ephemeral of the session before anything
// is removed, so it sees the tree as it was. The kept nodes stay as they
// are, owner included, until DeleteEphemerals removes them.
func (t *Tree) DeleteEphemeralsKeeping(ctx TxnContext, session int64, keep func(path string) bool) (ev []Event, kept int) {
	paths := t.Ephemerals(session, "")
	remove := paths[:0:0]
	for _, p := range paths {
		if keep(p) {
			kept++
		} else {
			remove = append(remove, p)
		}
	}
	for _, p := range remove {
		ev = t.removeNode(&ctx, t.nodes.get(p), t.lookup(parentOf(p, lastSlash(p))), ev)
	}
	if checkEveryWrite {
		t.mustCheck()
	}
	return ev, kept
}

// Under reports whether path is prefix or lies below it: "/locks/a" is under
// "/locks" and "/", "/locksmith" is not under "/locks".
func Under(path, prefix string) bool {
	if prefix == rootPath {
		return strings.HasPrefix(path, rootPath)
	}
	return prefix != "" && strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// SetConfig replaces the data of /zookeeper/config with the ensemble's
// dynamic configuration, as a reconfig does in ZooKeeper: mzxid and mtime
// become the txn's, the data version stays -1 (ZooKeeper reports -1 for
// this node in an ensemble). It fires NodeDataChanged, which Curator's
// EnsembleTracker watches. Clients cannot write this node themselves.
func (t *Tree) SetConfig(ctx TxnContext, data []byte) []Event {
	n := t.lookup(configPath)
	t.save(n)
	if data == nil {
		data = []byte{} // the node's data is never nil
	}
	t.setData(n, data)
	n.mzxid, n.mtime, n.version = ctx.Zxid, ctx.Time, -1
	return []Event{{Type: jute.EventNodeDataChanged, Path: configPath}}
}

// sequentialName is ZooKeeper's name of a sequential node: the requested
// path followed by the parent's creation counter as String.format's
// "%010d" writes it (at least ten digits, zero-padded after the sign of a
// counter that wrapped), as fmt.Sprintf("%s%010d", prefix, n) did, in one
// allocation and without fmt's formatting machinery.
func sequentialName(prefix string, n int32) string {
	var digits [11]byte
	width, v := 10, int64(n)
	var b strings.Builder
	b.Grow(len(prefix) + len(digits))
	b.WriteString(prefix)
	if v < 0 {
		b.WriteByte('-')
		width, v = 9, -v
	}
	d := strconv.AppendInt(digits[:0], v, 10)
	for range width - len(d) {
		b.WriteByte('0')
	}
	b.Write(d)
	return b.String()
}
