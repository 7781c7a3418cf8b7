package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/server"
)

// Reconfig in the simulator goes through the code zkraft's reconfig runs:
// server.ReconfigTarget builds the target from raft's voters on the deciding
// member and a ZooKeeper reconfig request (joining or leaving list), and the
// member's consensus.Core drives the change (Core.ChangeMembers: refusals,
// a new member as a learner first, promotion by the leader once caught up,
// one conf change at a time, the outcome reported after Advance), as
// Node.ChangeMembers does on a real member. A completed change is then
// published in /zookeeper/config (server.ProposalSetConfig), as the
// server's reconfig does.
//
// Checks (chkMembership): a change completes with exactly its target as the
// voters of the deciding member; it fails only for a documented reason
// (ErrNoActiveQuorum, ErrNotCaughtUp after the simulator gave up, the
// give-up itself, or ErrMembershipChanged, accepted only if the deciding
// member applied, after the target was computed, a conf change that is no
// step of this change: simChange.foreign); an addition completes only after
// the new member ran (it must have caught up to be promoted); a failed
// addition whose error names no member as staying has its new member out of
// the deciding member's conf state, and no member applies a conf state
// holding it from that outcome's applied index on (rc.outFrom); a removal
// that leaves fewer than a majority of the new voters able to run (a voter
// down for longer than two election timeouts, decided on a leader that
// heard nothing from it since) is refused with ErrNoActiveQuorum (or
// ErrMembershipChanged under the same condition); no member ever applies
// fewer than Members-1 voters (noteVoters: the scheduler never asks for
// fewer, and the durability check counts a quorum of Members); and at the
// end every running member that applied the last completed change has its
// voters. The run's membership is what the members applied, never a
// change's target: the last completed change's voters as the deciding
// member applied them.

// chkMembership names the membership checker.
const chkMembership = "membership"

// changeTimeout is how long the simulator waits for a membership change
// before it gives up (as the server's write timeout).
const changeTimeout = 5 * time.Second

// probeAfter is how long after a voter crashed a removal probe runs: more
// than two election timeouts, so a leader that was running meanwhile cannot
// count the crashed voter as running.
const probeAfter = 1200 * time.Millisecond

// earlyGiveUpOdds is the chance that the simulator gives up on an addition
// whose new member starts at once early, at a time drawn below
// earlyGiveUpWithin after it started, while its
// add step is in flight or its learner waits for promotion (drawn from
// world.giveUps, so that the run's other draws stay as they were).
const (
	earlyGiveUpOdds   = 0.3
	earlyGiveUpWithin = 40 * time.Millisecond
)

// errGaveUp is the cause the simulator cancels a change with.
var errGaveUp = errors.New("sim: membership change timed out")

// reconfigState is the run's membership changes.
type reconfigState struct {
	running  *simChange
	pauseEnd map[int]time.Duration // member index -> end of its latest pause
	// The last completed change: its voters, the deciding member's applied
	// index at completion, and whether a change that may have changed
	// something ran after it.
	lastVoters []uint64
	lastIndex  uint64
	dirty      bool
	changes    int // changes started
	// outFrom holds the members failed additions reported out of the
	// group, with the deciding member's applied index at the outcome: no
	// member may apply a conf state holding one at or after that index.
	outFrom map[uint64]uint64
	// confIndex is the latest conf index a member's conf state carried;
	// confAt, the voters and learners each conf index came with first.
	confIndex uint64
	confAt    map[uint64]string
}

// simChange is a membership change in flight.
type simChange struct {
	m          *member
	inc        int
	mc         *consensus.MemberChange
	what       string
	target     []uint64
	mustRefuse string  // why the change must be refused with ErrNoActiveQuorum; "" if it may complete
	added      *member // the new member, for an addition
	sync       bool    // the outcome came within ChangeMembers (nothing proposed)
	over       bool
	// planned is the deciding member's conf state the target was computed
	// from (the change's base); seen is the last conf state of that member
	// the simulator looked at since. foreign records that a conf state
	// change it applied meanwhile is no step of this change (an earlier,
	// abandoned change committed late, or the promotion of another
	// change's learner): only then may the change fail with
	// ErrMembershipChanged.
	planned, seen *pb.ConfState
	foreign       bool
}

// observe notes the conf state cs applied by the deciding member: a move
// from the last one seen that is no step of sc makes it foreign.
func (sc *simChange) observe(cs *pb.ConfState) {
	if cs == nil || cs == sc.seen {
		return
	}
	if !sc.ownMove(sc.seen, cs) {
		sc.foreign = true
	}
	sc.seen = cs
}

