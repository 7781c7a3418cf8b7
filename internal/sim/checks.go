package sim

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkraft/zkraft/internal/check"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/server"
)

// Checker names, as printed.
const (
	chkLock     = "lock"
	chkCounter  = "fenced-counter"
	chkLost     = "acked-write-lost"
	chkLog      = "log"
	chkReplicas = "replicas"
	chkZxid     = "zxid"
	chkExpiry   = "live-session-expired"
	chkProgress = "progress"
	chkEphemral = "ephemeral-lifetime"
	chkPanic    = "panic" // the code under test panicked (raft: log lost or corrupted)
	chkDurable  = "committed-not-durable"
	chkNodes    = "container-ttl"
	chkFresh    = "fresh-timeout"
)

// nodeRemovalBound is how long after a container became empty, or a TTL
// node's TTL passed with no child, the leader may take to remove it, beyond
// one container round, with no fault running.
const nodeRemovalBound = 3 * time.Second

// ephemeralBound is how long after its timeout a dead client's session may
// take to expire and its ephemerals to go: the tracker's deadline rounding,
// the expiry round, the commit, with no fault running.
const ephemeralBound = 2 * time.Second

// checks gathers what the checkers need while the run goes, and checks what
// it can at once.
type checks struct {
	w         *world
	seedIndex uint64
	healedAt  time.Duration

	// log: the (proposer, request) of each applied index, as first applied.
	logAt map[int64]reqKey
	// replicas: hash of the state snapshot at sampled indexes.
	stateAt map[uint64]uint64
	// acked writes: zxid -> who proposed it, as the client was told.
	ackedAt []ackedWrite
	// expiry: indexes whose expiry was checked.
	expiryDone map[int64]bool

	// lock and fenced counter
	holder     *client
	counter    int64
	maxToken   int64
	increments int64

	history []check.RegisterOp

	// the client that died after the faults stopped
	dead      *client
	deadSess  int64
	deadHeard time.Duration // its last request or answer
	deadGone  time.Duration // when its session's expiry applied (0: not yet)

	lastElection           time.Duration // the last time a member became leader
	lastElectionBeforeGone time.Duration

	// fresh timeouts: when the leader of each raft term was elected, when
	// each expiry was proposed, and the raft term of the entry being
	// applied.
	electedAt map[uint64]time.Duration
	expiryAt  map[reqKey]time.Duration
	applyTerm uint64

	// containers and TTL nodes: the writes on them as proposed, and the
	// nodes as the log's first applications leave them.
	nodeWrites map[reqKey]nodeWrite
	nodes      map[string]*expNode
}

// nodeWrite is a proposed write on a container or TTL node or on one of
// their children, or a leader's removal of one.
type nodeWrite struct {
	op     int32
	path   string
	timeMs int64 // the entry's time, as the proposer stamped it
	body   []byte
}

// expNode is a container or TTL node as the applied log leaves it.
type expNode struct {
	ttl      int64 // ms; 0 for a container
	mtime    int64 // entry time (ms) of its create or its last setData
	children map[string]bool
	hadChild bool
	emptyAt  time.Duration // when it was created or its last child deleted
}

func (k *checks) died(c *client) {
	// Its last request (a ping, an attach) can touch the session after
	// its last answer.
	k.dead, k.deadSess, k.deadHeard = c, c.sess, max(c.lastHeard, c.lastSent)
}

type reqKey struct {
	proposer, reqID uint64
}

type ackedWrite struct {
	client int
	zxid   int64
}

func newChecks(w *world) *checks {
	return &checks{w: w, logAt: map[int64]reqKey{}, stateAt: map[uint64]uint64{}, expiryDone: map[int64]bool{},
		nodeWrites: map[reqKey]nodeWrite{}, nodes: map[string]*expNode{},
		electedAt: map[uint64]time.Duration{}, expiryAt: map[reqKey]time.Duration{}}
}

