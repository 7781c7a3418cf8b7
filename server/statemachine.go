package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/internal/zoocfg"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// applyResult is what applying one entry produced, handed to the connection
// that proposed it.
type applyResult struct {
	Zxid    int64
	Err     int32        // top-level ZooKeeper error code
	Res     znode.Result // for data writes
	Session session.Session
}

// connOrder is the last applied write of a session's current connection.
type connOrder struct {
	ConnID uint64
	Seq    uint64
}

// inOrder admits a write only if it comes from the session's current
// connection (the last one createSession or attachSession named) and is the
// next of that connection.
func (sm *stateMachine) inOrder(e *entry) bool {
	if e.ConnID == 0 {
		return true
	}
	cur, ok := sm.order[e.SessionID]
	if !ok || cur.ConnID != e.ConnID || e.Seq != cur.Seq+1 {
		return false
	}
	sm.order[e.SessionID] = connOrder{ConnID: e.ConnID, Seq: e.Seq}
	return true
}

// applyHooks lets the server react to applied entries. Each hook runs on the
// apply goroutine after the state lock is released; it must not block.
type applyHooks interface {
	applied(e *entry, res applyResult)
	sessionCreated(s session.Session)
	// sessionClosed: byConn is the connection whose closeSession it was
	// (0 for an expiry); every other connection of the session must end.
	sessionClosed(id int64, expired bool, byConn uint64)
	// sessionTouched runs before an attach entry is applied, with no lock
	// held: the leader's tracker must see the session alive before its new
	// connection is visible in the state (see sessionLeader.expiryRound).
	sessionTouched(id int64)
	// expiryRefused: an expire entry's fence did not hold (expireRecord).
	expiryRefused(s session.Session)
	configChanged(data []byte)
	// stateReplaced runs when a snapshot replaced the whole state: watches
	// registered on the old tree can no longer fire correctly.
	stateReplaced()
}

// stateMachine is zkraft's replicated state: the data tree and the session
// table. It implements consensus.StateMachine.
//
// Invariants:
//   - Apply is deterministic: its effect depends only on the state and the
//     entry (time, session ids and passwords travel in the entry).
//   - An entry Apply cannot read (undecodable, unknown type or version,
//     unreadable record) is never skipped: Apply returns an error, changes
//     nothing, and the consensus node stops this member.
//   - The zxid of an entry is its raft index, so zxids only grow.
//   - Watch events of an entry are queued on the watching connections while
//     the write lock is held, so any read that can observe the change (it
//     takes the read lock) runs after the event was queued.
//   - An expire entry removes a session only if it was committed in the term
//     of the leader that decided it and the session's connection is still
//     the one that leader saw (expireRecord): a session that attached after
//     the decision is never expired by it.
//   - Lock-delay: an expiry with lock-delay (entryExpireSessionDelayed)
//     removes the session and at once its ephemerals outside the record's
//     Paths and, under them, those named like lock contenders that do not
//     hold their lock in the tree as the entry finds it (lockDelayKeeps:
//     decided from the tree and the entry only); the others under them
//     (holders, nodes of other names) stay in the tree, owner unchanged, and
//     delayed[session] holds their deadline (the expire entry's Time plus
//     the record's DelayMs). Only an entryDeleteDelayed whose Time reached
//     the deadline removes them. So a session in delayed is dead, owns
//     exactly its kept ephemerals (clients may delete some meanwhile), and
//     its id cannot be created again while it is there. delayed is
//     replicated and snapshotted, so any later leader finds it.
type stateMachine struct {
	mu       sync.RWMutex
	tree     *znode.Tree
	sessions *session.Table
	treeOpts znode.Options
	// order holds, per session, the connection whose writes it applies and
	// the sequence number of the last one. Replicated and snapshotted.
	order map[int64]connOrder
	// delayed maps a dead session whose ephemerals a lock-delay keeps to
	// their deadline (ms, entry time). Replicated and snapshotted.
	delayed map[int64]int64

	lastZxid atomic.Int64 // zxid of the last applied entry

	watches *watchManager
	hooks   applyHooks
	log     zerolog.Logger

	// Apply's scratch (apply goroutine only), reused by every entry: the
	// decoder of the raft entry, the entry (no hook keeps it) and the
	// decoder of its client write.
	entryDec jute.Decoder
	entry    entry
	writeDec writeDecoder
	events   []znode.Event // the events of a client write (trigger keeps none)
}

