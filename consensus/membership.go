package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/zkraft/zkraft/internal/mutation"
)

// Membership changes.
//
// The Core decides and drives them (memberchange.go: Core.ChangeMembers,
// StartMemberChange, CancelMemberChange), on its goroutine; Node's
// AddMember, RemoveMember and ChangeMembers queue a change to the loop and
// wait for its outcome, and the simulator (internal/sim) calls the Core.
//
// Every change is computed from raft's own ConfState (as of this member's
// applied index), never from a copy kept elsewhere, and goes through the log
// as one ConfChangeV2 with one change at a time:
//
//  1. A new member is added as a learner: it receives the log (or a
//     snapshot) but does not count for quorum, so adding a member that is
//     not running yet cannot cost the group its quorum.
//  2. The leader promotes a learner to voter once it has caught up (its
//     replication is streaming, it is at most promoteMaxLag entries behind
//     the commit index, and it was heard from within an election timeout).
//     An observer is a learner that is never promoted (observers.go).
//  3. Removals come last, the current leader's own removal after the others.
//
// Raft accepts a conf change only when every earlier one was applied by the
// leader; otherwise it silently turns the proposal into an empty entry. So a
// change is proposed only after the previous one was applied here and raft
// was told so (Advance), and re-proposed when it did not take effect within
// an election timeout (a forwarded proposal can reach a leader that has not
// applied the previous change yet). Re-proposing is safe because every step
// is idempotent (a second copy carries the same base, which the first copy
// changed, so it applies as no change) and the leader refuses a change that
// would undo an applied one (demoting a voter to learner, promoting a
// member that is not a learner).
//
// Each step carries the conf state it was planned against (its base) and is
// applied only on top of it; on any other conf state every member applies
// it as no change (confbase.go). A change also checks, before each step,
// that the conf state applied here is the one its plan expects, and fails
// with ErrMembershipChanged if another change moved it: two changes that
// race never combine into a membership neither asked for; a change that
// fails so while learners it added wait for promotion removes them first,
// so that the leader does not promote them after the caller was told the
// change failed. The leader's promotions (rule 2) and a rollback's removals
// carry no base. A change's caller passes the conf state it computed the
// target from, and the change fails at once if that is not the applied one.
//
// A change of the voters is refused if it leaves no voter (ErrLastVoter) or
// if fewer than a majority of the new voters are known to be running
// (ErrNoActiveQuorum). Only the leader hears from every member, so the
// running check is made on the leader, both for its own proposals and for
// those that followers forward to it (Step); a follower only checks what it
// can know (the last voter).

var (
	// ErrLastVoter is returned for a membership change that would leave
	// the group without a voter.
	ErrLastVoter = errors.New("consensus: membership change removes the last voter")
	// ErrNoActiveQuorum is returned for a membership change after which
	// fewer than a majority of the voters are known to be running.
	ErrNoActiveQuorum = errors.New("consensus: membership change leaves no majority of running voters")
	// ErrNotCaughtUp is returned by AddMember and ChangeMembers when a new
	// member did not catch up with the leader (and so was not promoted to
	// voter) before the context ended. The members the call added were
	// removed again.
	ErrNotCaughtUp = errors.New("consensus: new member did not catch up")
	// ErrMembershipChanged is returned for a membership change when the
	// conf state raft applied here is no longer the one the change expects
	// (the one it was planned against, moved along by its own steps):
	// another change was applied meanwhile, or an earlier change (one whose
	// caller gave up, for example) was committed but applied here only
	// after this one was planned. A step planned against the old
	// membership is applied as no change on every member (confbase.go), so
	// the membership is never moved somewhere other than the target; the
	// steps applied before stay applied, except that learners the change
	// added that were not all promoted yet are removed again before the
	// error is reported. A change whose caller computed its target from a
	// conf state other than the applied one fails with it at once
	// (Core.ChangeMembers). ZooKeeper's reconfig answers
	// ReconfigInProgress in this case.
	ErrMembershipChanged = errors.New("consensus: membership changed while the change ran")
	// errRefusedChange marks a conf change that would undo an applied one.
	errRefusedChange = errors.New("consensus: conf change conflicts with the applied membership")
)

// promoteMaxLag is how many entries behind the leader's commit index a
// learner may be and still be promoted to voter.
const promoteMaxLag = 128

