package server

import (
	"strings"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

type buildFunc = func(it *item) ([]byte, bool)

func isKnownRead(op int32) bool {
	switch op {
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2, jute.OpGetACL,
		jute.OpGetAllChildrenNumber, jute.OpGetEphemerals, jute.OpWhoAmI, jute.OpMultiRead,
		jute.OpCheckWatches, jute.OpRemoveWatches, jute.OpAddWatch, jute.OpSetWatches, jute.OpSetWatches2:
		return true
	}
	return false
}

// decodeRead decodes a read-side request and returns the function that
// answers it when its turn comes, or nil if op is not a read or the body
// does not decode. Reads run on the writer goroutine, after every earlier
// request of the connection was answered, so a read sees this session's
// earlier writes.
func (c *conn) decodeRead(xid, op int32, body []byte) buildFunc {
	ids := *c.authIDs.Load()
	// The reader's decoder, reused: a decoder made per read escaped to the
	// heap (Record.Decode takes it through an interface). Its strings are
	// copies, so the reply built later owns them.
	unmarshal := func(r jute.Record) bool {
		c.readDec.Reset(body, c.srv.cfg.JuteMaxBuffer)
		ok := c.readDec.ReadRecord(r) == nil
		c.readDec.Reset(nil, 0) // keeps nothing of body
		return ok
	}
	switch op {
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		// The closures below capture their request by value (rq, never
		// address-taken): one allocation with the closure instead of the
		// closure and the request.
		var r jute.PathWatchRequest
		if !unmarshal(&r) {
			return nil
		}
		rq := r
		return func(*item) ([]byte, bool) { return c.readNode(xid, op, rq, ids), false }
	case jute.OpGetACL, jute.OpGetAllChildrenNumber, jute.OpGetEphemerals:
		var r jute.PathRequest
		if !unmarshal(&r) {
			return nil
		}
		path := r.Path
		return func(*item) ([]byte, bool) { return c.readPath(xid, op, path, ids), false }
	case jute.OpWhoAmI:
		return func(*item) ([]byte, bool) { return c.whoAmI(xid, ids), false }
	case jute.OpMultiRead:
		var r jute.MultiRequest
		if !unmarshal(&r) {
			return nil
		}
		return func(*item) ([]byte, bool) { return c.multiRead(xid, &r, ids), false }
	case jute.OpCheckWatches, jute.OpRemoveWatches:
		var r jute.WatchesRequest
		if !unmarshal(&r) {
			return nil
		}
		return func(*item) ([]byte, bool) {
			if r.Type < jute.WatcherTypeChildren || r.Type > jute.WatcherTypeAny {
				return c.reply(xid, c.srv.sm.lastZxid.Load(), jute.ErrMarshallingError, nil), false
			}
			code := int32(0)
			if !c.srv.watches.check(c, r.Path, r.Type, op == jute.OpRemoveWatches) {
				code = jute.ErrNoWatcher
			}
			return c.reply(xid, c.srv.sm.lastZxid.Load(), code, nil), false
		}
	case jute.OpAddWatch:
		var r jute.AddWatchRequest
		if !unmarshal(&r) {
			return nil
		}
		return func(*item) ([]byte, bool) {
			if r.Mode != jute.AddWatchModePersistent && r.Mode != jute.AddWatchModePersistentRecursive {
				return c.reply(xid, c.srv.sm.lastZxid.Load(), jute.ErrMarshallingError, nil), false
			}
			c.srv.watches.addPersistent(c, r.Path, r.Mode == jute.AddWatchModePersistentRecursive)
			return c.reply(xid, c.srv.sm.lastZxid.Load(), 0, &jute.ErrorResponse{}), false
		}
	case jute.OpSetWatches:
		var r jute.SetWatches
		if !unmarshal(&r) {
			return nil
		}
		w2 := jute.SetWatches2{RelativeZxid: r.RelativeZxid, DataWatches: r.DataWatches,
			ExistWatches: r.ExistWatches, ChildWatches: r.ChildWatches}
		return func(*item) ([]byte, bool) { return c.setWatches(xid, &w2), false }
	case jute.OpSetWatches2:
		var r jute.SetWatches2
		if !unmarshal(&r) {
			return nil
		}
		return func(*item) ([]byte, bool) { return c.setWatches(xid, &r), false }
	}
	return nil
}

// readNode answers exists, getData, getChildren and getChildren2 (and
// registers their watch: readNode in endpoint.go).
func (c *conn) readNode(xid, op int32, r jute.PathWatchRequest, ids []jute.Id) []byte {
	if c.replyBodies == nil {
		c.replyBodies = new(replyBodies)
	}
	zxid, code, body := readNode(c.srv.sm, c, op, &r, ids, c.replyBodies)
	frame := c.reply(xid, zxid, code, body)
	c.replyBodies.reset() // drop the node's data and children
	return frame
}

func (c *conn) readPath(xid, op int32, path string, ids []jute.Id) []byte {
	sm := c.srv.sm
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	zxid := sm.lastZxid.Load()
	tree := sm.tree
	switch op {
	case jute.OpGetEphemerals:
		eph := tree.Ephemerals(c.sessionID, path)
		if eph == nil {
			eph = []string{}
		}
		return c.reply(xid, zxid, 0, &jute.StringsResponse{Strings: eph})
	case jute.OpGetACL:
		acl, st, ok := tree.GetACL(path)
		if !ok {
			return c.reply(xid, zxid, jute.ErrNoNode, nil)
		}
		admin := znode.CheckACL(acl, jute.PermAdmin, ids)
		if !admin && !znode.CheckACL(acl, jute.PermRead, ids) {
			return c.reply(xid, zxid, jute.ErrNoAuth, nil)
		}
		if !admin {
			acl = maskDigests(acl)
		}
		return c.reply(xid, zxid, 0, &jute.GetACLResponse{ACL: acl, Stat: st})
	default: // getAllChildrenNumber
		exists, allowed := tree.CheckPermission(path, jute.PermRead, ids)
		if !exists {
			return c.reply(xid, zxid, jute.ErrNoNode, nil)
		}
		if !allowed {
			return c.reply(xid, zxid, jute.ErrNoAuth, nil)
		}
		n, _ := tree.CountDescendants(path)
		return c.reply(xid, zxid, 0, &jute.IntResponse{Value: n})
	}
}

// maskDigests hides digest hashes from a caller without ADMIN, as ZooKeeper
// does ("user:x").
func maskDigests(acl []jute.ACL) []jute.ACL {
	out := make([]jute.ACL, len(acl))
	for i, a := range acl {
		out[i] = a
		if a.ID.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID.ID, ":")
			out[i].ID.ID = user + ":x"
		}
	}
	return out
}

