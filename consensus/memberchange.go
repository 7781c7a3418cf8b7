package consensus

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/internal/mutation"
)

// MemberChange is one membership change the Core drives, one conf change at
// a time, on the core's goroutine (see the rules at the top of
// membership.go). Node.ChangeMembers, AddMember and RemoveMember queue one to
// their loop and wait for its outcome; the simulator (internal/sim) calls
// the same Core methods from its goroutine.
//
// Steps: every new member is added as a learner (re-proposed every election
// timeout until applied here), then the change waits until the leader has
// promoted all of them (Core.maybePromote), then removes members, the
// leader's own removal last. A step is proposed only after the previous one
// was applied here and raft was told (Advance). done is called once, on the
// core's goroutine, after the Ready that applied the last step was
// Advanced, or at once for a refusal.
//
// A change follows the conf state it expects (base): the one it was planned
// against (ChangeMembers), or the one applied when it started running
// (StartMemberChange), moved along by its own steps and by the leader's
// promotions of the learners it adds. Each step carries base in its
// context, so apply takes it only on top of base (confbase.go), and before
// proposing a step (and whenever raft applied something) the change checks
// that the applied conf state is still base or one of those moves of it;
// anything else (another change applied meanwhile, or committed before but
// applied here only now) fails it with ErrMembershipChanged. A change that
// fails so while learners it added wait for their promotion first removes
// them (phaseRollback, failMoved). A rollback removes its learners without
// a base: a learner the change added is removed whatever else changed.
type MemberChange struct {
	add    []Peer   // sorted by id
	remove []uint64 // ordered when the removal phase starts
	done   func(error)

	base *pb.ConfState    // the conf state expected applied here; nil until the change runs
	step *pb.ConfChangeV2 // the step proposed last, until the change saw it applied

	phase    changePhase
	i        int      // the current step in add, remove or added
	proposed bool     // the current step was proposed at least once
	wait     int      // ticks before the current step is proposed again
	added    []uint64 // learners this change added
	cause    error    // why a rollback runs: the outcome once it is over
	// learnersOnly: the rollback (failMoved's) removes only members that
	// are still learners; kept are the added members a rollback left in
	// the group (promoted meanwhile, or their removal refused).
	learnersOnly bool
	kept         []uint64
	rollback     int // ticks the rollback may still take
	// pending is the member whose add step was proposed but not seen
	// applied when CancelMemberChange gave the change up (0: none); the
	// rollback waits for it until settled: once one of the rollback's own
	// removals applied.
	pending  uint64
	settled  bool
	finished bool
	// marking: the current step is markHistory's conf change, not the
	// phase's own.
	marking bool
}

type changePhase int

const (
	phaseAdd      changePhase = iota // adding learners
	phasePromote                     // waiting for the leader to promote them
	phaseRemove                      // removing members
	phaseRollback                    // removing the learners this change added
)

// PlanMembers computes, against the conf state cs, the members to add (a
// participant that is not a voter in cs, an observer that is not a member;
// sorted by id) and to remove (a voter or learner of cs not in target) so
// that the voters become exactly target's participants and the learners
// include its observers. It refuses a target without participants
// (ErrLastVoter), a zero id and an observer that is a voter in cs
// (errRoleChange).
func PlanMembers(cs *pb.ConfState, target []Peer) (add []Peer, remove []uint64, err error) {
	if !slices.ContainsFunc(target, func(p Peer) bool { return !p.Observer }) {
		return nil, nil, ErrLastVoter
	}
	want := make(map[uint64]bool, len(target))
	for _, p := range target {
		if p.ID == 0 {
			return nil, nil, errors.New("consensus: change members: id must be non-zero")
		}
		want[p.ID] = true
		switch {
		case p.Observer && slices.Contains(cs.GetVoters(), p.ID):
			return nil, nil, fmt.Errorf("%w: member %d is a voter", errRoleChange, p.ID)
		case p.Observer && isMember(cs, p.ID):
		case !slices.Contains(cs.GetVoters(), p.ID):
			add = append(add, p)
		}
	}
	for _, id := range slices.Concat(cs.GetVoters(), cs.GetLearners()) {
		if !want[id] {
			remove = append(remove, id)
		}
	}
	slices.SortFunc(add, func(a, b Peer) int { return cmp.Compare(a.ID, b.ID) })
	slices.Sort(remove)
	return add, remove, nil
}

