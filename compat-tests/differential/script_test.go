package differential_test

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// stepKind says what a step does.
type stepKind int

const (
	kindCall      stepKind = iota // send reqs (pipelined), read until as many replies
	kindConnect                   // open (or resume) the slot's session
	kindRaw                       // write raw bytes, read `replies` replies
	kindBarrier                   // ping; record what arrives before the ping reply
	kindProbe                     // ping; record "open" or "closed"
	kindWaitEvent                 // read until one notification arrives (bounded)
)

// request is one request of a call step. body or bodyFn (built from the
// side's own earlier observations) gives the record; neither means no body.
type request struct {
	xid    int32 // 0: the slot's next xid
	op     int32
	body   jute.Record
	bodyFn func(*side) jute.Record
}

// connectSpec describes the handshake of a connect step.
type connectSpec struct {
	timeoutMs  int32
	resume     int  // slot whose session to resume; -1 = new session
	badPasswd  bool // flip a password byte
	zxidAhead  bool // lastZxidSeen far beyond anything the server has
	noReadOnly bool // omit the trailing readOnly byte
}

// step is one action of a script.
type step struct {
	kind    stepKind
	slot    int
	reqs    []request
	conn    connectSpec
	raw     func(*side) []byte
	replies int             // kindRaw: replies to read
	rawOps  map[int32]int32 // kindRaw: xid -> opcode of the raw requests
	probe   bool            // after the replies, probe whether the connection is open
	closes  bool            // after the replies, wait for the server to close the connection
	unorder bool            // sort the notifications of this step
	aclSet  bool            // sort ACL lists: the server expanded "auth" from a set of ids
	label   string          // remember the reply zxid (of the last reply) under this name
	exc     string          // id of the exception this step may need (exceptions_test.go)
	rawDesc string
}

// script is a named list of steps.
type script struct {
	name  string
	steps []*step
}

// builder helps writing scripts.
type builder struct{ s *script }

func newScript(name string) *builder { return &builder{s: &script{name: name}} }

func (b *builder) add(st *step) *step { b.s.steps = append(b.s.steps, st); return st }

// lab names the zxid of the step's last reply.
func (st *step) lab(name string) *step { st.label = name; return st }

// ex marks the step as one a listed exception may apply to.
func (st *step) ex(id string) *step { st.exc = id; return st }

// unorderedACL marks a getACL whose list came from expanding "auth" with
// several ids: ZooKeeper takes them from a hash set, so their order is open.
func (st *step) unorderedACL() *step { st.aclSet = true; return st }

// thenProbe adds a probe of the connection after the step's replies.
func (st *step) thenProbe() *step { st.probe = true; return st }

// thenCloses waits, after the step's replies, for the server to close the
// connection (see side.awaitClose): for requests after which a server closes
// once its reply is out, where ZooKeeper closes asynchronously and a probe
// would race with that close.
func (st *step) thenCloses() *step { st.closes = true; return st }

func (b *builder) connect(slot int, timeoutMs int32) *step {
	return b.add(&step{kind: kindConnect, slot: slot, conn: connectSpec{timeoutMs: timeoutMs, resume: -1}})
}

func (b *builder) connectSpec(slot int, c connectSpec) *step {
	return b.add(&step{kind: kindConnect, slot: slot, conn: c})
}

func (b *builder) call(slot int, op int32, body jute.Record) *step {
	return b.add(&step{kind: kindCall, slot: slot, reqs: []request{{op: op, body: body}}})
}

func (b *builder) callXid(slot int, xid, op int32, body jute.Record) *step {
	return b.add(&step{kind: kindCall, slot: slot, reqs: []request{{xid: xid, op: op, body: body}}})
}

func (b *builder) callFn(slot int, op int32, fn func(*side) jute.Record) *step {
	return b.add(&step{kind: kindCall, slot: slot, reqs: []request{{op: op, bodyFn: fn}}})
}

func (b *builder) pipe(slot int, reqs ...request) *step {
	return b.add(&step{kind: kindCall, slot: slot, reqs: reqs})
}

func (b *builder) raw(slot int, desc string, replies int, ops map[int32]int32, fn func(*side) []byte) *step {
	return b.add(&step{kind: kindRaw, slot: slot, raw: fn, replies: replies, rawOps: ops, rawDesc: desc})
}