func newStateMachine(opts znode.Options, watches *watchManager, hooks applyHooks, log zerolog.Logger) *stateMachine {
	return &stateMachine{
		tree:     znode.New(opts),
		sessions: session.NewTable(),
		order:    map[int64]connOrder{},
		delayed:  map[int64]int64{},
		treeOpts: opts,
		watches:  watches,
		hooks:    hooks,
		log:      log,
	}
}

// Apply implements consensus.StateMachine. An entry this member cannot
// decode, of a kind it does not know, or whose record it cannot read is
// refused with an error and changes nothing: the consensus node then stops
// this member. Every proposer checked what it proposed, so such an entry
// means this member reads the log differently from its peers (an older
// version, a bug), and applying anything after it would make it diverge.
func (sm *stateMachine) Apply(index, term uint64, data []byte) error {
	zxid := int64(index)
	// The entry's buffers (its Body) are views of data, which raft does
	// not change while Apply runs; nothing keeps them past it (the tree
	// copies what it stores, decodeWrite's strings are copies).
	e := &sm.entry
	e.reset()
	sm.entryDec.ResetBorrowing(data, len(data), jute.BorrowBuffers)
	if err := e.Decode(&sm.entryDec); err != nil {
		sm.log.Error().Err(err).Uint64("index", index).Uint64("term", term).
			Msg("cannot decode log entry, stopping this member")
		return fmt.Errorf("entry %d: %w", index, err)
	}
	if e.Type == entryAttachSession {
		sm.hooks.sessionTouched(e.SessionID)
	}
	sm.mu.Lock()
	res, events, closed, expired, config, err := sm.applyLocked(e, zxid, term)
	if err != nil {
		sm.mu.Unlock()
		sm.log.Error().Err(err).Uint64("index", index).Uint64("term", term).Int32("type", e.Type).
			Msg("cannot apply log entry, stopping this member")
		return fmt.Errorf("entry %d: %w", index, err)
	}
	// Events are queued before lastZxid moves: whoever reads zxid Z (a ping,
	// a read) can rely on every event up to Z being queued already.
	sm.watches.trigger(events, zxid)
	if cap(events) <= maxReusedEvents {
		clear(events)
		sm.events = events[:0]
	}
	sm.lastZxid.Store(zxid)
	sm.mu.Unlock()

	if e.Type == entryCreateSession && res.Err == 0 {
		sm.hooks.sessionCreated(res.Session)
	}
	if closed {
		sm.hooks.sessionClosed(e.SessionID, expired, e.ConnID)
	}
	if isExpiry(e.Type) && res.Err == errExpiryFenced {
		sm.hooks.expiryRefused(res.Session)
	}
	if config != nil {
		sm.hooks.configChanged(config)
	}
	sm.hooks.applied(e, res)
	return nil
}

// maxReusedEvents bounds the events slice Apply keeps for the next entry.
const maxReusedEvents = 256