// applied runs after member m applied the zkraft entry at raft index idx.
func (k *checks) applied(m *member, idx uint64) {
	if idx%25 != 0 {
		return
	}
	data, err := m.rep.Snapshot()
	if err != nil {
		return
	}
	k.stateHash(m, idx, data, "apply")
}

// durable runs when member m applies the entry (index, term): a committed
// entry must be on m's own disk and on the disks of a quorum. Members' disks are counted, the
// removed ones' included, against the quorum of Members-1 voters, which is
// also Members' (reconfig keeps Members-1 or Members voters, and
// world.noteVoters fails a run in which a member applies fewer), so a conf
// change between commit and apply cannot make the check wrong.
func (k *checks) durable(m *member, index, term uint64) {
	if !m.disk.holds(index, term) {
		// A member applies only what its own disk holds (consensus's
		// StateMachine contract), also when the entry is committed elsewhere.
		k.w.fail(chkDurable, "member %d applies entry %d (term %d) before its own disk holds it", m.id, index, term)
	}
	holders := 0
	for _, o := range k.w.members {
		if o.disk.holds(index, term) {
			holders++
		}
	}
	if need := (k.w.cfg.Members-1)/2 + 1; holders < need {
		k.w.fail(chkDurable, "member %d applies entry %d (term %d), which is on the disk of %d members, fewer than a quorum (%d)",
			m.id, index, term, holders, need)
	}
}

// restored checks a member's state right after it was restored from a
// snapshot.
func (k *checks) restored(m *member) {
	data, err := m.rep.Snapshot()
	if err != nil {
		k.w.fail(chkReplicas, "member %d cannot snapshot its restored state: %v", m.id, err)
		return
	}
	k.stateHash(m, m.applied, data, "restore")
}

// stateHash compares a member's state snapshot at raft index idx with every
// other state seen at that index.
func (k *checks) stateHash(m *member, idx uint64, data []byte, how string) {
	h := fnv.New64a()
	h.Write(data)
	sum := h.Sum64()
	if prev, ok := k.stateAt[idx]; !ok {
		k.stateAt[idx] = sum
	} else if prev != sum {
		k.w.fail(chkReplicas, "member %d state at index %d (after %s) differs from another member's at the same index", m.id, idx, how)
	}
}

// appliedResult runs for each applied zkraft entry on member m.
func (k *checks) appliedResult(m *member, a server.Applied) {
	key := reqKey{a.Proposer, a.ReqID}
	if prev, ok := k.logAt[a.Zxid]; !ok {
		k.logAt[a.Zxid] = key
		k.nodeApplied(a)
	} else if prev != key {
		k.w.fail(chkLog, "member %d applied proposal %d/%#x at zxid %#x, another member %d/%#x", m.id,
			a.Proposer, a.ReqID, a.Zxid, prev.proposer, prev.reqID)
	}
	if a.Type == server.ProposalExpireSession && a.Err == 0 && !k.expiryDone[a.Zxid] {
		k.expiryDone[a.Zxid] = true
		if k.dead != nil && a.SessionID == k.deadSess && k.deadGone == 0 {
			k.lastElectionBeforeGone = k.lastElection
			k.deadGone = k.w.now
		}
		k.w.tracef("session %#x expired at zxid %#x", a.SessionID, a.Zxid)
		// A new leader gives every session a fresh timeout (ZooKeeper's
		// session tracker of a new leader; issue 8 item 2): an expiry
		// committed in a term was proposed at least a session timeout
		// after that term's leader was elected.
		if at, ok := k.expiryAt[key]; ok {
			if e, ok := k.electedAt[k.applyTerm]; ok && at < e+sessionTimeout {
				k.w.fail(chkFresh, "session %#x expired by an entry of term %d proposed at %v, %v after that term's leader was elected",
					a.SessionID, k.applyTerm, at, at-e)
			}
		}
		for _, c := range k.w.clients {
			// A session is expired only after its timeout without a
			// touch reaching the leader; its client's last answer can be
			// a little later than the leader's last touch (liveness
			// reports are periodic, a cut-off member answers until it
			// notices), never by half the timeout.
			if c.sess == a.SessionID && c.lastQuorum > 0 && k.w.now-c.lastQuorum < sessionTimeout/2 {
				k.w.fail(chkExpiry, "session %#x of client %d expired at %v, %v after its client's last answer from a member in touch with the leader",
					a.SessionID, c.idx, k.w.now, k.w.now-c.lastQuorum)
			}
		}
	}
}