// ChangeMembers starts a change that makes the voters exactly target,
// computed by its caller from the conf state base (the voters and learners
// it read): PlanMembers against base. If base is not the conf state raft
// has applied here (sameConf: a conf change was applied after the caller
// read it), it fails at once with ErrMembershipChanged and changes nothing:
// target may undo that change. done receives nil once this member applied
// the last step, or the refusal (ErrLastVoter, ErrNoActiveQuorum, a
// conflict with the applied membership, ErrMembershipChanged when the
// applied conf state moved away from base, also while it waits behind
// another change) or failure. Core goroutine.
func (c *Core) ChangeMembers(base *pb.ConfState, target []Peer, done func(error)) *MemberChange {
	cs := c.appliedConf()
	if !sameConf(base, cs) {
		mc := &MemberChange{done: done}
		c.finishChange(mc, fmt.Errorf("%w: applied voters %v learners %v, the target was computed from voters %v learners %v",
			ErrMembershipChanged, cs.GetVoters(), cs.GetLearners(), base.GetVoters(), base.GetLearners()))
		return mc
	}
	add, remove, err := PlanMembers(cs, target)
	for _, p := range add {
		if err == nil && !p.Observer && c.isObserver(p.ID) && slices.Contains(cs.GetLearners(), p.ID) {
			err = fmt.Errorf("%w: member %d is an observer", errRoleChange, p.ID)
		}
	}
	if err != nil {
		mc := &MemberChange{done: done}
		c.finishChange(mc, err)
		return mc
	}
	// The plan holds only on top of cs: a change that runs after the
	// membership moved on fails (ErrMembershipChanged).
	return c.startChange(add, remove, cs, done)
}

// StartMemberChange starts a change that adds (as learners, then waits for
// their promotion) and then removes members. It is queued behind a change
// that is not finished yet, and its base is the conf state applied when it
// starts running. Core goroutine.
func (c *Core) StartMemberChange(add []Peer, remove []uint64, done func(error)) *MemberChange {
	return c.startChange(add, remove, nil, done)
}

// startChange starts a change planned against base (nil: the conf state
// applied when it starts running).
func (c *Core) startChange(add []Peer, remove []uint64, base *pb.ConfState, done func(error)) *MemberChange {
	mc := &MemberChange{add: slices.Clone(add), remove: slices.Clone(remove), base: base, done: done}
	slices.SortFunc(mc.add, func(a, b Peer) int { return cmp.Compare(a.ID, b.ID) })
	// Refuse at once what is certainly wrong, before changing anything.
	voters := slices.Clone(c.appliedConf().GetVoters())
	for _, id := range remove {
		voters = slices.DeleteFunc(voters, func(v uint64) bool { return v == id })
	}
	for _, p := range mc.add {
		if p.ID == 0 {
			c.finishChange(mc, errors.New("consensus: add member: id must be non-zero"))
			return mc
		}
	}
	if len(voters) == 0 && !slices.ContainsFunc(mc.add, func(p Peer) bool { return !p.Observer }) {
		c.finishChange(mc, ErrLastVoter)
		return mc
	}
	c.changes = append(c.changes, mc)
	c.driveChanges()
	return mc
}

