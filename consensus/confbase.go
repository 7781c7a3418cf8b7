package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Conf change bases.
//
// A step a MemberChange proposes carries, in its conf change's Context, the
// conf state it was planned against (its base). Apply (Core.applyConfChange)
// takes the step only if the conf state applied at that moment is its base;
// otherwise it applies it as a no-op (raft's cancellation: every change's
// node id zeroed) and logs it. The decision reads only the entry and the
// replicated conf state, so every member decides alike. A change planned
// against a membership that another change (one committed but not yet
// applied where it was planned, or one applied in between) has moved
// therefore never lands on top of that other change; its MemberChange
// fails with ErrMembershipChanged.
//
// A context without the base prefix is read as before (peerContext: the
// address of an added member, observerTag for an observer, or nothing): the
// entries of existing logs, raft's bootstrap entries and the leader's
// promotions (maybePromote) apply unconditionally, as they always did.
// Members of older builds read a based context as an address and apply the
// step unconditionally: every member must run a build that knows bases
// before a membership change is made.
//
// Format (version 1): baseMagic, the version byte, then the base's voters,
// learners, outgoing voters and next learners, each as a uvarint count and
// that many uvarint ids (sorted), one byte auto-leave (0 or 1), and then the
// peer context of an added member (may be empty). baseMagic starts with a
// zero byte, which no address does, and differs from observerTag (the
// context of an observer without an address) in its second byte.

// baseMagic starts a conf change context that carries a base.
const baseMagic = "\x00zkbase"

// baseVersion is the format version of a based context this build writes
// and reads.
const baseVersion = 1

// errBadContext marks a conf change context with the base prefix that this
// build cannot read: apply stops at it (as at any entry it cannot read).
var errBadContext = errors.New("consensus: unreadable conf change context")

// stepContext returns the context of a step planned against base, with
// peer (peerContext, or nil) after it.
func stepContext(base *pb.ConfState, peer []byte) []byte {
	b := append([]byte(baseMagic), baseVersion)
	for _, ids := range [][]uint64{base.GetVoters(), base.GetLearners(), base.GetVotersOutgoing(), base.GetLearnersNext()} {
		b = binary.AppendUvarint(b, uint64(len(ids)))
		for _, id := range slices.Sorted(slices.Values(ids)) {
			b = binary.AppendUvarint(b, id)
		}
	}
	if base.GetAutoLeave() {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return append(b, peer...)
}

// parseStepContext splits a conf change context into its base (nil if it
// has none: the context is read as before) and its peer context.
func parseStepContext(ctx []byte) (base *pb.ConfState, peer []byte, err error) {
	rest, ok := bytes.CutPrefix(ctx, []byte(baseMagic))
	if !ok {
		return nil, ctx, nil
	}
	if len(rest) == 0 || rest[0] != baseVersion {
		return nil, nil, fmt.Errorf("%w: base format version %v, this build reads %d", errBadContext, rest[:min(len(rest), 1)], baseVersion)
	}
	rest = rest[1:]
	var lists [4][]uint64
	for i := range lists {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)) {
			return nil, nil, fmt.Errorf("%w: truncated base", errBadContext)
		}
		rest = rest[k:]
		for range n {
			id, k := binary.Uvarint(rest)
			if k <= 0 {
				return nil, nil, fmt.Errorf("%w: truncated base", errBadContext)
			}
			lists[i], rest = append(lists[i], id), rest[k:]
		}
	}
	if len(rest) == 0 || rest[0] > 1 {
		return nil, nil, fmt.Errorf("%w: truncated base", errBadContext)
	}
	base = &pb.ConfState{Voters: lists[0], Learners: lists[1], VotersOutgoing: lists[2], LearnersNext: lists[3]}
	if rest[0] == 1 {
		base.AutoLeave = new(true)
	}
	return base, rest[1:], nil
}

// sameConf reports whether a and b are the same configuration: the same
// voters, learners, outgoing voters and next learners, in any order, and
// the same auto-leave.
func sameConf(a, b *pb.ConfState) bool {
	same := func(x, y []uint64) bool {
		return slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y)))
	}
	return same(a.GetVoters(), b.GetVoters()) && same(a.GetLearners(), b.GetLearners()) &&
		same(a.GetVotersOutgoing(), b.GetVotersOutgoing()) && same(a.GetLearnersNext(), b.GetLearnersNext()) &&
		a.GetAutoLeave() == b.GetAutoLeave()
}

// stepConf returns cs with the simple (one change at a time) conf change cc
// applied, as raft applies it outside a joint configuration: a new copy.
func stepConf(cs *pb.ConfState, cc *pb.ConfChangeV2) *pb.ConfState {
	next := &pb.ConfState{Voters: slices.Clone(cs.GetVoters()), Learners: slices.Clone(cs.GetLearners()),
		VotersOutgoing: slices.Clone(cs.GetVotersOutgoing()), LearnersNext: slices.Clone(cs.GetLearnersNext()),
		AutoLeave: cs.AutoLeave}
	for _, ch := range cc.GetChanges() {
		id := ch.GetNodeId()
		if id == 0 {
			continue
		}
		drop := func(ids []uint64) []uint64 { return slices.DeleteFunc(ids, func(v uint64) bool { return v == id }) }
		next.Voters, next.Learners = drop(next.Voters), drop(next.Learners)
		switch ch.GetType() {
		case pb.ConfChangeAddNode:
			next.Voters = append(next.Voters, id)
		case pb.ConfChangeAddLearnerNode:
			next.Learners = append(next.Learners, id)
		}
	}
	return next
}

// cancelled returns the conf change raft applies as no change in place of
// cc: one change of cc's type with node id zero (raft's documented way to
// cancel a committed conf change; an empty ConfChangeV2 would mean leaving
// a joint configuration, which raft refuses with a panic outside one).
func cancelled(cc *pb.ConfChangeV2) *pb.ConfChangeV2 {
	t := pb.ConfChangeRemoveNode
	if chs := cc.GetChanges(); len(chs) > 0 {
		t = chs[0].GetType()
	}
	return &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: t.Enum(), NodeId: new(uint64(0))}}}
}