// applyLocked applies e at zxid, in an entry of the given raft term. It
// returns an error, having changed nothing, for an entry this member cannot
// apply (see Apply).
func (sm *stateMachine) applyLocked(e *entry, zxid int64, term uint64) (res applyResult, events []znode.Event, closed, expired bool, configChanged []byte, err error) {
	res.Zxid = zxid
	// Writes are decided with the proposer's options carried in e, never
	// with this member's configuration (see entry.Opts).
	opts := e.treeOptions(sm.treeOpts)
	ctx := znode.TxnContext{Zxid: zxid, Time: e.Time, SessionID: e.SessionID, Auth: e.Auth, Options: &opts}
	switch e.Type {
	case entryCreateSession:
		var rec sessionRecord
		if err = jute.Unmarshal(e.Body, &rec); err != nil {
			err = fmt.Errorf("createSession record: %w", err)
			return
		}
		s := session.Session{ID: rec.ID, TimeoutMs: rec.TimeoutMs, Password: rec.Password}
		if _, kept := sm.delayed[s.ID]; kept || !sm.sessions.Add(s) {
			// id collision: refuse, never replace; a dead session whose
			// ephemerals a lock-delay keeps must not own them again.
			res.Err = jute.ErrSessionExpired
			return
		}
		if e.ConnID != 0 {
			sm.order[s.ID] = connOrder{ConnID: e.ConnID}
		}
		res.Session = s
	case entryAttachSession:
		// A connection takes the session over. Every write of an earlier
		// connection either applied before this entry or is refused after
		// it, so the client's next read shows the final outcome of the
		// writes it lost track of.
		if !sm.sessions.Has(e.SessionID) {
			res.Err = jute.ErrSessionExpired
			return
		}
		sm.order[e.SessionID] = connOrder{ConnID: e.ConnID}
	case entryCloseSession, entryExpireSession, entryExpireSessionDelayed:
		sess, ok := sm.sessions.Get(e.SessionID)
		if !ok {
			return // already closed: closing is idempotent
		}
		var rec expireRecord
		if isExpiry(e.Type) {
			if rec, res.Err = sm.expiryFence(e, sess, term); res.Err != 0 {
				res.Session = sess
				return
			}
		}
		if !sm.inOrder(e) {
			res.Err = errOutOfOrder
			return
		}
		sm.sessions.Remove(e.SessionID)
		delete(sm.order, e.SessionID)
		if e.Type == entryExpireSessionDelayed && rec.DelayMs > 0 && len(rec.Paths) > 0 {
			// Lock-delay: the ephemerals under rec.Paths that hold a
			// lock stay until an entryDeleteDelayed at or after the
			// deadline; waiters go now (lockDelayKeeps).
			var under []string
			for _, p := range sm.tree.Ephemerals(e.SessionID, "") {
				if underAny(p, rec.Paths) {
					under = append(under, p)
				}
			}
			keep := lockDelayKeeps(sm.tree, under)
			var kept int
			events, kept = sm.tree.DeleteEphemeralsKeeping(ctx, e.SessionID, func(p string) bool { return keep[p] })
			if kept > 0 {
				sm.delayed[e.SessionID] = e.Time + min(rec.DelayMs, maxLockDelayMs)
				sm.log.Info().Str("session", sessionHex(e.SessionID)).Int("kept", kept).
					Int64("delay_ms", rec.DelayMs).Msg("session expired, its ephemerals under the lock-delay paths stay until the delay passed")
			}
		} else {
			events = sm.tree.DeleteEphemerals(ctx, e.SessionID)
		}
		closed, expired = true, isExpiry(e.Type)
	case entryDeleteDelayed:
		deadline, ok := sm.delayed[e.SessionID]
		if !ok {
			return // already removed: a retry, or nothing was kept
		}
		if e.Time < deadline {
			res.Err = errNotDue
			return
		}
		delete(sm.delayed, e.SessionID)
		events = sm.tree.DeleteEphemerals(ctx, e.SessionID)
		sm.log.Info().Str("session", sessionHex(e.SessionID)).Int("removed", len(events)/2).
			Msg("lock-delay passed, the expired session's remaining ephemerals removed")
	case entrySetConfig:
		data := append(append([]byte{}, e.Body...), fmt.Sprintf("version=%x", zxid)...)
		events = sm.tree.SetConfig(ctx, data)
		configChanged = data
	case entryDeleteContainer, entryDeleteTTL:
		var req jute.PathRequest
		if err = jute.Unmarshal(e.Body, &req); err != nil {
			err = fmt.Errorf("expired node delete record: %w", err)
			return
		}
		typ := jute.OpDeleteContainer
		if e.Type == entryDeleteTTL {
			typ = znode.OpDeleteTTL
		}
		res.Res, events = sm.tree.Apply(ctx, &znode.Write{Type: typ, Path: req.Path})
		res.Err = res.Res.Err
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti:
		// The proposer decoded the body before proposing it (handleWrite),
		// with a limit no larger than the body: failing here means this
		// member reads it differently. Decoding comes before any check
		// that could change state (inOrder moves the connection's seq).
		w, code := sm.writeDec.decode(e.Type, e.Body, len(e.Body), jute.BorrowBuffers)
		if code != 0 {
			err = fmt.Errorf("client write of type %d: body refused with code %d", e.Type, code)
			return
		}
		if !sm.sessions.Has(e.SessionID) {
			res.Err = jute.ErrSessionExpired
			return
		}
		if !sm.inOrder(e) {
			res.Err = errOutOfOrder
			return
		}
		res.Res, events = sm.tree.ApplyAppend(ctx, w, sm.events[:0])
		res.Err = res.Res.Err
	default:
		err = fmt.Errorf("unknown entry type %d", e.Type)
	}
	return
}