func (k *checks) acked(c *client, zxid int64) {
	k.ackedAt = append(k.ackedAt, ackedWrite{client: c.idx, zxid: zxid})
}

// lock and fenced counter

func (k *checks) enter(c *client, token int64) {
	if k.holder != nil && k.holder != c {
		k.w.fail(chkLock, "client %d entered the critical section at %v while client %d held the lock", c.idx, k.w.now, k.holder.idx)
	}
	k.holder = c
	k.w.tracef("client %d holds the lock (token %d)", c.idx, token)
}

func (k *checks) exit(c *client) {
	if k.holder == c {
		k.holder = nil
		k.w.tracef("client %d released the lock", c.idx)
	}
}

func (k *checks) fence(c *client, token int64) bool {
	if token < k.maxToken {
		k.w.fail(chkCounter, "client %d used token %d after token %d", c.idx, token, k.maxToken)
		return false
	}
	k.maxToken = token
	return true
}

func (k *checks) counterRead(c *client, token int64) (int64, bool) {
	return k.counter, k.fence(c, token)
}

func (k *checks) counterWrite(c *client, token, v int64) {
	if !k.fence(c, token) {
		return
	}
	k.increments++
	k.counter = v
	if k.counter != k.increments {
		k.w.fail(chkCounter, "counter %d after %d increments", k.counter, k.increments)
	}
}

// register history, checked by internal/check

// record adds one finished operation on the register to the history. A
// client's requests are answered in the order it sent them (the fifo
// checker fails the run otherwise), and an operation lost with its
// connection is recorded when the loss is noticed, before anything later
// is sent, so each client's operations are recorded in the order it issued
// them.
func (k *checks) record(op check.RegisterOp) {
	k.history = append(k.history, op)
}