// barrier collects the notifications pending on slot.
func (b *builder) barrier(slot int) *step { return b.add(&step{kind: kindBarrier, slot: slot}) }

// waitEvent waits (bounded) for the next notification on slot, for events
// that come from the server's own timers (container and TTL removal).
func (b *builder) waitEvent(slot int) *step { return b.add(&step{kind: kindWaitEvent, slot: slot}) }

// probe records whether the server has closed slot's connection.
func (b *builder) probe(slot int) *step { return b.add(&step{kind: kindProbe, slot: slot}) }

// ---- request shorthands ----

func req(op int32, body jute.Record) request { return request{op: op, body: body} }

func (b *builder) create(slot int, path string, d []byte, acl []jute.ACL, flags int32) *step {
	return b.call(slot, jute.OpCreate, &jute.CreateRequest{Path: path, Data: d, ACL: acl, Flags: flags})
}

func (b *builder) create2(slot int, path string, d []byte, acl []jute.ACL, flags int32) *step {
	return b.call(slot, jute.OpCreate2, &jute.CreateRequest{Path: path, Data: d, ACL: acl, Flags: flags})
}

func (b *builder) mk(slot int, path string) *step { return b.create2(slot, path, []byte("x"), open, 0) }

func (b *builder) get(slot int, path string, watch bool) *step {
	return b.call(slot, jute.OpGetData, &jute.PathWatchRequest{Path: path, Watch: watch})
}

func (b *builder) exists(slot int, path string, watch bool) *step {
	return b.call(slot, jute.OpExists, &jute.PathWatchRequest{Path: path, Watch: watch})
}

func (b *builder) children(slot int, path string, watch bool) *step {
	return b.call(slot, jute.OpGetChildren, &jute.PathWatchRequest{Path: path, Watch: watch})
}

func (b *builder) children2(slot int, path string, watch bool) *step {
	return b.call(slot, jute.OpGetChildren2, &jute.PathWatchRequest{Path: path, Watch: watch})
}

func (b *builder) set(slot int, path string, d []byte, version int32) *step {
	return b.call(slot, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: d, Version: version})
}

func (b *builder) del(slot int, path string, version int32) *step {
	return b.call(slot, jute.OpDelete, &jute.DeleteRequest{Path: path, Version: version})
}

func (b *builder) getACL(slot int, path string) *step {
	return b.call(slot, jute.OpGetACL, &jute.PathRequest{Path: path})
}

func (b *builder) setACL(slot int, path string, acl []jute.ACL, version int32) *step {
	return b.call(slot, jute.OpSetACL, &jute.SetACLRequest{Path: path, ACL: acl, Version: version})
}

func (b *builder) multi(slot int, ops ...jute.MultiOp) *step {
	return b.call(slot, jute.OpMulti, &jute.MultiRequest{Ops: ops})
}

func (b *builder) multiRead(slot int, ops ...jute.MultiOp) *step {
	return b.call(slot, jute.OpMultiRead, &jute.MultiRequest{Ops: ops})
}

func (b *builder) auth(slot int, scheme, cred string) *step {
	return b.callXid(slot, jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: scheme, Auth: []byte(cred)})
}

func (b *builder) addWatch(slot int, path string, mode int32) *step {
	return b.call(slot, jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode})
}

func (b *builder) closeSession(slot int) *step {
	st := b.call(slot, jute.OpCloseSession, nil).thenProbe()
	st.unorder = true // the session's ephemerals go in no fixed order
	return st
}

// ---- multi op shorthands ----

func mCreate(path string, d []byte, flags int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: path, Data: d, ACL: open, Flags: flags}}
}

func mCreate2(path string, d []byte, flags int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreate2, Create: &jute.CreateRequest{Path: path, Data: d, ACL: open, Flags: flags}}
}

func mDelete(path string, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: path, Version: version}}
}

func mSet(path string, d []byte, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: path, Data: d, Version: version}}
}

func mCheck(path string, version int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCheck, Check: &jute.CheckVersionRequest{Path: path, Version: version}}
}

func mGet(path string) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: path}}
}