// underAny reports whether path is under one of prefixes (znode.Under).
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if znode.Under(path, p) {
			return true
		}
	}
	return false
}

// errNotDue is the result of an entryDeleteDelayed whose Time is before the
// deadline of the session's kept ephemerals: nothing changes.
const errNotDue = jute.ErrBadArguments

// maxLockDelayMs bounds the delay apply honours (zoocfg refuses more), so
// that a deadline never overflows.
const maxLockDelayMs = zoocfg.MaxLockDelayMs

// errExpiryFenced is the result of an expire entry whose fence did not hold:
// the session stays.
const errExpiryFenced = jute.ErrSessionMoved

// expiryFence checks an expire entry against the state (expireRecord): 0 if
// the expiry applies, otherwise the error code of its refusal. term is the
// raft term of the entry itself. It returns the decoded record (empty for
// an entry written before the fence existed).
func (sm *stateMachine) expiryFence(e *entry, sess session.Session, term uint64) (expireRecord, int32) {
	var rec expireRecord
	if len(e.Body) == 0 {
		return rec, 0 // written before the fence existed
	}
	err := jute.Unmarshal(e.Body, &rec)
	if mutation.Enabled(mutation.SkipExpiryFence) {
		return rec, 0
	}
	if err != nil {
		sm.log.Error().Err(err).Str("session", sessionHex(sess.ID)).Msg("undecodable expiry refused")
		return rec, jute.ErrMarshallingError
	}
	if rec.Term != term {
		sm.log.Info().Str("session", sessionHex(sess.ID)).Uint64("decided_in_term", rec.Term).Uint64("entry_term", term).
			Msg("session expiry refused: the leader that decided it lost its term")
		return rec, errExpiryFenced
	}
	if cur := sm.order[sess.ID].ConnID; cur != rec.ConnID {
		sm.log.Info().Str("session", sessionHex(sess.ID)).Uint64("decided_conn", rec.ConnID).Uint64("current_conn", cur).
			Msg("session expiry refused: the session attached after the leader decided")
		return rec, errExpiryFenced
	}
	return rec, 0
}

// decodeWrite turns a client write request body into a znode.Write, every
// value a copy of body. It returns a ZooKeeper error code on failure.
func decodeWrite(op int32, body []byte, maxLen int) (*znode.Write, int32) {
	return new(writeDecoder).decode(op, body, maxLen, jute.BorrowNone)
}

// writeDecoder decodes client write request bodies into a znode.Write and
// records it reuses, for the two decodes of every write: the check before
// it is proposed (check, on the connection's reader) and its apply (decode,
// on the apply goroutine). The Write it returns, and the records it points
// to, are valid until its next decode; the tree keeps none of them (it
// copies the paths, data and ACLs it stores). One goroutine at a time.
type writeDecoder struct {
	d         jute.Decoder
	w         znode.Write
	create    jute.CreateRequest
	createTTL jute.CreateTTLRequest
	del       jute.DeleteRequest
	set       jute.SetDataRequest
	acl       jute.SetACLRequest
	multi     jute.MultiRequest
}

// check reports whether body decodes as the request of op within maxLen (0,
// or the code it is refused with), as decodeWrite would. It borrows body's
// memory for the decode and keeps nothing of it: body may change once it
// returned.
func (wd *writeDecoder) check(op int32, body []byte, maxLen int) int32 {
	_, code := wd.decode(op, body, maxLen, jute.BorrowAll)
	wd.clear()
	return code
}