// CancelMemberChange gives up on mc with cause (its caller's context
// ended). A change waiting for its new members' promotion removes the
// members it added (promoted or not) and then reports ErrNotCaughtUp
// wrapping cause. A change still adding learners removes those it added
// that are still learners (a promoted one stays a voter, named in the
// error) and, last, the one whose add step it proposed but had not seen
// applied: that step may commit after the cancel. Once a learner added
// before it is removed, a late copy of the step applies as no change (its
// base holds that learner, confbase.go); with none before it, the rollback
// waits for the step. Either rollback takes at most three election
// timeouts; members it could not remove in that time (no quorum, a step or
// a promotion still pending: raft takes one conf change at a time) are
// named in the error as possibly still in the group. A change that has
// changed nothing yet reports cause at once; removals applied so far stay
// applied. No-op for a finished change. Core goroutine.
//
// A copy of a step re-proposed while an earlier one was still on its way
// (proposeStep re-proposes every election timeout) that commits after a
// rollback brought the conf state back to that step's voters and learners
// applies as no change too: the step's base names the point of the conf
// state's history it was planned at (its conf index, confbase.go), which
// the rollback's removals moved on (TestCoreLateAddStepAfterRollbackIsVoid).
// Where the conf index is unknown (data written by an older build, no
// conf change applied since) a change first makes it known (markHistory).
func (c *Core) CancelMemberChange(mc *MemberChange, cause error) {
	if mc == nil || mc.finished || mc.phase == phaseRollback {
		return
	}
	if len(c.changes) == 0 || c.changes[0] != mc {
		c.finishChange(mc, cause) // still queued: nothing was changed
		return
	}
	switch {
	case mc.phase == phasePromote:
		c.startRollback(mc, mc.added, false, fmt.Errorf("%w: %w", ErrNotCaughtUp, cause))
	case mc.phase == phaseAdd && mc.i == len(mc.add):
		// Not driven yet (a change with nothing to add, first in the queue
		// only since the change before it ended): nothing was changed.
		c.finishChange(mc, cause)
	case mc.phase == phaseAdd:
		err := fmt.Errorf("consensus: add member %d as learner: %w", mc.add[mc.i].ID, cause)
		added := slices.Clone(mc.added)
		if mc.proposed && !mc.marking {
			// Its step may still commit: checked last, after the removals
			// of the learners its base holds (see above).
			added = append(added, mc.add[mc.i].ID)
			mc.pending = mc.add[mc.i].ID
		}
		if len(added) == 0 || mutation.Enabled(mutation.CancelAddKeepsLearners) {
			// Known wrong with the mutation: the learners stay, unnamed.
			c.finishChange(mc, err)
			break
		}
		// The learners added so far go again, as after a failed change
		// (failMoved): only those still learners.
		c.startRollback(mc, added, true, err)
	default:
		c.finishChange(mc, fmt.Errorf("consensus: remove member %d: %w", mc.remove[mc.i], cause))
	}
	// The rollback, or the next queued change, runs now.
	c.driveChanges()
}

// Finished reports whether mc reported its outcome. Core goroutine.
func (mc *MemberChange) Finished() bool { return mc.finished }

// finishChange reports err (nil: done) to mc's caller and takes mc off the
// queue. It does not drive the next queued change: its caller does
// (driveChanges), or the next Tick or Ready.
func (c *Core) finishChange(mc *MemberChange, err error) {
	if mc.finished {
		return
	}
	mc.finished = true
	if i := slices.Index(c.changes, mc); i >= 0 {
		c.changes = slices.Delete(c.changes, i, i+1)
	}
	if mc.done != nil {
		mc.done(err)
	}
}

// failChanges reports err to every unfinished change (the Core closes).
func (c *Core) failChanges(err error) {
	for len(c.changes) > 0 {
		c.finishChange(c.changes[0], err)
	}
}

// tickChanges counts a tick down for the running change's re-proposal and
// rollback timers, then drives it.
func (c *Core) tickChanges() {
	if len(c.changes) == 0 {
		return
	}
	mc := c.changes[0]
	if mc.wait > 0 {
		mc.wait--
	}
	if mc.phase == phaseRollback {
		mc.rollback--
		if mc.rollback <= 0 {
			// The members before mc.i are settled: removed, or kept (a
			// voter promoted meanwhile, named as staying). Those from mc.i
			// on may stay in the group, and a promotion proposed before the
			// change was given up can still commit: the caller must check
			// the membership before taking one of them down.
			left := mc.added[mc.i:]
			c.lg.Warn().Err(mc.cause).Uints64("members", left).
				Msg("gave up removing the new members after a failed membership change")
			c.finishChange(mc, mc.namingKept(fmt.Errorf("%w (members %v may still be in the group)", mc.cause, left)))
		}
	}
	c.driveChanges()
}