// final runs the checks that need the whole run.
func (k *checks) final() {
	w := k.w
	initial := map[string]check.Register{registerPath: {Exists: true}}
	var finalRep *member
	for _, m := range w.members {
		if m.inEnsemble() && (finalRep == nil || m.applied > finalRep.applied) {
			finalRep = m
		}
	}
	data, st, ok := finalRep.rep.GetData(registerPath)
	final := map[string]check.Register{registerPath: {Exists: ok, Data: string(data), Version: st.Version, Mzxid: st.Mzxid}}
	for _, err := range []error{
		check.Linearizable(k.history, check.LinearizableOptions{Initial: initial, Timeout: 20 * time.Second}),
		check.SessionReads(k.history, initial),
		check.NoLostWrites(k.history, final),
	} {
		var v *check.Violation
		switch {
		case err == nil:
		case errors.As(err, &v):
			w.fail(v.Checker, "%s", v.Detail)
		default:
			w.fail("history", "%v", err)
		}
	}
	// Every acknowledged write is in the log at its zxid, and every member
	// (all up after the faults) applied it.
	var minApplied uint64 = math.MaxUint64
	for _, m := range w.members {
		if m.inEnsemble() {
			minApplied = min(minApplied, m.applied)
		}
	}
	for _, a := range k.ackedAt {
		if uint64(a.zxid) > minApplied {
			w.fail(chkLost, "write acknowledged to client %d at zxid %#x, a member applied only up to %#x", a.client, a.zxid, minApplied)
			break
		}
	}
	// Replicas at equal applied index hold the same state.
	var ref []byte
	var refMember *member
	for _, m := range w.members {
		if !m.inEnsemble() || (refMember != nil && m.applied != refMember.applied) {
			continue
		}
		data, _ := m.rep.Snapshot()
		if refMember == nil {
			ref, refMember = data, m
		} else if !bytes.Equal(ref, data) {
			w.fail(chkReplicas, "member %d state differs from member %d at index %d", m.id, refMember.id, m.applied)
		}
	}
	// The dead client's session expired, with its ephemerals, in time.
	if k.dead != nil && k.deadSess != 0 {
		// A new leader gives every session a fresh timeout, and a request
		// sent before the faults stopped can touch the session as late as
		// the resume of the paused member holding it.
		limit := max(k.deadHeard, k.lastElectionBeforeGone, k.healedAt) + sessionTimeout + ephemeralBound
		var lockNodes []string
		children, _ := finalRep.rep.GetChildren(lockPath)
		for _, ch := range children {
			if strings.HasPrefix(ch, fmt.Sprintf("c%d-%x-", k.dead.idx, k.deadSess)) {
				lockNodes = append(lockNodes, ch)
			}
		}
		switch {
		case k.deadGone == 0 && finalRep.rep.HasSession(k.deadSess) && w.now > max(k.deadHeard, k.lastElection, k.healedAt)+sessionTimeout+ephemeralBound:
			w.fail(chkEphemral, "session %#x of client %d, dead since %v, still live at the end (%d lock nodes)",
				k.deadSess, k.dead.idx, k.deadHeard, len(lockNodes))
		case k.deadGone > limit:
			w.fail(chkEphemral, "session %#x of client %d, last request or answer at %v, expired only at %v (bound %v)",
				k.deadSess, k.dead.idx, k.deadHeard, k.deadGone, limit)
		case len(lockNodes) > 0 && !finalRep.rep.HasSession(k.deadSess):
			w.fail(chkEphemral, "lock node %s of expired session %#x still present", lockNodes[0], k.deadSess)
		}
	}
	k.finalNodes()
	// Progress once faults stopped: every client got an answer late in the
	// run, and every member caught up.
	if w.cfg.Duration-k.healedAt >= 8*time.Second {
		for _, c := range w.clients {
			// A client the fault schedule paused before the faults stopped
			// may resume later (pauseUntilExpiry waits for its session's
			// expiry deadline, which leader changes move): it is judged
			// from its resumption on, and not at all if it resumed too
			// late in the run for the same 6 s.
			from := max(k.healedAt, c.resumedAt)
			if w.cfg.Duration-from < 8*time.Second {
				continue
			}
			if c.lastOK < from+6*time.Second && !c.dead {
				w.fail(chkProgress, "client %d completed no operation after %v (faults stopped at %v)", c.idx, from+6*time.Second, k.healedAt)
				break
			}
		}
		var maxApplied uint64
		for _, m := range w.members {
			maxApplied = max(maxApplied, m.applied)
		}
		for _, m := range w.members {
			if m.inEnsemble() && m.applied+50 < maxApplied {
				w.fail(chkProgress, "member %d applied %d, another member %d", m.id, m.applied, maxApplied)
			}
		}
	}
}

// containers and TTL nodes

// noteWrite records a write on a container or TTL node (or a child of
// one), or a leader's removal of one, as proposed (key) on a member.
func (k *checks) noteWrite(key reqKey, op int32, path string, timeMs int64, body []byte) {
	k.nodeWrites[key] = nodeWrite{op: op, path: path, timeMs: timeMs, body: body}
}

// simTime is the simulated time of an entry time in ms.
func simTime(ms int64) time.Duration {
	return time.Duration(ms-simEpochSeconds*1000) * time.Millisecond
}