// clear drops every value of the last decode. It keeps the create
// record's ACL array, cleared, for the next decode (DecodeReusing), unless
// it has room for more than maxKeptACL entries.
func (wd *writeDecoder) clear() {
	acl := keptACL(wd.create.ACL)
	clear(acl[:cap(acl)])
	*wd = writeDecoder{}
	wd.create.ACL = acl[:0]
}

// maxKeptACL bounds the ACL entries a writeDecoder keeps room for between
// decodes: one create with a huge ACL (up to about 87 k entries, 3.5 MB
// decoded, within jute.maxbuffer) is not held for the connection's life,
// nor cleared again at every later write, nor held by apply's decoder.
const maxKeptACL = 16

// keptACL returns acl if its array is small enough to keep, else nil.
func keptACL(acl []jute.ACL) []jute.ACL {
	if cap(acl) > maxKeptACL {
		return nil
	}
	return acl
}

// decode is decodeWrite into wd's records, with the values sharing body's
// memory as borrow allows (jute.Borrow): apply borrows the entry's buffers,
// since the tree copies the data it keeps, and never its strings, which it
// keeps as they are.
func (wd *writeDecoder) decode(op int32, body []byte, maxLen int, borrow jute.Borrow) (*znode.Write, int32) {
	d := &wd.d
	d.ResetBorrowing(body, maxLen, borrow)
	wd.w = znode.Write{Type: op}
	w := &wd.w
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
		// Into the last create's ACL array: nothing keeps a decoded ACL
		// (the tree stores a copy, or its shared open ACL).
		r := &wd.create
		r.ACL = keptACL(r.ACL) // apply's decoder never clears: drop a huge one here
		if r.DecodeReusing(d) != nil {
			return nil, jute.ErrMarshallingError
		}
		wd.createTTL = jute.CreateTTLRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}
		w.Create = &wd.createTTL
	case jute.OpCreateTTL:
		if d.ReadRecord(&wd.createTTL) != nil {
			return nil, jute.ErrMarshallingError
		}
		w.Create = &wd.createTTL
	case jute.OpDelete:
		if d.ReadRecord(&wd.del) != nil {
			return nil, jute.ErrMarshallingError
		}
		w.Delete = &wd.del
	case jute.OpSetData:
		if d.ReadRecord(&wd.set) != nil {
			return nil, jute.ErrMarshallingError
		}
		w.SetData = &wd.set
	case jute.OpSetACL:
		if d.ReadRecord(&wd.acl) != nil {
			return nil, jute.ErrMarshallingError
		}
		w.SetACL = &wd.acl
	case jute.OpMulti:
		if d.ReadRecord(&wd.multi) != nil {
			return nil, jute.ErrMarshallingError
		}
		w.Multi = &wd.multi
		for _, op := range w.Multi.Ops {
			if op.Type == jute.OpGetData || op.Type == jute.OpGetChildren {
				return nil, jute.ErrMarshallingError // reads mixed with writes
			}
		}
	default:
		return nil, jute.ErrUnimplemented
	}
	return w, 0
}

// snapshotMagic starts every state snapshot without pending lock-delay
// deletions; snapshotMagicDelayed one that has them, in a section after the
// write order (uint64 count, then per dead session in id order, int64 id
// and int64 deadline). A state without them is written exactly as before
// lock-delay existed; a build that does not know the section refuses a
// snapshot that has one rather than lose it.
const (
	snapshotMagic        = "ZKRAFTS1"
	snapshotMagicDelayed = "ZKRAFTS2"
)

// Snapshot implements consensus.StateMachine: the tree and the sessions.
func (sm *stateMachine) Snapshot() ([]byte, error) {
	write, err := sm.FreezeSnapshot()
	if err != nil {
		return nil, err
	}
	return consensus.Collect(write) // one buffer of the exact size (writeFrozenState)
}