// driveChanges advances the running change as far as the conf state raft
// has applied here allows, proposing its next step when due. Runs after
// every Tick and every handled Ready (after Advance).
func (c *Core) driveChanges() {
	for len(c.changes) > 0 {
		mc := c.changes[0]
		c.driveChange(mc)
		if !mc.finished {
			return
		}
	}
}

func (c *Core) driveChange(mc *MemberChange) {
	for !mc.finished {
		cs := c.appliedConf()
		if mc.phase != phaseRollback {
			if err := mc.follow(cs); err != nil {
				c.lg.Warn().Err(err).Msg("membership change given up: the membership changed under it")
				c.failMoved(mc, cs, err)
				continue
			}
		}
		switch mc.phase {
		case phaseAdd:
			if mc.i == len(mc.add) {
				mc.nextPhase(phasePromote)
				if len(mc.add) == 0 {
					mc.nextPhase(phaseRemove)
					c.orderRemovals(mc)
				}
				continue
			}
			p := mc.add[mc.i]
			if isMember(cs, p.ID) {
				if mc.proposed {
					mc.added = append(mc.added, p.ID)
					c.lg.Info().Uint64("member", p.ID).Str("addr", p.Addr).Bool("observer", p.Observer).Msg("member added as learner")
				}
				mc.nextStep()
				continue
			}
			typ := pb.ConfChangeAddLearnerNode
			if mutation.Enabled(mutation.SkipLearner) {
				// Known wrong (mutation skip-learner): the new, empty
				// member counts for quorum at once.
				typ = pb.ConfChangeAddNode
			}
			cc := confChange(typ, p.ID, "")
			if err := c.proposeBased(mc, cs, cc, peerContext(p)); err != nil {
				c.finishChange(mc, fmt.Errorf("consensus: add member %d as learner: %w", p.ID, err))
			}
			return
		case phasePromote:
			for _, p := range mc.add {
				if !p.Observer && !slices.Contains(cs.GetVoters(), p.ID) {
					return // the leader promotes them once caught up
				}
			}
			mc.nextPhase(phaseRemove)
			c.orderRemovals(mc)
		case phaseRemove:
			if mc.i == len(mc.remove) {
				c.finishChange(mc, nil)
				return
			}
			id := mc.remove[mc.i]
			if !isMember(cs, id) {
				mc.nextStep()
				continue
			}
			cc := confChange(pb.ConfChangeRemoveNode, id, "")
			if err := c.proposeBased(mc, cs, cc, nil); err != nil {
				c.finishChange(mc, fmt.Errorf("consensus: remove member %d: %w", id, err))
			}
			return
		case phaseRollback:
			if mc.i == len(mc.added) {
				c.finishChange(mc, mc.namingKept(mc.cause))
				return
			}
			id := mc.added[mc.i]
			if !isMember(cs, id) {
				if mc.proposed {
					// A removal of this rollback applied: the pending add
					// step came before it (id was a member), or applies
					// after it as no change (its base holds id).
					mc.settled = true
				}
				if id == mc.pending && !mc.settled {
					// Its add step, proposed before the change was given
					// up, may still commit: wait for it (or the deadline).
					return
				}
				c.lg.Warn().Uint64("member", id).Msg("removed a new member after a failed membership change")
				mc.nextStep()
				continue
			}
			if mc.learnersOnly && slices.Contains(cs.GetVoters(), id) {
				// Promoted meanwhile: a voter is not removed without a base.
				mc.kept = append(mc.kept, id)
				mc.nextStep()
				continue
			}
			if err := c.proposeStep(mc, cs, confChange(pb.ConfChangeRemoveNode, id, "")); err != nil {
				c.lg.Warn().Err(err).Uint64("member", id).Msg("removing a new member after a failed membership change")
				mc.kept = append(mc.kept, id)
				mc.nextStep()
				continue
			}
			return
		}
	}
}