func (c *conn) whoAmI(xid int32, ids []jute.Id) []byte {
	infos := make([]jute.ClientInfo, 0, len(ids))
	for _, id := range ids {
		user := id.ID
		if id.Scheme == "digest" {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		infos = append(infos, jute.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return c.reply(xid, c.srv.sm.lastZxid.Load(), 0, &jute.WhoAmIResponse{ClientInfo: infos})
}

// multiRead runs each read on its own: a failing op gives an error result
// and the others still succeed. It sets no watches.
func (c *conn) multiRead(xid int32, r *jute.MultiRequest, ids []jute.Id) []byte {
	sm := c.srv.sm
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	zxid := sm.lastZxid.Load()
	for _, op := range r.Ops {
		if op.Type != jute.OpGetData && op.Type != jute.OpGetChildren {
			return c.reply(xid, zxid, jute.ErrMarshallingError, nil)
		}
	}
	results := make([]jute.MultiResult, 0, len(r.Ops))
	for _, op := range r.Ops {
		exists, allowed := sm.tree.CheckPermission(op.Read.Path, jute.PermRead, ids)
		switch {
		case !exists:
			results = append(results, jute.MultiResult{Type: jute.OpError, Err: jute.ErrNoNode})
		case !allowed:
			results = append(results, jute.MultiResult{Type: jute.OpError, Err: jute.ErrNoAuth})
		case op.Type == jute.OpGetData:
			data, st, _ := sm.tree.GetData(op.Read.Path)
			results = append(results, jute.MultiResult{Type: jute.OpGetData, Data: data, Stat: st})
		default:
			children, _, _ := sm.tree.GetChildren(op.Read.Path)
			if children == nil {
				children = []string{}
			}
			results = append(results, jute.MultiResult{Type: jute.OpGetChildren, Children: children})
		}
	}
	return c.reply(xid, zxid, 0, &jute.MultiResponse{Results: results})
}

// setWatches re-registers a reconnecting client's watches. Events it missed
// since relativeZxid are written before the reply, in the same frame batch.
func (c *conn) setWatches(xid int32, r *jute.SetWatches2) []byte {
	sm := c.srv.sm
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	tree := sm.tree
	rel := r.RelativeZxid
	var events []byte
	fire := func(typ int32, path string) { events = append(events, notificationFrame(typ, path)...) }
	for _, p := range r.DataWatches {
		st, ok := tree.Exists(p)
		switch {
		case !ok:
			fire(jute.EventNodeDeleted, p)
		case st.Mzxid > rel:
			fire(jute.EventNodeDataChanged, p)
		default:
			c.srv.watches.addData(c, p)
		}
	}
	for _, p := range r.ExistWatches {
		if _, ok := tree.Exists(p); ok {
			fire(jute.EventNodeCreated, p)
		} else {
			c.srv.watches.addData(c, p)
		}
	}
	for _, p := range r.ChildWatches {
		st, ok := tree.Exists(p)
		switch {
		case !ok:
			fire(jute.EventNodeDeleted, p)
		case st.Pzxid > rel:
			fire(jute.EventNodeChildrenChanged, p)
		default:
			c.srv.watches.addChild(c, p)
		}
	}
	for _, p := range r.PersistentWatches {
		c.srv.watches.addPersistent(c, p, false)
	}
	for _, p := range r.PersistentRecursiveWatches {
		c.srv.watches.addPersistent(c, p, true)
	}
	reply := c.reply(xid, sm.lastZxid.Load(), 0, nil)
	if len(events) == 0 {
		return reply
	}
	return append(events, reply...)
}
