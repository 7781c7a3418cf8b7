package consensus

import (
	"bytes"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Observers.
//
// An observer (ZooKeeper's peerType=observer) is a raft learner that stays
// a learner: it receives the log and serves clients but never votes and
// never counts for quorum. Raft's ConfState does not say why a member is a
// learner, so the log does: the conf change that adds an observer carries
// observerTag after the address in its context, and every member records
// what the conf changes it applies say (Core.observers). A group
// bootstrapped with observers starts from a snapshot at index 1 whose
// ConfState lists them as learners (bootstrapWithLearners), and every member
// knows them from its Config.Peers. A member that restored a snapshot past
// an observer's conf change asks Config.IsObserver (the server's published
// membership, which the snapshot carries).
//
// The leader never promotes an observer (maybePromote) and refuses a
// proposal that would (checkConfChange). Turning a voter into an observer or
// back is refused (errRoleChange).
//
// One narrow window remains: a member that restarted from a snapshot taken
// after an observer's conf change but before reconfig published the new
// /zookeeper/config, and that leads before that entry is applied, knows the
// learner from neither source and treats it as a voter to be. Reconfig
// publishes the config right after the learner was added, and the leader
// promotes only a learner that has caught up with it.
//
// Members of older builds read the context as an address and cannot run
// next to observers: every member must know them.

// observerTag ends the context of a conf change that adds an observer.
const observerTag = "\x00observer"

// errRoleChange refuses a change of a member between voter and observer.
var errRoleChange = fmt.Errorf("%w: changing a member between voter and observer", errRefusedChange)

// peerContext is the conf change context that adds p: its address, and
// observerTag for an observer.
func peerContext(p Peer) []byte {
	if p.Observer {
		return []byte(p.Addr + observerTag)
	}
	return []byte(p.Addr)
}

// parseContext reads a conf change context written by peerContext.
func parseContext(ctx []byte) (addr string, observer bool) {
	if a, ok := bytes.CutSuffix(ctx, []byte(observerTag)); ok {
		return string(a), true
	}
	return string(ctx), false
}

// noteObserver records what an applied conf change says about member id.
// Core goroutine.
func (c *Core) noteObserver(t pb.ConfChangeType, id uint64, observer bool) {
	if c.observers == nil {
		c.observers = map[uint64]bool{}
	}
	switch t {
	case pb.ConfChangeAddLearnerNode:
		c.observers[id] = observer
	case pb.ConfChangeAddNode:
		c.observers[id] = false
	case pb.ConfChangeRemoveNode:
		delete(c.observers, id)
	}
}

// isObserver reports whether learner id is an observer: as the conf change
// that added it says, else as Config.IsObserver says. Core goroutine.
func (c *Core) isObserver(id uint64) bool {
	if o, ok := c.observers[id]; ok {
		return o
	}
	// A group bootstrapped with observers has no conf change marking them
	// in its log: after a restart its own peer list still names them (a
	// member's role never changes).
	if slices.ContainsFunc(c.cfg.Peers, func(p Peer) bool { return p.ID == id && p.Observer }) {
		return true
	}
	return c.cfg.IsObserver != nil && c.cfg.IsObserver(id)
}

// hasObservers reports whether peers name an observer.
func hasObservers(peers []Peer) bool {
	return slices.ContainsFunc(peers, func(p Peer) bool { return p.Observer })
}

// bootstrapWithLearners makes the empty storage that of a new group whose
// members are cfg.Peers, observers as learners: a snapshot of the empty
// state machine at index 1, term 1 with that ConfState (raft's Bootstrap
// only adds voters). Every member of the group writes the same.
func (c *Core) bootstrapWithLearners() error {
	cs := &pb.ConfState{}
	for _, p := range c.cfg.Peers {
		if p.Observer {
			cs.Learners = append(cs.Learners, p.ID)
		} else {
			cs.Voters = append(cs.Voters, p.ID)
		}
	}
	if len(cs.Voters) == 0 {
		return ErrLastVoter
	}
	data, err := c.sm.Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot the empty state machine: %w", err)
	}
	one := uint64(1)
	if err := c.store.SaveSnapshot(one, one, data); err != nil {
		return fmt.Errorf("save bootstrap snapshot: %w", err)
	}
	err = c.store.Write(&WriteBatch{
		Snapshot:  SeedMetadata(one, one, cs),
		HardState: &pb.HardState{Term: &one, Commit: &one},
		ConfState: cs,
	})
	if err != nil {
		return fmt.Errorf("record bootstrap snapshot: %w", err)
	}
	c.observers = map[uint64]bool{}
	pu, _ := c.transport.(PeerUpdater)
	for _, p := range c.cfg.Peers {
		c.observers[p.ID] = p.Observer
		if pu != nil && p.ID != c.cfg.ID && p.Addr != "" {
			pu.AddPeer(Peer{ID: p.ID, Addr: p.Addr})
		}
	}
	return nil
}