// failMoved fails mc with err (ErrMembershipChanged). A change that added
// learners not yet promoted all (phaseAdd, phasePromote) removes them
// first (phaseRollback, as CancelMemberChange does), or the leader would
// still promote them once they caught up and the change's outcome would
// not be its caller's error. The learner of an add step applied here in
// the Ready that also applied the other change counts as added. In
// phaseRemove every learner it added is a voter already and stays.
//
// Only members that are still learners are removed: a removal carries no
// base, so removing a voter the leader promoted already could land on top
// of the other change and leave fewer voters than either change asked for.
// Promoted ones stay voters and the error names them.
func (c *Core) failMoved(mc *MemberChange, cs *pb.ConfState, err error) {
	if mc.phase == phaseAdd && mc.proposed && !mc.marking && mc.i < len(mc.add) && isMember(cs, mc.add[mc.i].ID) &&
		!slices.Contains(mc.added, mc.add[mc.i].ID) {
		mc.added = append(mc.added, mc.add[mc.i].ID)
	}
	var learners, voters []uint64
	for _, id := range mc.added {
		switch {
		case slices.Contains(cs.GetVoters(), id):
			voters = append(voters, id)
		case slices.Contains(cs.GetLearners(), id):
			learners = append(learners, id)
		}
	}
	if len(voters) > 0 {
		err = fmt.Errorf("%w (members %v it added were promoted and stay voters)", err, voters)
	}
	if mc.phase == phaseRemove || len(learners) == 0 {
		c.finishChange(mc, err)
		return
	}
	c.startRollback(mc, learners, true, err)
}

// proposeBased proposes cc, the current step of mc's phase, planned
// against mc's base (stepContext, with peer after it), once the base's
// history is marked (markHistory: until then it proposes the mark
// instead). It returns a refusal of checkConfChange.
func (c *Core) proposeBased(mc *MemberChange, cs *pb.ConfState, cc *pb.ConfChangeV2, peer []byte) error {
	if pending, err := c.markHistory(mc, cs, cc); pending || err != nil {
		return err
	}
	cc.Context = stepContext(mc.base, peer)
	return c.proposeStep(mc, cs, cc)
}

// markHistory makes sure mc's base has a known conf index before mc
// proposes a based step on it (confbase.go): on a conf state of unknown
// history (data an older build wrote, no conf change applied since) it
// proposes, as the current step, a conf change that changes nothing (node
// id 0, raft's cancelled form), whose apply gives the conf state a conf
// index on every member. It reports whether that is still pending; once
// the base has a conf index it clears the marker's step, so that the
// phase's step is proposed at once. The phase's step, next, is checked
// first (checkConfChange, as proposeStep does before every proposal), so
// that a change refused now is refused at once, not after the mark.
func (c *Core) markHistory(mc *MemberChange, cs *pb.ConfState, next *pb.ConfChangeV2) (pending bool, err error) {
	if _, known := confIndexOf(mc.base); known {
		if mc.marking {
			mc.marking, mc.proposed, mc.wait, mc.step = false, false, 0, nil
		}
		return false, nil
	}
	if err := c.checkConfChange(cs, next, c.IsLeader()); err != nil {
		return false, err
	}
	mc.marking = true
	return true, c.proposeStep(mc, cs, confChange(pb.ConfChangeRemoveNode, 0, ""))
}

// namingKept adds to a rollback's outcome err the members it kept (voters
// promoted meanwhile, which a removal without a base does not take out).
func (mc *MemberChange) namingKept(err error) error {
	if len(mc.kept) == 0 {
		return err
	}
	return fmt.Errorf("%w (members %v it added stay in the group)", err, mc.kept)
}

// startRollback turns mc into the removal of the members in added (only
// those still learners when their turn comes, if learnersOnly), for at most
// three election timeouts; mc then reports cause.
func (c *Core) startRollback(mc *MemberChange, added []uint64, learnersOnly bool, cause error) {
	mc.nextPhase(phaseRollback)
	mc.added, mc.learnersOnly, mc.cause = added, learnersOnly, cause
	mc.rollback = 3 * c.cfg.ElectionTicks
}