// nodeApplied follows the containers and TTL nodes through the first
// application of each zxid, and checks each removal the leader decided: a
// container only once empty and after it had a child (as ZooKeeper), a TTL
// node only with no child and more than its TTL after its last
// modification, measured from the modification's entry time to the
// simulated time the removal first applied.
func (k *checks) nodeApplied(a server.Applied) {
	wr, ok := k.nodeWrites[reqKey{a.Proposer, a.ReqID}]
	if !ok || a.Err != 0 {
		return
	}
	parent := wr.path[:strings.LastIndexByte(wr.path, '/')]
	switch wr.op {
	case jute.OpCreateContainer, jute.OpCreateTTL:
		n := &expNode{children: map[string]bool{}, mtime: wr.timeMs, emptyAt: k.w.now}
		if wr.op == jute.OpCreateTTL {
			var req jute.CreateTTLRequest
			if err := jute.Unmarshal(wr.body, &req); err != nil {
				k.w.fail(chkNodes, "TTL create of %s: %v", wr.path, err)
				return
			}
			n.ttl = req.TTL
		}
		k.nodes[wr.path] = n
	case jute.OpCreate:
		if n := k.nodes[parent]; n != nil {
			n.children[wr.path], n.hadChild = true, true
		}
	case jute.OpDelete:
		if n := k.nodes[parent]; n != nil && n.children[wr.path] {
			delete(n.children, wr.path)
			if len(n.children) == 0 {
				n.emptyAt = k.w.now
			}
		}
	case jute.OpSetData:
		if n := k.nodes[wr.path]; n != nil {
			n.mtime = wr.timeMs
		}
	case server.ProposalDeleteContainer, server.ProposalDeleteTTL:
		n := k.nodes[wr.path]
		now := clock{k.w}.Now().UnixMilli()
		switch {
		case n == nil:
			k.w.fail(chkNodes, "leader removed %s, which no applied create made", wr.path)
		case len(n.children) > 0:
			k.w.fail(chkNodes, "leader removed %s with %d children", wr.path, len(n.children))
		case n.ttl == 0 && !n.hadChild:
			k.w.fail(chkNodes, "leader removed container %s, which never had a child", wr.path)
		case n.ttl > 0 && now-n.mtime <= n.ttl:
			k.w.fail(chkNodes, "leader removed TTL node %s %d ms after its last modification, its TTL is %d ms",
				wr.path, now-n.mtime, n.ttl)
		}
		k.w.tracef("%s removed at zxid %#x", wr.path, a.Zxid)
		delete(k.nodes, wr.path)
	}
}

// finalNodes: once the faults stopped, every empty container that had a
// child and every childless TTL node past its TTL was removed in time.
func (k *checks) finalNodes() {
	for _, p := range slices.Sorted(maps.Keys(k.nodes)) {
		n := k.nodes[p]
		if len(n.children) > 0 || (n.ttl == 0 && !n.hadChild) {
			continue
		}
		due := n.emptyAt
		if n.ttl > 0 {
			due = max(due, simTime(n.mtime+n.ttl+1))
		}
		if limit := max(due, k.healedAt) + containerTicks*raftTick + nodeRemovalBound; limit < k.w.now {
			k.w.fail(chkNodes, "%s removable since %v, still there at %v (bound %v)", p, due, k.w.now, limit)
			return
		}
	}
}

// FIFO client order, per connection (chkFifo): replies come in the order
// the requests were sent, reply zxids never go backwards, a read sent after
// a write of the connection shows it, a write sent after a read, sync or any
// other request of the connection is applied after it was answered (its
// zxid is above every zxid an earlier reply carried or showed), and a
// watch's event comes before any reply that shows the change it announces.

const chkFifo = "fifo"

// fifoConn is what the FIFO checker knows of a client's current
// connection; a new connection starts afresh.
type fifoConn struct {
	zxid    int64 // highest reply zxid so far
	zxidXid int32 // the xid of the reply that carried it
	// the connection's last successful setData of the register: the
	// replies of reads sent after it must show it or a later write
	wrote     bool
	wroteXid  uint64
	wroteZxid int64
	wroteData string
	// watches set and not fired: path -> the mzxid the watching read saw
	armed map[string]int64
	// the highest zxid a reply to a request (not a ping) carried or showed
	// so far, and the xid of that request: a later write's zxid is above
	// it, or the write was applied before an earlier request was answered
	shown    int64
	shownXid uint64
}