// Restore implements consensus.StateMachine.
func (sm *stateMachine) Restore(index uint64, data []byte) error {
	r := bytes.NewReader(data)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil || (string(magic) != snapshotMagic && string(magic) != snapshotMagicDelayed) {
		return fmt.Errorf("restore: not a zkraft snapshot")
	}
	var zxid, n uint64
	if err := binary.Read(r, binary.BigEndian, &zxid); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	// The snapshot's zxid is its last applied client or server entry; the
	// raft index it was taken at can be higher (conf changes and a new
	// leader's empty entry take indexes but no zxid), never lower.
	if zxid > index {
		return fmt.Errorf("restore: snapshot zxid %#x beyond its raft index %d", zxid, index)
	}
	section := func() ([]byte, error) {
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		if n > uint64(r.Len()) {
			return nil, fmt.Errorf("section of %d bytes, %d left", n, r.Len())
		}
		// A view of data, not a copy (the tree section is most of a
		// snapshot: hundreds of MB at a million znodes).
		start := len(data) - r.Len()
		_, err := r.Seek(int64(n), io.SeekCurrent)
		return data[start : start+int(n)], err
	}
	tr, err := section()
	if err != nil {
		return fmt.Errorf("restore tree: %w", err)
	}
	tree, err := znode.ReadSnapshotBytes(tr, sm.treeOpts)
	if err != nil {
		return fmt.Errorf("restore tree: %w", err)
	}
	sr, err := section()
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	sessions, err := session.ReadSnapshot(bytes.NewReader(sr))
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	var count uint64
	if err := binary.Read(r, binary.BigEndian, &count); err != nil || count > uint64(r.Len()/24) {
		return fmt.Errorf("restore write order: bad count")
	}
	order := make(map[int64]connOrder, count)
	for i := uint64(0); i < count; i++ {
		var rec [3]uint64
		if err := binary.Read(r, binary.BigEndian, &rec); err != nil {
			return fmt.Errorf("restore write order: %w", err)
		}
		order[int64(rec[0])] = connOrder{ConnID: rec[1], Seq: rec[2]}
	}
	delayed := map[int64]int64{}
	if string(magic) == snapshotMagicDelayed {
		if err := binary.Read(r, binary.BigEndian, &count); err != nil || count > uint64(r.Len()/16) {
			return fmt.Errorf("restore lock-delay deletions: bad count")
		}
		for i := uint64(0); i < count; i++ {
			var rec [2]int64
			if err := binary.Read(r, binary.BigEndian, &rec); err != nil {
				return fmt.Errorf("restore lock-delay deletions: %w", err)
			}
			delayed[rec[0]] = rec[1]
		}
	}
	sm.mu.Lock()
	sm.tree, sm.sessions, sm.order, sm.delayed = tree, sessions, order, delayed
	// Keep the snapshot's zxid, the one every peer reports at this point;
	// storing index instead would put this member ahead of its peers.
	if mutation.Enabled(mutation.RestoreRaftIndex) {
		zxid = index
	}
	sm.lastZxid.Store(int64(zxid))
	sm.mu.Unlock()
	sm.hooks.stateReplaced()
	for _, s := range sessions.All() {
		sm.hooks.sessionCreated(s)
	}
	if data, _, _ := tree.GetData("/zookeeper/config"); len(data) > 0 {
		sm.hooks.configChanged(data)
	}
	return nil
}

// sessionConns returns, for each id, the session's current connection (as
// named by its last createSession or attachSession; 0 if none).
func (sm *stateMachine) sessionConns(ids []int64) []uint64 {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = sm.order[id].ConnID
	}
	return out
}

// dueDelayed returns, sorted, the dead sessions whose ephemerals a
// lock-delay keeps until a deadline at or before nowMs.
func (sm *stateMachine) dueDelayed(nowMs int64) []int64 {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	var out []int64
	for id, deadline := range sm.delayed {
		if deadline <= nowMs {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// sessionConn is sessionConns for one session.
func (sm *stateMachine) sessionConn(id int64) uint64 { return sm.sessionConns([]int64{id})[0] }

// session returns a live session by id.
func (sm *stateMachine) session(id int64) (session.Session, bool) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	return sm.sessions.Get(id)
}