func (mc *MemberChange) nextPhase(p changePhase) {
	mc.phase, mc.i, mc.proposed, mc.wait, mc.step, mc.marking = p, 0, false, 0, nil, false
}

// nextStep moves mc to the next step of its phase, not proposed yet.
func (mc *MemberChange) nextStep() {
	mc.i, mc.proposed, mc.wait, mc.step, mc.marking = mc.i+1, false, 0, nil, false
}

// follow checks the conf state cs applied here against mc's base and moves
// base along what mc expects: its own step (mc.step) applied, then any of
// the learners it adds (not observers) promoted by the leader (one Ready can
// apply both). Anything else is another change: ErrMembershipChanged. A
// change that has not run yet takes cs as its base.
func (mc *MemberChange) follow(cs *pb.ConfState) error {
	if mc.base == nil || sameConf(cs, mc.base) {
		if mc.base != nil && !sameHistory(cs, mc.base) {
			// Only the conf index moved (a conf change that changed
			// nothing here, such as a rollback's removal sent again): the
			// step in flight carries the old one and applies as no change,
			// so propose it again on the new base at once.
			mc.step, mc.wait = nil, 0
		}
		mc.base = cs
		return nil
	}
	if mc.promotes(mc.base, cs) {
		// The step in flight (if any) carries the old base and applies as
		// no change: propose it again on the new base at once.
		mc.base, mc.step, mc.wait = cs, nil, 0
		return nil
	}
	if mc.step != nil && mc.promotes(stepConf(mc.base, mc.step), cs) {
		mc.base, mc.step = cs, nil
		return nil
	}
	return fmt.Errorf("%w: applied voters %v learners %v, the change expected voters %v learners %v",
		ErrMembershipChanged, cs.GetVoters(), cs.GetLearners(), mc.base.GetVoters(), mc.base.GetLearners())
}

// promotes reports whether cs is from with zero or more of the learners mc
// adds (not observers) promoted to voters.
func (mc *MemberChange) promotes(from, cs *pb.ConfState) bool {
	to := from
	for _, id := range cs.GetVoters() {
		if slices.Contains(from.GetVoters(), id) {
			continue
		}
		if !slices.Contains(from.GetLearners(), id) ||
			!slices.ContainsFunc(mc.add, func(p Peer) bool { return p.ID == id && !p.Observer }) {
			return false
		}
		to = stepConf(to, confChange(pb.ConfChangeAddNode, id, ""))
	}
	return sameConf(to, cs)
}

// orderRemovals puts the leader's own removal last: it costs the group its
// leader.
func (c *Core) orderRemovals(mc *MemberChange) {
	lead := c.Lead()
	slices.SortFunc(mc.remove, func(a, b uint64) int {
		if (a == lead) != (b == lead) {
			if a == lead {
				return 1
			}
			return -1
		}
		return cmp.Compare(a, b)
	})
}

// proposeStep proposes cc unless a proposal of the current step is younger
// than an election timeout (raft may have turned it into an empty entry: a
// forwarded proposal can reach a leader that has not applied the previous
// change yet). It returns a refusal of checkConfChange, made again before
// every proposal. Without a known leader nothing is proposed: the next
// Tick or Ready tries again.
func (c *Core) proposeStep(mc *MemberChange, cs *pb.ConfState, cc *pb.ConfChangeV2) error {
	if mc.wait > 0 {
		return nil
	}
	if err := c.checkConfChange(cs, cc, c.IsLeader()); err != nil {
		return err
	}
	if c.Lead() == 0 {
		return nil
	}
	mc.step = cc
	// A dropped proposal (leader shedding load) is proposed again later.
	if err := c.rn.ProposeConfChange(cc); err != nil && !errors.Is(err, raft.ErrProposalDropped) {
		return err
	}
	mc.proposed, mc.wait = true, c.cfg.ElectionTicks
	return nil
}