// event notes a notification for path: its watch fired.
func (f *fifoConn) event(path string) { delete(f.armed, path) }

// fifoZxid checks the zxid of a reply (or ping reply) to xid on c's
// connection against the replies before it.
func (k *checks) fifoZxid(c *client, xid int32, zxid int64) {
	f := &c.order
	if zxid <= 0 { // replies that carry no zxid (auth: 0)
		return
	}
	if zxid < f.zxid {
		k.w.fail(chkFifo, "client %d connection %d: reply to xid %d carries zxid %#x after the reply to xid %d carried %#x",
			c.idx, c.connID, xid, zxid, f.zxidXid, f.zxid)
		return
	}
	f.zxid, f.zxidXid = zxid, xid
}

// fifoReply checks a successful reply to cl (replies arrive in order, so
// every reply before it answered a request sent before cl's): a read of
// the register shows the connection's last write of it, and no reply shows
// a change to a watched node whose event did not come first. Then it notes
// cl's write or watch.
func (k *checks) fifoReply(c *client, cl *call, resp *response) {
	f := &c.order
	// A write applied, successful, carries its own zxid; a refused one
	// (before proposing, or at apply) may carry the applied zxid instead.
	if resp.err == 0 && isWriteOp(cl.op) && resp.zxid <= f.shown {
		k.w.fail(chkFifo, "client %d connection %d: write (xid %d) has zxid %#x, but the reply to xid %d, sent before it, carried or showed %#x: the write overtook it",
			c.idx, c.connID, cl.xid, resp.zxid, f.shownXid, f.shown)
	}
	seen := resp.zxid
	if resp.err == 0 && (cl.op == jute.OpSetData || cl.op == jute.OpGetData || cl.op == jute.OpExists) {
		seen = max(seen, resp.stat.Mzxid)
	}
	if seen > f.shown {
		f.shown, f.shownXid = seen, cl.xid
	}
	if resp.err != 0 {
		return
	}
	shows := cl.op == jute.OpSetData || cl.op == jute.OpGetData || cl.op == jute.OpExists
	if !shows {
		return
	}
	if cl.path == registerPath && f.wrote && cl.op != jute.OpSetData {
		switch {
		case resp.stat.Mzxid < f.wroteZxid:
			k.w.fail(chkFifo, "client %d connection %d: read (xid %d) sent after its write (xid %d, zxid %#x) shows mzxid %#x",
				c.idx, c.connID, cl.xid, f.wroteXid, f.wroteZxid, resp.stat.Mzxid)
		case cl.op == jute.OpGetData && resp.stat.Mzxid == f.wroteZxid && string(resp.data) != f.wroteData:
			k.w.fail(chkFifo, "client %d connection %d: read (xid %d) after its write (xid %d) of %q at zxid %#x shows %q",
				c.idx, c.connID, cl.xid, f.wroteXid, f.wroteData, f.wroteZxid, resp.data)
		}
	}
	if at, ok := f.armed[cl.path]; ok && resp.stat.Mzxid > at {
		k.w.fail(chkFifo, "client %d connection %d: reply to xid %d shows %s changed at zxid %#x, after its watch was set (mzxid %#x), before the watch's event",
			c.idx, c.connID, cl.xid, cl.path, resp.stat.Mzxid, at)
		delete(f.armed, cl.path)
	}
	if cl.op == jute.OpSetData && cl.path == registerPath {
		f.wrote, f.wroteXid, f.wroteZxid, f.wroteData = true, cl.xid, resp.stat.Mzxid, cl.data
	}
	if cl.watch {
		if f.armed == nil {
			f.armed = map[string]int64{}
		}
		f.armed[cl.path] = resp.stat.Mzxid
	}
}

// isWriteOp reports a request applied as an entry of its own (its reply
// carries the entry's zxid).
func isWriteOp(op int32) bool {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti, jute.OpCloseSession:
		return true
	}
	return false
}
