package consensus

import (
	"slices"

	"go.etcd.io/raft/v3"
)

// Status is a point-in-time view of a Node, for monitoring and tests.
type Status struct {
	ID                uint64
	Term              uint64
	Vote              uint64
	Lead              uint64 // 0 when no leader is known; same view as Propose and IsLeader
	Commit            uint64
	Applied           uint64
	IsLeader          bool
	RaftState         string   // StateFollower, StateCandidate, StatePreCandidate or StateLeader
	Voters            []uint64 // sorted, as of the applied index
	Learners          []uint64 // sorted, as of the applied index
	LastSnapshotIndex uint64
	FirstIndex        uint64 // first log entry kept in memory
	LastIndex         uint64 // last log entry
	LogEntries        uint64 // entries kept in memory (LastIndex-FirstIndex+1)
	PersistBatches    uint64 // bbolt transactions that carried log entries
	PersistedEntries  uint64 // log entries written to bbolt
	SnapshotsTaken    uint64 // local snapshots taken since start (not those received from a leader)
	Stopped           bool
}

// Status returns the node's current status. It is safe to call at any time,
// from any goroutine (the loop's callbacks included: it never waits for the
// loop), also after Stop (Vote and Commit are then zero).
func (n *Node) Status() Status {
	c := n.core
	s := Status{
		ID:                n.cfg.ID,
		Term:              c.term.Load(),
		Vote:              c.vote.Load(),
		Lead:              c.lead.Load(),
		Commit:            c.commit.Load(),
		Applied:           c.applied.get(),
		IsLeader:          c.isLeader.Load(),
		RaftState:         raft.StateType(c.raftState.Load()).String(),
		LastSnapshotIndex: c.snapIndex.Load(),
		PersistBatches:    c.batches.Load(),
		PersistedEntries:  c.persisted.Load(),
		SnapshotsTaken:    c.snapsTaken.Load(),
	}
	if cs := c.confState.Load(); cs != nil {
		s.Voters = slices.Sorted(slices.Values(cs.GetVoters()))
		s.Learners = slices.Sorted(slices.Values(cs.GetLearners()))
	}
	first, _ := c.mem.FirstIndex()
	last, _ := c.mem.LastIndex()
	s.FirstIndex, s.LastIndex = first, last
	if last >= first {
		s.LogEntries = last - first + 1
	}
	select {
	case <-n.done:
		s.Stopped = true
		s.Vote, s.Commit = 0, 0
	default:
	}
	return s
}