// ownMove reports whether every difference between the conf states from
// and to is a step the change itself takes against its planned conf state:
// a member of the target that was no voter added (as a learner), promoted
// by the leader, or removed again (rollback), a member of planned not in
// the target removed.
func (sc *simChange) ownMove(from, to *pb.ConfState) bool {
	role := func(cs *pb.ConfState, id uint64) int {
		switch {
		case slices.Contains(cs.GetVoters(), id):
			return 2
		case slices.Contains(cs.GetLearners(), id):
			return 1
		}
		return 0
	}
	ids := slices.Concat(from.GetVoters(), from.GetLearners(), to.GetVoters(), to.GetLearners())
	for _, id := range ids {
		was, is := role(from, id), role(to, id)
		if was == is {
			continue
		}
		inTarget := slices.Contains(sc.target, id)
		added := inTarget && role(sc.planned, id) != 2
		switch {
		case is == 0 && (added || !inTarget): // removed (the plan's, or a rollback's)
		case is > was && added: // added as a learner, promoted
		default:
			return false
		}
	}
	return true
}

// notePause records a member pause that ends at end.
func (w *world) notePause(m *member, end time.Duration) {
	if w.rc.pauseEnd == nil {
		w.rc.pauseEnd = map[int]time.Duration{}
	}
	w.rc.pauseEnd[m.idx] = end
}

// noteVoters checks the conf state cs member m applied: the scheduler
// removes a voter only from Members voters (reconfigure) and asks for
// probes that must be refused, so a member that applies fewer than
// Members-1 voters shows a membership bug (and the durability check, which
// counts a quorum of Members, relies on it). It also shows the running
// change cs if m decides it.
//
// crashed says m crashed in the middle of a Core call (member.crashIn): its
// conf state may then be ahead of its applied index, which counts only once
// the Ready's conf state is written.
func (w *world) noteVoters(m *member, cs *pb.ConfState, crashed bool) {
	if n := len(cs.GetVoters()); n > 0 && n < w.cfg.Members-1 {
		w.fail(chkMembership, "member %d applied voters %v: fewer than %d (Members-1), which no change asks for",
			m.id, cs.GetVoters(), w.cfg.Members-1)
	}
	if sc := w.rc.running; sc != nil && sc.m == m && sc.inc == m.incarnation {
		sc.observe(cs)
	}
	if m.core == nil {
		return // a checker's test: nothing applied
	}
	applied := m.core.AppliedIndex()
	// The conf index (consensus/confbase.go) travels with the conf state
	// through snapshots, local and sent: a member that applied past the
	// latest conf change any member knows knows its own.
	if idx, ok := consensus.ConfIndex(cs); ok {
		w.rc.confIndex = max(w.rc.confIndex, idx)
		// One conf index, one conf state, on every member.
		what := fmt.Sprintf("voters %v learners %v", slices.Sorted(slices.Values(cs.GetVoters())),
			slices.Sorted(slices.Values(cs.GetLearners())))
		if w.rc.confAt == nil {
			w.rc.confAt = map[uint64]string{}
		}
		if first, seen := w.rc.confAt[idx]; !seen {
			w.rc.confAt[idx] = what
		} else if first != what {
			w.fail(chkMembership, "member %d has conf index %d with %s; another member had it with %s", m.id, idx, what, first)
		}
		if idx > applied && !crashed {
			w.fail(chkMembership, "member %d has conf index %d beyond its applied index %d", m.id, idx, applied)
		}
	} else if w.rc.confIndex > 0 && applied >= w.rc.confIndex {
		w.fail(chkMembership, "member %d applied index %d with a conf state that does not know its conf index (voters %v learners %v); conf change %d was applied before",
			m.id, applied, cs.GetVoters(), cs.GetLearners(), w.rc.confIndex)
	}
	for _, id := range slices.Sorted(maps.Keys(w.rc.outFrom)) {
		from := w.rc.outFrom[id]
		if applied >= from && consensus.InConfState(cs, id) {
			w.fail(chkMembership, "member %d applied a conf state with member %d in the group (voters %v learners %v) at applied index %d, at or after index %d where the failed addition that added it reported it out",
				m.id, id, cs.GetVoters(), cs.GetLearners(), applied, from)
		}
	}
}

// namesKept reports whether a failed membership change's error names
// members it added as (possibly) staying in the group.
func namesKept(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "may still be in the group") || strings.Contains(msg, "stay in the group") ||
		strings.Contains(msg, "stay voters")
}