func mChildren(path string) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpGetChildren, Read: &jute.PathWatchRequest{Path: path}}
}

// ---- ACLs ----

func acl(perms int32, scheme, id string) jute.ACL {
	return jute.ACL{Perms: perms, ID: jute.Id{Scheme: scheme, ID: id}}
}

var (
	open      = []jute.ACL{acl(jute.PermAll, "world", "anyone")}
	worldRead = []jute.ACL{acl(jute.PermRead, "world", "anyone")}
	creator   = []jute.ACL{acl(jute.PermAll, "auth", "")}
)

func digestACL(perms int32, userPassword string) jute.ACL {
	return acl(perms, "digest", zktest.DigestACLHash(userPassword))
}

// frame builds one frame holding a request header and body.
func frame(xid, op int32, body jute.Record) []byte {
	e := jute.NewEncoder(nil)
	start := e.StartFrame()
	e.WriteRecord(&jute.RequestHeader{Xid: xid, Type: op})
	if body != nil {
		e.WriteRecord(body)
	}
	e.EndFrame(start)
	return e.Bytes()
}

// lengthOnly is a frame header announcing n bytes, with no body.
func lengthOnly(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// ---- descriptions ----

var opNames = map[int32]string{
	0: "notification(0)", 1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
	6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2",
	13: "check", 14: "multi", 15: "create2", 16: "reconfig", 17: "checkWatches",
	18: "removeWatches", 19: "createContainer", 20: "deleteContainer", 21: "createTTL",
	22: "multiRead", 100: "auth", 101: "setWatches", 102: "sasl", 103: "getEphemerals",
	104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch", 107: "whoAmI",
	-10: "createSession", -11: "closeSession",
}

func opName(op int32) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("op(%d)", op)
}

// describe renders a request record readably.
func describe(op int32, r jute.Record) string {
	switch v := r.(type) {
	case nil:
		return opName(op)
	case *jute.CreateRequest:
		return fmt.Sprintf("%s %s data=%s acl=%s flags=%d", opName(op), printable(v.Path), data(v.Data), acls(v.ACL), v.Flags)
	case *jute.CreateTTLRequest:
		return fmt.Sprintf("%s %s data=%s acl=%s flags=%d ttl=%d", opName(op), printable(v.Path), data(v.Data), acls(v.ACL), v.Flags, v.TTL)
	case *jute.SetDataRequest:
		return fmt.Sprintf("%s %s data=%s version=%d", opName(op), printable(v.Path), data(v.Data), v.Version)
	case *jute.SetACLRequest:
		return fmt.Sprintf("%s %s acl=%s version=%d", opName(op), printable(v.Path), acls(v.ACL), v.Version)
	case *jute.AuthPacket:
		return fmt.Sprintf("%s type=%d scheme=%q auth=%q", opName(op), v.Type, v.Scheme, v.Auth)
	case *jute.SetWatches:
		return fmt.Sprintf("%s rel=%#x data=%s exist=%s child=%s", opName(op), v.RelativeZxid,
			printable(strs(v.DataWatches, false)), printable(strs(v.ExistWatches, false)), printable(strs(v.ChildWatches, false)))
	case *jute.MultiRequest:
		parts := make([]string, len(v.Ops))
		for i, o := range v.Ops {
			switch {
			case o.Create != nil:
				parts[i] = describe(o.Type, o.Create)
			case o.CreateTTL != nil:
				parts[i] = describe(o.Type, o.CreateTTL)
			case o.Delete != nil:
				parts[i] = describe(o.Type, o.Delete)
			case o.SetData != nil:
				parts[i] = describe(o.Type, o.SetData)
			case o.Check != nil:
				parts[i] = describe(o.Type, o.Check)
			case o.Read != nil:
				parts[i] = describe(o.Type, o.Read)
			default:
				parts[i] = opName(o.Type)
			}
		}
		return opName(op) + "[" + strings.Join(parts, "; ") + "]"
	default:
		return opName(op) + " " + printable(strings.TrimPrefix(fmt.Sprintf("%+v", r), "&"))
	}
}

// printable escapes control and invisible characters (paths in error
// tests carry NUL and friends).
func printable(s string) string {
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
