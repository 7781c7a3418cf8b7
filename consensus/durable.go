package consensus

import (
	"bytes"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/internal/mutation"
)

// Leader durability notices: a follower of a group of three voters that
// knows an entry of the leader's term is durable on the leader and on its
// own disk knows that entry is committed (a majority holds it: raft
// §5.3, an entry is committed once the leader that created it has it on a
// majority), and applies it (and every entry before it) without waiting
// for its own acknowledgement to reach the leader and the commit index to
// come back: two messages, about 200-300 µs on a shared machine, on the
// write of every client of the followers (two thirds of them).
//
// The leader sends each other voter, once a write that carried entries of
// its term returned, a notice: a MsgHeartbeat whose Context is
// durableContext, Term the leader's term and Index the last index it
// wrote. Like an acknowledgement it vouches for the leader's disk, so it
// leaves only after the write (persist before send). The follower's Core
// takes it out of the message stream (raft never sees it) and records it
// if it comes from the leader it follows in its current term. It then
// applies, from the MemoryStorage mirror (durable entries only), every
// entry up to hi = min(notice index, its own last durable index) if the
// entry at hi has the notice's term: that entry is the leader's own (one
// leader per term, and it never rewrites its log in its term), the log
// before it is the leader's (Log Matching), and both disks hold all of it.
// It does so only while its applied configuration is three voters,
// itself and the leader among them, not joint, and (applyMirrored) only up
// to the first conf change, so the two disks are a majority of the
// configuration the entries are counted in. Raft on the follower learns
// the commit index later as usual; the entries applied ahead of it are
// skipped when raft hands them out (applyCommitted), as after
// StepWhileWriting.

// A client of a follower may so see an entry committed before the leader
// knows it is: a read index the leader answers (a sync, ZooKeeper's) must
// still cover it, or a read after a sync could miss a write another client
// saw acknowledged before the sync began. So the leader answers no read
// index below the highest index it announced in a notice (noticed;
// raiseReadIndexes, and FinishReady for its own reads): the reader then
// waits until its member applied that far, which it does once those
// entries are committed (or replaced: the index is reached either way).

// durableContext marks a leader's durability notice (a MsgHeartbeat's
// Context, which zkraft's raft traffic never uses otherwise: read index
// contexts go with MsgReadIndex and its answers).
var durableContext = []byte("zkraft:leader-durable")

// isDurableNotice reports whether m is a leader's durability notice.
func isDurableNotice(m *pb.Message) bool {
	return m.GetType() == pb.MsgHeartbeat && bytes.Equal(m.GetContext(), durableContext)
}

// twoAreQuorum reports whether this member and lead are two of exactly
// three voters of cs, in a configuration that is not joint: then their two
// disks are a majority.
func (c *Core) twoAreQuorum(cs *pb.ConfState, lead uint64) bool {
	v := cs.GetVoters()
	return len(v) == 3 && len(cs.GetVotersOutgoing()) == 0 && lead != c.cfg.ID &&
		slices.Contains(v, c.cfg.ID) && slices.Contains(v, lead)
}

// durableNotices returns, on a leader, the notices for a Ready whose write
// holds entries: one to each other voter, saying the leader's log is
// durable through the last of them. Nil otherwise. Sent after the write.
func (c *Core) durableNotices(rd *raft.Ready) []*pb.Message {
	n := len(rd.Entries)
	if c.transport == nil || n == 0 || !c.isLeader.Load() {
		return nil
	}
	last := rd.Entries[n-1]
	cs := c.ConfState()
	if len(cs.GetVoters()) != 3 || len(cs.GetVotersOutgoing()) != 0 {
		return nil
	}
	var out []*pb.Message
	for _, id := range cs.GetVoters() {
		if id == c.cfg.ID {
			continue
		}
		out = append(out, &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(c.cfg.ID), To: new(id),
			Term: new(last.GetTerm()), Index: new(last.GetIndex()), Context: durableContext})
	}
	return out
}

// noteDurable records a leader's durability notice (Step, on the Core's
// goroutine) if it comes from the leader this member follows in its
// current term, and marks an apply pending (HasReady) if it may let this
// member apply more.
func (c *Core) noteDurable(m *pb.Message) {
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != m.GetTerm() || st.Lead != m.GetFrom() {
		return
	}
	if m.GetTerm() != c.ldTerm || m.GetFrom() != c.ldFrom {
		c.ldTerm, c.ldFrom, c.ldIndex = m.GetTerm(), m.GetFrom(), 0
	}
	if m.GetIndex() > c.ldIndex {
		c.ldIndex = m.GetIndex()
		c.inferPending = c.inferPending || c.ldIndex > c.applied.get()
	}
}

// inferredCommit returns the highest index this member knows to be
// committed from the leader's notice and its own disk, whose log up to
// lastDurable is durable in the mirror; 0 if none (see the comment at the
// top of this file).
func (c *Core) inferredCommit(lastDurable uint64) uint64 {
	hi := min(c.ldIndex, lastDurable)
	if hi <= c.applied.get() || !c.twoAreQuorum(c.ConfState(), c.ldFrom) {
		return 0
	}
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != c.ldTerm || st.Lead != c.ldFrom {
		return 0
	}
	if t, err := c.mem.Term(hi); err != nil || t != c.ldTerm {
		return 0
	}
	return hi
}

// applyInferred applies, from the mirror, the entries up to the commit
// index inferredCommit finds for lastDurable.
func (c *Core) applyInferred(lastDurable uint64) error {
	if c.ldIndex <= c.applied.get() {
		return nil
	}
	if hi := c.inferredCommit(lastDurable); hi > 0 {
		return c.applyMirrored(hi)
	}
	return nil
}

// noticeEarly reports whether the known-wrong notice-before-write mutation
// is on: the leader's notices leave when its write starts.
func noticeEarly() bool { return mutation.Enabled(mutation.NoticeBeforeWrite) }

// raiseReadIndexes raises the read index of the leader's answers to
// followers' ReadIndex requests (MsgReadIndexResp among msgs, replaced by
// copies) to at least noticed (see the top of this file).
func (c *Core) raiseReadIndexes(msgs []*pb.Message) {
	if c.readFloor() == 0 {
		return
	}
	for i, m := range msgs {
		if m.GetType() == pb.MsgReadIndexResp && m.GetIndex() < c.readFloor() {
			r := proto.Clone(m).(*pb.Message)
			r.Index = new(c.readFloor())
			msgs[i] = r
		}
	}
}

// readFloor is the lowest read index this member answers: noticed, or 0
// under the known-wrong read-below-notice mutation.
func (c *Core) readFloor() uint64 {
	if mutation.Enabled(mutation.ReadBelowNotice) {
		return 0
	}
	return c.noticed
}