// runningLeader returns a leader that is up and running, or nil.
func (w *world) runningLeader() *member {
	var leader *member
	for _, m := range w.members {
		if m.up && !m.paused && m.isLeader && m.core != nil {
			leader = m
		}
	}
	return leader
}

// changeBusy reports whether a change is in flight; one whose member
// crashed is abandoned (its Core is gone, and with it the change).
func (w *world) changeBusy() bool {
	sc := w.rc.running
	if sc == nil {
		return false
	}
	if !sc.m.up || sc.m.incarnation != sc.inc || sc.m.core == nil {
		w.tracef("reconfig: %s abandoned (member %d crashed)", sc.what, sc.m.id)
		sc.over, w.rc.running, w.rc.dirty = true, nil, true
		return false
	}
	return true
}

// reconfigure starts one membership change: with fewer voters than
// configured it adds a new, empty member (it catches up from a snapshot, and
// the leader's consensus code promotes it; sometimes it starts too late and
// the change is given up and rolled back), otherwise it removes a voter,
// often the leader itself. Mostly decided on the leader; sometimes on a
// follower, whose conf changes raft forwards to the leader.
func (w *world) reconfigure() {
	if w.changeBusy() {
		return
	}
	leader := w.runningLeader()
	if leader == nil {
		return
	}
	on := leader
	if w.chance(0.25) {
		var fs []*member
		for _, m := range w.members {
			if m != leader && m.up && !m.paused && m.core != nil && m.inEnsemble() {
				fs = append(fs, m)
			}
		}
		if len(fs) > 0 {
			on = fs[w.rng.IntN(len(fs))]
		}
	}
	voters := slices.Sorted(slices.Values(on.core.ConfState().GetVoters()))
	if len(voters) >= w.cfg.Members {
		id := voters[w.rng.IntN(len(voters))]
		if w.chance(0.4) && slices.Contains(voters, leader.id) {
			id = leader.id // remove the leader
		}
		w.startChange(on, fmt.Sprintf("remove member %d (leader %d)", id, leader.id),
			&jute.ReconfigRequest{LeavingServers: fmt.Sprint(id)}, nil, "", changeTimeout)
		return
	}
	if len(w.members) >= w.cfg.Members+maxAdded {
		return
	}
	id := uint64(len(w.members) + 1)
	m := &member{w: w, idx: len(w.members), id: id, disk: newDisk(w, id), outside: true}
	w.members = append(w.members, m)
	m.scheduleTick()
	giveUpAfter := changeTimeout
	if w.chance(0.25) {
		// The new member starts late, or only when the faults stop: it
		// stays a learner meanwhile, and if the simulator gives up first
		// the change removes it again (ErrNotCaughtUp).
		late := w.between(2*time.Second, 10*time.Second)
		w.tracef("reconfig: new member %d starts in %v", id, late)
		w.after(late, m.restart)
	} else {
		m.restart()
		if w.giveUps.Float64() < earlyGiveUpOdds {
			// Given up while its learner is being added: the add step
			// may be proposed and not yet applied, or applied and waiting
			// for the promotion (CancelMemberChange's two rollbacks).
			giveUpAfter = time.Duration(w.giveUps.Int64N(int64(earlyGiveUpWithin)))
		}
	}
	w.startChange(on, fmt.Sprintf("add member %d (leader %d)", id, leader.id),
		&jute.ReconfigRequest{JoiningServers: simMember(id).String()}, m, "", giveUpAfter)
}

