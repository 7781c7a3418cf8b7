package server

import (
	"strings"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// This file is the goroutine-free part of a client connection's request
// path: the checks a write passes before it is proposed, the entry it is
// proposed as, the reply an applied write gets and the reads served against
// the tree (with their watch registration). conn.go calls it from its reader
// and writer goroutines; Endpoint (replica.go) exposes it, step by step, to
// tools that drive a Replica themselves (the simulator).

// endpoint is the per-connection state the request path builds entries
// with.
type endpoint struct {
	sessionID int64
	connID    uint64 // unique per connection across members and restarts
	writeSeq  uint64 // sequence number of the last proposed write
}

// checkWrite is the check a write passes before it is proposed: its body
// must decode as the request of op within maxLen (0, or the code it is
// refused with).
func checkWrite(op int32, body []byte, maxLen int) int32 {
	_, code := decodeWrite(op, body, maxLen)
	return code
}

// writeEntry builds the entry of the connection's next write. It carries
// the proposer's write options: every member decides the write with them,
// as ZooKeeper's followers take the leader's decision (entry.Opts). Body is
// not copied.
func (ep *endpoint) writeEntry(xid, op int32, body []byte, auth []jute.Id, opts znode.Options) *entry {
	ep.writeSeq++
	return &entry{Type: op, SessionID: ep.sessionID, Cxid: xid, ConnID: ep.connID, Seq: ep.writeSeq,
		Auth: auth, Body: body, Opts: writeOpts(opts)}
}

// closeEntry builds the entry of the connection's closeSession request.
func (ep *endpoint) closeEntry(xid int32) *entry {
	ep.writeSeq++
	return &entry{Type: entryCloseSession, SessionID: ep.sessionID, Cxid: xid, ConnID: ep.connID, Seq: ep.writeSeq}
}

// syncBarrier reports whether a sync is answered only after a ReadIndex
// barrier applied (always, but under the sync-without-barrier mutation):
// reads sent after it then see every write committed before it was sent.
func syncBarrier() bool { return !mutation.Enabled(mutation.SyncWithoutBarrier) }

// writeReplyBody is the reply code and body of an applied write of op.
func writeReplyBody(op int32, r *applyResult) (int32, jute.Record) {
	if r.Err != 0 {
		return r.Err, nil
	}
	switch op {
	case jute.OpCreate:
		return 0, &jute.CreateResponse{Path: r.Res.Path}
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return 0, &jute.Create2Response{Path: r.Res.Path, Stat: r.Res.Stat}
	case jute.OpSetData, jute.OpSetACL:
		return 0, &jute.StatResponse{Stat: r.Res.Stat}
	case jute.OpMulti:
		return 0, &jute.MultiResponse{Results: r.Res.Multi}
	}
	return 0, nil
}

// readNode answers exists, getData, getChildren and getChildren2 against
// sm's tree for ids, and registers w's watch under the same read lock as
// the read, so no change can fall between the two. It returns the reply's
// zxid, code and body.
func readNode(sm *stateMachine, w watcher, op int32, r *jute.PathWatchRequest, ids []jute.Id) (int64, int32, jute.Record) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	zxid := sm.lastZxid.Load()
	tree := sm.tree
	exists, allowed := tree.CheckPermission(r.Path, jute.PermRead, ids)
	if op == jute.OpExists {
		if strings.IndexByte(r.Path, 0) >= 0 {
			return zxid, jute.ErrBadArguments, nil // exists checks only for NUL
		}
		if r.Watch {
			sm.watches.addData(w, r.Path) // set even when the node is missing
		}
		if !exists {
			return zxid, jute.ErrNoNode, nil
		}
		if !allowed {
			return zxid, jute.ErrNoAuth, nil
		}
		st, _ := tree.Exists(r.Path)
		return zxid, 0, &jute.StatResponse{Stat: st}
	}
	if !exists {
		return zxid, jute.ErrNoNode, nil
	}
	if !allowed {
		return zxid, jute.ErrNoAuth, nil
	}
	switch op {
	case jute.OpGetData:
		data, st, _ := tree.GetData(r.Path)
		if r.Watch {
			sm.watches.addData(w, r.Path)
		}
		return zxid, 0, &jute.GetDataResponse{Data: data, Stat: st}
	default:
		children, st, _ := tree.GetChildren(r.Path)
		if children == nil {
			children = []string{}
		}
		if r.Watch {
			sm.watches.addChild(w, r.Path)
		}
		if op == jute.OpGetChildren {
			return zxid, 0, &jute.GetChildrenResponse{Children: children}
		}
		return zxid, 0, &jute.GetChildren2Response{Children: children, Stat: st}
	}
}

// encodeReply encodes a reply frame with enc (reset first); body is written
// only when code is 0.
func encodeReply(enc *jute.Encoder, xid int32, zxid int64, code int32, body jute.Record) []byte {
	if code != 0 {
		body = nil
	}
	return encodeReplyWithBody(enc, xid, zxid, code, body)
}

func encodeReplyWithBody(enc *jute.Encoder, xid int32, zxid int64, code int32, body jute.Record) []byte {
	enc.Reset()
	start := enc.StartFrame()
	enc.WriteRecord(&jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code})
	if body != nil {
		enc.WriteRecord(body)
	}
	enc.EndFrame(start)
	return enc.Bytes()
}
