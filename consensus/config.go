package consensus

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"

	"github.com/zkraft/zkraft/internal/mutation"
)

// Defaults applied by Start to zero-valued Config fields.
const (
	DefaultTickInterval   = 100 * time.Millisecond
	DefaultElectionTicks  = 10
	DefaultHeartbeatTicks = 1
	DefaultSnapshotEvery  = 10000
	DefaultKeepEntries    = 5000

	// maxSizePerMsg bounds the bytes of entries in one append message and
	// in one Ready's CommittedEntries.
	maxSizePerMsg = 1 << 20
	// maxInflightMsgs bounds the append messages in flight to one follower.
	maxInflightMsgs = 256
)

// maxUncommittedBytes bounds the uncommitted tail on the leader; past it
// raft drops proposals (Propose returns an error) instead of growing memory
// without bound. A variable only so that tests can reach it.
var maxUncommittedBytes uint64 = 64 << 20

// Peer names one member of the raft group.
type Peer struct {
	ID   uint64 // raft member id (ZooKeeper myid), never 0, never reused
	Addr string // host:peerPort, used by the TCP transport
	// Observer makes the member a raft learner that is never promoted:
	// it receives the log but never votes (ZooKeeper's observer).
	Observer bool
}

// Config configures a Node. Zero-valued durations and counts take the
// Default* constants.
type Config struct {
	ID             uint64        // this member's id (myid); standalone uses 1
	Peers          []Peer        // initial members including self; standalone: [{ID:1}]
	DataDir        string        // raft log <DataDir>/wal/, bbolt file <DataDir>/raft.db, snapshot files <DataDir>/snap/
	TickInterval   time.Duration // raft logical clock period, default 100ms
	ElectionTicks  int           // election timeout in ticks, default 10
	HeartbeatTicks int           // heartbeat period in ticks, default 1
	SnapshotEvery  uint64        // take a snapshot after this many applied entries since the last one (default 10000; in a group, after between half of it and all of it, per member)
	KeepEntries    uint64        // entries kept behind a snapshot for slow followers (default 5000)
	Transport      Transport     // nil => single-member, no network
	Logger         zerolog.Logger
	// OnLeaderChange is called from the raft goroutine whenever this
	// member's view of the leader or of its own leadership changes, after the
	// committed entries of the same Ready have been applied. It must not block
	// and must not call back into Node methods that wait (Propose, ReadIndex,
	// WaitApplied, Stop).
	OnLeaderChange func(isLeader bool, leaderID uint64, term uint64)
	// OnRemoved is called from the raft goroutine when this member applies
	// its own removal from the group (Node.Removed is then true). Same
	// rules as OnLeaderChange: it must not block or wait on the Node.
	OnRemoved func()
	// IsObserver tells, for a learner whose adding conf change this
	// member did not apply (it restored a snapshot taken after it), whether
	// it is an observer (never promoted). Called on the core's goroutine;
	// it must not block. Nil: such learners are voters to be. See
	// observers.go.
	IsObserver func(id uint64) bool
	// Join starts a member with empty storage without bootstrapping a new
	// group: it waits to be added by the existing group (AddMember on the
	// leader) and receives the log or a snapshot from the leader.
	Join bool
}

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the first invalid field. Start needs a DataDir.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, errors.New("config: DataDir is required")
	}
	return c.coreDefaults()
}

// coreDefaults is withDefaults without the DataDir, which a Core (given its
// Storage) does not use.
func (c Config) coreDefaults() (Config, error) {
	if c.ID == 0 {
		return c, errors.New("config: ID must be non-zero")
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.ElectionTicks <= c.HeartbeatTicks {
		return c, fmt.Errorf("config: ElectionTicks (%d) must exceed HeartbeatTicks (%d)", c.ElectionTicks, c.HeartbeatTicks)
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.KeepEntries == 0 {
		c.KeepEntries = DefaultKeepEntries
	}
	if len(c.Peers) == 0 && !c.Join {
		c.Peers = []Peer{{ID: c.ID}}
	}
	seen := make(map[uint64]bool, len(c.Peers))
	self := false
	for _, p := range c.Peers {
		if p.ID == 0 {
			return c, errors.New("config: peer ID must be non-zero")
		}
		if seen[p.ID] {
			return c, fmt.Errorf("config: duplicate peer ID %d", p.ID)
		}
		seen[p.ID] = true
		self = self || p.ID == c.ID
	}
	if !self && !c.Join {
		return c, fmt.Errorf("config: Peers must include this member (ID %d)", c.ID)
	}
	if c.Transport == nil && (len(c.Peers) > 1 || c.Join) {
		return c, fmt.Errorf("config: %d peers (join=%v) need a Transport", len(c.Peers), c.Join)
	}
	return c, nil
}

// RaftConfig is the raft configuration every zkraft member runs with: check
// quorum and pre-vote on, a removed leader steps down, and zkraft's message
// and inflight limits. It is exported for tools that drive raft themselves
// (the deterministic simulator) so that they run the same protocol options.
func RaftConfig(id uint64, electionTicks, heartbeatTicks int, storage raft.Storage, applied uint64, logger raft.Logger) *raft.Config {
	c := &raft.Config{
		ID:                        id,
		ElectionTick:              electionTicks,
		HeartbeatTick:             heartbeatTicks,
		Storage:                   storage,
		Applied:                   applied,
		MaxSizePerMsg:             maxSizePerMsg,
		MaxCommittedSizePerReady:  maxSizePerMsg,
		MaxUncommittedEntriesSize: maxUncommittedBytes,
		MaxInflightMsgs:           maxInflightMsgs,
		CheckQuorum:               true,
		PreVote:                   true,
		StepDownOnRemoval:         true,
		Logger:                    logger,
	}
	if mutation.Enabled(mutation.LeaseReads) {
		// Known wrong: leadership is assumed from the election timeout
		// instead of confirmed by a quorum round, which a paused or cut-off
		// leader gets wrong.
		c.ReadOnlyOption = raft.ReadOnlyLeaseBased
	}
	return c
}