// probeRemoval runs probeAfter after voter d crashed (at crashed): if d is
// still down, a leader that ran all along is asked to remove another voter
// (or itself) such that fewer than a majority of the new voters can be
// running. consensus must refuse it with ErrNoActiveQuorum.
func (w *world) probeRemoval(d *member, inc int, crashed time.Duration) {
	if !w.faulty || d.up || d.removed || d.incarnation != inc || w.changeBusy() {
		return
	}
	leader := w.runningLeader()
	if leader == nil || w.rc.pauseEnd[leader.idx] > crashed {
		return
	}
	voters := slices.Sorted(slices.Values(leader.core.ConfState().GetVoters()))
	if !slices.Contains(voters, d.id) {
		return
	}
	var cands []uint64
	for _, id := range voters {
		if id != d.id {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return
	}
	x := cands[w.rng.IntN(len(cands))]
	if w.chance(0.5) && slices.Contains(cands, leader.id) {
		x = leader.id
	}
	// d is in the new voters and cannot be running; at best all others are.
	newVoters := len(voters) - 1
	if newVoters-1 >= newVoters/2+1 {
		return // a majority could still run: no refusal to expect
	}
	w.startChange(leader, fmt.Sprintf("remove member %d while member %d is down (leader %d)", x, d.id, leader.id),
		&jute.ReconfigRequest{LeavingServers: fmt.Sprint(x)}, nil,
		fmt.Sprintf("member %d down since %v", d.id, crashed), changeTimeout)
}

// simMember is the address record of simulated member id.
func simMember(id uint64) server.Member {
	return server.Member{ID: id, Host: fmt.Sprintf("m%d", id), PeerPort: 2888, ElectionPort: 3888,
		Role: "participant", ClientAddr: fmt.Sprintf("m%d:2181", id)}
}

// startChange builds the target of r with the server's code and hands it to
// on's consensus.Core; the simulator gives up on it after giveUpAfter.
func (w *world) startChange(on *member, what string, r *jute.ReconfigRequest, added *member, mustRefuse string, giveUpAfter time.Duration) {
	voters := slices.Sorted(slices.Values(on.core.ConfState().GetVoters()))
	var current map[uint64]server.Member
	if data, _, ok := on.rep.GetData("/zookeeper/config"); ok && len(data) > 0 {
		current, _, _ = server.ParseConfig(data)
	}
	known := map[uint64]server.Member{}
	for _, m := range w.members {
		known[m.id] = simMember(m.id)
	}
	target, code, _ := server.ReconfigTarget(r, voters, on.core.ConfState().GetLearners(), current, known)
	if code != 0 {
		w.fail(chkMembership, "%s: the server's reconfig target refused it with code %d (voters %v)", what, code, voters)
		return
	}
	planned := on.core.ConfState()
	sc := &simChange{m: on, inc: on.incarnation, what: what, added: added, mustRefuse: mustRefuse,
		target: slices.Sorted(maps.Keys(target)), planned: planned, seen: planned}
	w.rc.running = sc
	w.rc.changes++
	w.tracef("reconfig on member %d: %s: voters %v -> %v", on.id, what, voters, sc.target)
	// Node.ChangeMembers queues the change to the loop: while the member
	// writes a Ready it waits for the write to end.
	on.whenIdle(func() {
		w.current = on
		inCall := true
		// The change fails (ErrMembershipChanged) if a conf change was
		// applied after planned was read.
		sc.mc = on.core.ChangeMembers(planned, server.ReconfigPeers(target), func(err error) {
			sc.sync = inCall
			w.changeDone(sc, err)
		})
		inCall = false
		on.process()
	})
	if giveUpAfter != changeTimeout {
		w.tracef("reconfig: %s will be given up after %v", what, giveUpAfter)
	}
	w.after(giveUpAfter, func() {
		if sc.over || w.rc.running != sc || !w.changeBusy() {
			return
		}
		w.tracef("reconfig: giving up on %s", sc.what)
		sc.m.whenIdle(func() {
			if sc.over || sc.mc == nil {
				return
			}
			w.current = sc.m
			sc.m.core.CancelMemberChange(sc.mc, errGaveUp)
			sc.m.process()
		})
	})
}

// changeDone checks a change's outcome; it runs on the deciding member's
// Core (within ChangeMembers, a Tick or a Ready, after Advance).
func (w *world) changeDone(sc *simChange, err error) {
	if sc.over {
		return
	}
	sc.over = true
	if w.rc.running == sc {
		w.rc.running = nil
	}
	m := sc.m
	if err == nil {
		voters := slices.Sorted(slices.Values(m.core.ConfState().GetVoters()))
		w.tracef("reconfig: %s completed on member %d: voters %v", sc.what, m.id, voters)
		if sc.mustRefuse != "" {
			w.fail(chkMembership, "%s completed (voters now %v) with %s: fewer than a majority of the new voters can run, want a refusal (%v)",
				sc.what, voters, sc.mustRefuse, consensus.ErrNoActiveQuorum)
		}
		if !slices.Equal(voters, sc.target) {
			w.fail(chkMembership, "%s completed on member %d with voters %v, want %v", sc.what, m.id, voters, sc.target)
		}
		if a := sc.added; a != nil && a.incarnation == 0 {
			// A new member becomes a voter only once it caught up with
			// the leader, which it cannot have done without running.
			w.fail(chkMembership, "%s completed (voters %v) before member %d ever ran: it counts for quorum without the log",
				sc.what, voters, a.id)
		}
		// The membership is what the deciding member applied (the target,
		// or the failure above).
		w.rc.lastVoters, w.rc.lastIndex, w.rc.dirty = voters, m.core.AppliedIndex(), false
		// Publish the new membership, as the server's reconfig does
		// (outside the Core's call).
		members := map[uint64]server.Member{}
		for _, id := range sc.target {
			members[id] = simMember(id)
		}
		inc := m.incarnation
		w.after(0, func() {
			if m.up && m.incarnation == inc && m.core != nil && !m.removed {
				m.propose(&server.Proposal{Type: server.ProposalSetConfig, Body: server.ConfigBody(members)}, nil)
			}
		})
		return
	}
	var cs *pb.ConfState
	if m.core != nil {
		cs = m.core.ConfState()
		sc.observe(cs) // the outcome can come before afterReady sees cs
	}
	w.tracef("reconfig: %s failed on member %d (voters %v learners %v): %v", sc.what, m.id, cs.GetVoters(), cs.GetLearners(), err)
	if !sc.sync {
		w.rc.dirty = true
	}
	switch {
	case errors.Is(err, consensus.ErrNoActiveQuorum), errors.Is(err, errGaveUp):
		// ErrNotCaughtUp wraps errGaveUp.
	case errors.Is(err, consensus.ErrMembershipChanged) && sc.foreign:
		// Another change was applied on the deciding member after this
		// one was planned (ZooKeeper's ReconfigInProgress): a refusal, a
		// probe's included. Its steps apply on no other membership.
	case errors.Is(err, consensus.ErrMembershipChanged):
		w.fail(chkMembership, "%s on member %d failed with %v, but the member applied no conf change other than "+
			"the change's own steps since it was planned (planned voters %v learners %v)",
			sc.what, m.id, err, sc.planned.GetVoters(), sc.planned.GetLearners())
	case sc.mustRefuse == "" && errors.Is(err, consensus.ErrStopped):
	default:
		w.fail(chkMembership, "%s on member %d failed for an undocumented reason: %v", sc.what, m.id, err)
	}
	if a := sc.added; a != nil && m.core != nil && !namesKept(err) {
		// The outcome says the new member is out of the group (no member
		// named as staying): so it is on the deciding member now, and no
		// member applies it in the group again from there on (a late copy
		// of its add step must apply as no change).
		if consensus.InConfState(cs, a.id) {
			w.fail(chkMembership, "%s failed on member %d with %v, naming no member as staying, but member %d is in its conf state (voters %v learners %v)",
				sc.what, m.id, err, a.id, cs.GetVoters(), cs.GetLearners())
		}
		if w.rc.outFrom == nil {
			w.rc.outFrom = map[uint64]uint64{}
		}
		w.rc.outFrom[a.id] = m.core.AppliedIndex()
	}
	if a := sc.added; a != nil && !a.removed {
		// An addition that failed: the new member goes away, as an operator
		// would take it down, once no member counts it in the group. That is
		// judged a while later: a promotion proposed before the change was
		// given up can still commit after the rollback stopped trying (raft
		// takes one conf change at a time, and a new leader commits what its
		// log holds), and then the member is a voter that must keep running.
		w.after(3*time.Second, func() {
			for _, o := range w.members {
				cs := o.core
				if cs != nil && (slices.Contains(cs.ConfState().GetVoters(), a.id) ||
					slices.Contains(cs.ConfState().GetLearners(), a.id)) {
					w.tracef("reconfig: member %d stays: the failed %s left it in the group", a.id, sc.what)
					return
				}
			}
			a.remove()
		})
	}
}

// finalMembership checks, at the end of the run, that every running member
// that applied the last completed change has its voters (unless a change
// that may have changed something ran after it).
func (w *world) finalMembership() {
	if w.rc.dirty || w.rc.running != nil {
		return
	}
	want := w.rc.lastVoters
	if want == nil {
		for i := 0; i < w.cfg.Members; i++ {
			want = append(want, uint64(i+1))
		}
	}
	for _, m := range w.members {
		if !m.up || m.removed || m.core == nil || m.core.AppliedIndex() < w.rc.lastIndex {
			continue
		}
		cs := m.core.ConfState()
		if len(cs.GetVoters()) > 0 && !slices.Equal(slices.Sorted(slices.Values(cs.GetVoters())), want) {
			w.fail(chkMembership, "member %d (applied %d) ends with voters %v, the last completed change (at index %d) made them %v",
				m.id, m.core.AppliedIndex(), cs.GetVoters(), w.rc.lastIndex, want)
		}
	}
	w.tracef("membership: %d changes started, final voters %s", w.rc.changes, strings.Trim(fmt.Sprint(want), "[]"))
}