// AddMember adds p to the group: first as a learner (its Addr travels in the
// conf change so every member's transport learns it), then, once it has
// caught up with the leader, as a voter. It returns when this member has
// applied p's promotion. The new member must be started with Config.Join;
// if it does not catch up before ctx ends, it is removed again and the error
// wraps ErrNotCaughtUp.
func (n *Node) AddMember(ctx context.Context, p Peer) error {
	if p.ID == 0 {
		return errors.New("consensus: add member: id must be non-zero")
	}
	return n.memberChange(ctx, func(c *Core, done func(error)) *MemberChange {
		return c.StartMemberChange([]Peer{p}, nil, done)
	})
}

// RemoveMember removes member id (voter or learner) and waits until this
// member has applied the change. It refuses (ErrLastVoter,
// ErrNoActiveQuorum) a removal that would leave the group unable to commit.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	return n.memberChange(ctx, func(c *Core, done func(error)) *MemberChange {
		return c.StartMemberChange(nil, []uint64{id}, done)
	})
}

// ChangeMembers makes the voters exactly target, which the caller computed
// from the conf state base (for example Status's Voters and Learners):
// members not in base are added (as learners, promoted once caught up),
// members of base not in target are removed. Addresses are used for new
// members only. It returns when this member has applied the last change; on
// error the changes applied so far stay applied, except that new members
// that were not all promoted are removed again. If the conf state applied
// here is not base when the loop starts the change, or moves under it
// (another change ran, or one committed before was applied here only now),
// it fails with ErrMembershipChanged: no step of it applies on top of the
// other change, and the learners it added are removed again as above. The
// decisions are the Core's (Core.ChangeMembers, MemberChange); this queues
// the change to the loop and waits for its outcome.
func (n *Node) ChangeMembers(ctx context.Context, base *pb.ConfState, target []Peer) error {
	return n.memberChange(ctx, func(c *Core, done func(error)) *MemberChange {
		return c.ChangeMembers(base, target, done)
	})
}

// memberChange starts a membership change on the loop and waits for its
// outcome. When ctx ends first the change is cancelled
// (Core.CancelMemberChange) and its final outcome awaited: a rollback of
// new members takes at most three election timeouts.
func (n *Node) memberChange(ctx context.Context, start func(*Core, func(error)) *MemberChange) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	errC := make(chan error, 1)
	done := func(err error) { errC <- err }
	var mc *MemberChange // set and read on the loop only
	n.q.push(func(n *Node) { mc = start(n.core, done) })
	select {
	case err := <-errC:
		return err
	case <-ctx.Done():
	case <-n.done:
		return ErrStopped
	}
	cause := ctx.Err()
	n.q.push(func(n *Node) { n.core.CancelMemberChange(mc, cause) })
	select {
	case err := <-errC:
		return err
	case <-n.done:
		return ErrStopped
	}
}

// checkConfChange refuses cc if, applied to cs, it would undo an applied
// change or leave the voters without a running majority. The running check
// needs the leader's view (onLeader); elsewhere every member counts as
// running and the leader checks again.
func (c *Core) checkConfChange(cs *pb.ConfState, cc *pb.ConfChangeV2, onLeader bool) error {
	voters := slices.Clone(cs.GetVoters())
	changed := false
	for _, ch := range cc.GetChanges() {
		id := ch.GetNodeId()
		isVoter := slices.Contains(voters, id)
		switch ch.GetType() {
		case pb.ConfChangeAddLearnerNode:
			if isVoter {
				return fmt.Errorf("%w: member %d is a voter, not demoting it", errRefusedChange, id)
			}
		case pb.ConfChangeAddNode:
			if !isVoter && !slices.Contains(cs.GetLearners(), id) && !mutation.Enabled(mutation.SkipLearner) {
				return fmt.Errorf("%w: member %d must join as a learner first", errRefusedChange, id)
			}
			if !isVoter && c.isObserver(id) {
				return fmt.Errorf("%w: member %d is an observer, not promoting it", errRoleChange, id)
			}
			if !isVoter {
				voters, changed = append(voters, id), true
			}
		case pb.ConfChangeRemoveNode:
			if isVoter {
				voters, changed = slices.DeleteFunc(voters, func(v uint64) bool { return v == id }), true
			}
		}
	}
	if !changed {
		return nil
	}
	if len(voters) == 0 {
		return ErrLastVoter
	}
	// Known wrong (mutation skip-active-quorum): a change that leaves no
	// running majority of the voters goes through.
	if !onLeader || mutation.Enabled(mutation.SkipActiveQuorum) {
		return nil
	}
	running := 0
	for _, id := range voters {
		if c.running(id) {
			running++
		}
	}
	if running < len(voters)/2+1 {
		return fmt.Errorf("%w: %d of %d voters running", ErrNoActiveQuorum, running, len(voters))
	}
	return nil
}

