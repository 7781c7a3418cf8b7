package server

import (
	"fmt"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// entryVersion is the format version written first in every entry. A replica
// that meets a version it does not know must stop rather than guess.
// Version 2 added Opts; version 1 entries are still read.
const entryVersion int32 = 2

// entryOpts are the write options a proposer decided a client write with.
type entryOpts int32

const (
	optTTL  entryOpts = 1 << iota // TTL nodes allowed (extendedTypesEnabled)
	optX509                       // x509 ACL ids and identities valid
	// optLocal marks a version 1 entry, which carries no options: it is
	// decided, as it was when written, by the applying member's own
	// configuration. It is never encoded.
	optLocal
	optSASL // sasl ACL ids and identities valid (authProvider.sasl)

	knownOpts = optTTL | optX509 | optSASL
)

// writeOpts are the options a member proposes its client writes with.
func writeOpts(o znode.Options) entryOpts {
	var f entryOpts
	if o.ExtendedTypesEnabled {
		f |= optTTL
	}
	if o.X509Enabled {
		f |= optX509
	}
	if o.SASLEnabled {
		f |= optSASL
	}
	return f
}

// treeOptions are the options apply decides e with: the proposer's, or for
// a version 1 entry the applying member's own (local).
func (e *entry) treeOptions(local znode.Options) znode.Options {
	if e.Opts&optLocal != 0 {
		return local
	}
	return znode.Options{ExtendedTypesEnabled: e.Opts&optTTL != 0, X509Enabled: e.Opts&optX509 != 0,
		SASLEnabled: e.Opts&optSASL != 0}
}

// Internal entry types that never come from a client. Client writes use their
// own opcode as the type (create 1, delete 2, setData 5, setACL 7, multi 14,
// create2 15, createContainer 19, createTTL 21).
const (
	entryCreateSession         = jute.OpCreateSession   // body: sessionRecord
	entryCloseSession          = jute.OpCloseSession    // body: none; the entry's session is closed
	entryExpireSession   int32 = -12                    // body: expireRecord (none before it existed); like close, decided by the leader's tracker
	entryAttachSession   int32 = -13                    // body: none; the entry's ConnID becomes the session's connection
	entryDeleteContainer       = jute.OpDeleteContainer // body: PathRequest
	entryDeleteTTL       int32 = -20                    // body: PathRequest
	// entryExpireSessionDelayed is an expiry with lock-delay (zkraft.lockDelayMs):
	// like entryExpireSession, but the session's ephemerals under the
	// record's Paths that hold a lock, or are not named like lock contenders,
	// stay until an entryDeleteDelayed removes them (lockDelayKeeps decides
	// from the tree; waiting contenders go at once: this rule changed before
	// lock-delay was first released, so no released log has entries applied
	// the old way, which kept waiters too). Its own
	// type, so that a member built before lock-delay stops on it instead of
	// removing those nodes at once (it would ignore the record's new fields).
	entryExpireSessionDelayed int32 = -21 // body: expireRecord with DelayMs and Paths
	// entryDeleteDelayed removes the ephemerals an expiry with lock-delay
	// kept for the entry's (dead) session, once the entry's Time reached
	// their deadline; proposed by the leader (decideDelayedDeletions).
	entryDeleteDelayed int32 = -22 // body: none
)

// isExpiry reports whether typ is a leader's expiry of a session.
func isExpiry(typ int32) bool { return typ == entryExpireSession || typ == entryExpireSessionDelayed }

// entry is the unit of replication: one client write or one server decision,
// with everything its apply needs. Nothing in apply reads a clock or a random
// source: Time, session ids and passwords travel here.
type entry struct {
	// Proposer and ReqID identify the proposal so the member that proposed it
	// can hand the result to the waiting connection. ReqID is unique per
	// proposer incarnation (a random base plus a counter).
	Proposer  uint64
	ReqID     uint64
	Time      int64 // ms since epoch, the proposer's wall clock
	SessionID int64
	Cxid      int32
	Type      int32
	// ConnID and Seq order a session's writes. A connection becomes the
	// session's writer through the log (createSession or attachSession
	// carry its ConnID); its writes then carry Seq 1, 2, ... Apply refuses
	// any write not from the current connection or not the next in line, so
	// a proposal lost in a leader change never lets a later write apply
	// without it, and a write of an old connection can never apply after
	// the session moved on (FIFO order, and no duplicate from a retry).
	// ConnID 0 marks entries that are not client writes.
	ConnID uint64
	Seq    uint64
	Auth   []jute.Id // the caller's identities at propose time, for ACL checks
	Body   []byte    // the request record as received (or an internal record)
	// Opts are the proposer's write options (its zoo.cfg). Apply decides
	// a client write with them, never with the applying member's own
	// configuration, so members configured differently (as during a
	// rolling TLS upgrade) still agree on every write's outcome.
	Opts entryOpts
}

// data returns e encoded as the raft entry data every replica applies.
func (e *entry) data() []byte {
	enc := jute.NewEncoder(make([]byte, 0, e.encodedLen()))
	e.Encode(enc)
	return enc.Bytes()
}

// encodedLen is the exact length of e's encoding, so that data allocates
// once (entries are encoded on every write).
func (e *entry) encodedLen() int {
	n := 4 + 8*3 + 8 + 4 + 4 + 8*2 + 4 + 4 + len(e.Body) + 4
	for i := range e.Auth {
		n += 4 + len(e.Auth[i].Scheme) + 4 + len(e.Auth[i].ID)
	}
	return n
}

func (e *entry) Encode(enc *jute.Encoder) {
	enc.WriteInt(entryVersion)
	enc.WriteLong(int64(e.Proposer))
	enc.WriteLong(int64(e.ReqID))
	enc.WriteLong(e.Time)
	enc.WriteLong(e.SessionID)
	enc.WriteInt(e.Cxid)
	enc.WriteInt(e.Type)
	enc.WriteLong(int64(e.ConnID))
	enc.WriteLong(int64(e.Seq))
	enc.WriteInt(int32(len(e.Auth)))
	for i := range e.Auth {
		enc.WriteString(e.Auth[i].Scheme)
		enc.WriteString(e.Auth[i].ID)
	}
	enc.WriteBuffer(e.Body)
	enc.WriteInt(int32(e.Opts &^ optLocal))
}

// reset empties e for a Decode that reuses its Auth slice (Apply's
// scratch entry), whose ids Decode keeps where the next entry has the same.
func (e *entry) reset() {
	*e = entry{Auth: e.Auth[:0]}
}

func (e *entry) Decode(d *jute.Decoder) error {
	v := d.ReadInt()
	if d.Err() == nil && v != entryVersion && v != 1 {
		return fmt.Errorf("entry: unknown format version %d", v)
	}
	e.Proposer = uint64(d.ReadLong())
	e.ReqID = uint64(d.ReadLong())
	e.Time = d.ReadLong()
	e.SessionID = d.ReadLong()
	e.Cxid = d.ReadInt()
	e.Type = d.ReadInt()
	e.ConnID = uint64(d.ReadLong())
	e.Seq = uint64(d.ReadLong())
	n := d.ReadInt()
	if n < 0 || int(n) > d.Remaining()/8 {
		if d.Err() == nil {
			return fmt.Errorf("entry: bad auth count %d", n)
		}
		return fmt.Errorf("entry: %w", d.Err())
	}
	if e.Auth == nil || cap(e.Auth) < int(n) {
		e.Auth = make([]jute.Id, n)
	} else {
		e.Auth = e.Auth[:n] // reset's: every element is written below, from what it holds
	}
	for i := range e.Auth {
		// A reused entry (Apply's) still holds the last entry's ids:
		// a connection's writes carry the same ones, kept, not copied.
		e.Auth[i].Scheme = d.ReadStringLike(e.Auth[i].Scheme)
		e.Auth[i].ID = d.ReadStringLike(e.Auth[i].ID)
	}
	e.Body = d.ReadBuffer()
	e.Opts = optLocal
	if v >= 2 {
		e.Opts = entryOpts(d.ReadInt())
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("entry: %w", err)
	}
	if v >= 2 && e.Opts&^knownOpts != 0 {
		// A proposer decided with a check this member does not know.
		return fmt.Errorf("entry: unknown write options %#x", int32(e.Opts&^knownOpts))
	}
	return nil
}

// errOutOfOrder is the result of an entry refused because an earlier write
// of its connection was lost: the connection is closed (the client sees
// ConnectionLoss and retries on a new one).
const errOutOfOrder = jute.ErrConnectionLoss

// sessionRecord is the body of a createSession entry.
type sessionRecord struct {
	ID        int64
	TimeoutMs int32
	Password  []byte
}

func (s *sessionRecord) Encode(e *jute.Encoder) {
	e.WriteLong(s.ID)
	e.WriteInt(s.TimeoutMs)
	e.WriteBuffer(s.Password)
}

func (s *sessionRecord) Decode(d *jute.Decoder) error {
	s.ID = d.ReadLong()
	s.TimeoutMs = d.ReadInt()
	s.Password = d.ReadBuffer()
	return d.Err()
}

// expireRecord is the body of an expire entry: the fence of the leader's
// decision. Apply refuses the expiry if the entry was not committed in the
// term of the leader that decided it (that leader stepped down and a later
// one carried the entry), or if the session's connection, named by the last
// createSession or attachSession applied, is no longer ConnID (the session
// attached after the decision: its client is alive). An expire entry with an
// empty body, written before the fence existed, is applied unconditionally.
//
// DelayMs and Paths are the lock-delay of an entryExpireSessionDelayed
// (the deciding leader's zkraft.lockDelayMs and zkraft.lockDelayPaths):
// they are encoded only when set, so a record without them is byte for
// byte the one written before lock-delay existed, and such a record decodes
// with no delay.
type expireRecord struct {
	Term    uint64 // raft term in which the proposing leader decided
	ConnID  uint64 // the session's connection as the leader's state showed it
	DelayMs int64
	Paths   []string
}

func (r *expireRecord) Encode(e *jute.Encoder) {
	e.WriteLong(int64(r.Term))
	e.WriteLong(int64(r.ConnID))
	if r.DelayMs != 0 || len(r.Paths) > 0 {
		e.WriteLong(r.DelayMs)
		e.WriteStrings(r.Paths)
	}
}

func (r *expireRecord) Decode(d *jute.Decoder) error {
	r.Term = uint64(d.ReadLong())
	r.ConnID = uint64(d.ReadLong())
	if d.Err() == nil && d.Remaining() > 0 {
		r.DelayMs = d.ReadLong()
		r.Paths = d.ReadStrings()
	}
	return d.Err()
}

// lockDelayBody is the body of an entryExpireSessionDelayed: the fence of
// expireRecord and the lock-delay.
func lockDelayBody(term, connID uint64, delayMs int64, paths []string) []byte {
	return jute.Marshal(&expireRecord{Term: term, ConnID: connID, DelayMs: delayMs, Paths: paths})
}