// peerActivity records when each peer was last heard from (any message).
type peerActivity struct {
	mu    sync.Mutex
	heard map[uint64]time.Time
}

func (a *peerActivity) record(id uint64, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.heard == nil {
		a.heard = make(map[uint64]time.Time)
	}
	a.heard[id] = now
}

func (a *peerActivity) since(id uint64) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.heard[id]
	return t, ok
}

// running reports whether member id is known to be running: this member,
// or a peer heard from within an election timeout.
func (c *Core) running(id uint64) bool {
	if id == c.cfg.ID {
		return true
	}
	t, ok := c.activity.since(id)
	return ok && c.now().Sub(t) < c.electionTimeout()
}

func (c *Core) electionTimeout() time.Duration {
	return time.Duration(c.cfg.ElectionTicks) * c.cfg.TickInterval
}

// checkForwarded runs on the leader for a proposal a follower forwarded: a
// conf change that fails checkConfChange is dropped (the proposer's wait
// then times out).
func (c *Core) checkForwarded(m *pb.Message) error {
	if m.GetType() != pb.MsgProp || !c.isLeader.Load() {
		return nil
	}
	for _, e := range m.GetEntries() {
		if t := e.GetType(); t != pb.EntryConfChange && t != pb.EntryConfChangeV2 {
			continue
		}
		cc, err := decodeConfChange(e)
		if err != nil {
			return fmt.Errorf("forwarded: %w", err)
		}
		if err := c.checkConfChange(c.appliedConf(), cc.AsV2(), true); err != nil {
			return err
		}
	}
	return nil
}

// maybePromote runs on the core's goroutine of the leader: it proposes to
// promote one caught-up learner, at most once per election timeout unless
// the conf state changed since the last proposal.
func (c *Core) maybePromote() {
	if !c.isLeader.Load() {
		return
	}
	cs := c.appliedConf()
	if !slices.ContainsFunc(cs.GetLearners(), func(id uint64) bool { return !c.isObserver(id) }) ||
		len(cs.GetVotersOutgoing()) > 0 {
		return // no learner to promote: observers stay learners
	}
	if cs == c.promoteConf && c.promoteWait > 0 {
		c.promoteWait--
		return
	}
	st := c.rn.Status()
	for _, id := range slices.Sorted(slices.Values(cs.GetLearners())) {
		pr, ok := st.Progress[id]
		if !ok || c.isObserver(id) || pr.State != tracker.StateReplicate || pr.Match+promoteMaxLag < st.GetCommit() || !c.running(id) {
			continue
		}
		cc := confChange(pb.ConfChangeAddNode, id, "")
		if err := c.checkConfChange(cs, cc, true); err != nil {
			continue
		}
		err := c.rn.ProposeConfChange(cc)
		c.promoteConf, c.promoteWait = cs, c.cfg.ElectionTicks
		if err != nil {
			c.lg.Warn().Err(err).Uint64("member", id).Msg("propose promotion of learner")
		} else {
			c.lg.Info().Uint64("member", id).Uint64("match", pr.Match).Uint64("commit", st.GetCommit()).
				Msg("learner caught up, proposing its promotion to voter")
		}
		return
	}
}

func confChange(t pb.ConfChangeType, id uint64, addr string) *pb.ConfChangeV2 {
	cc := &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: t.Enum(), NodeId: new(id)}}}
	if addr != "" {
		cc.Context = []byte(addr)
	}
	return cc
}

// InConfState reports whether id is a member of configuration cs: a
// voter, a voter of the outgoing half of a joint configuration (a member
// being removed or demoted still votes until the joint configuration is
// left), or a learner. A nil cs has no member. The server's liveness
// receiver (through Node.IsMember) and the simulator's accept a member's
// liveness reports on it.
func InConfState(cs *pb.ConfState, id uint64) bool {
	return isMember(cs, id) || slices.Contains(cs.GetVotersOutgoing(), id)
}

// isMember reports whether id is a voter or learner of cs, without the
// outgoing voters of a joint configuration.
func isMember(cs *pb.ConfState, id uint64) bool {
	return slices.Contains(cs.GetVoters(), id) || slices.Contains(cs.GetLearners(), id)
}

// running reports whether member id is known to be running (Core.running).
func (n *Node) running(id uint64) bool { return n.core.running(id) }

func (n *Node) electionTimeout() time.Duration { return n.core.electionTimeout() }
