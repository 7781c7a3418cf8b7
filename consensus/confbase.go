package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
// A base also names a point in the conf state's history: the index of the
// conf change entry that made it (its conf index), so that a step planned
// against a membership that changed and came back to the same voters and
// learners (a rollback that removed the learner the step adds) applies as
// no change too. Without it, a copy of an add step still on its way when
// the change was given up (a proposal re-sent every election timeout) could
// commit after the rollback and add the member again, unreported. Every
// conf state the Core holds carries its conf index (withConfIndex) as a
// protobuf field raft does not know (confIndexField). Raft must never see
// it on a conf state (it compares a snapshot's conf state with its own
// field by field, unknown fields included, and panics on a difference), so
// a snapshot's metadata carries a raw conf state and the conf index as the
// same unknown field of the metadata itself (snapshotMeta): raft copies a
// snapshot whole and compares only its conf state, so the index travels in
// bbolt's snapshot records and in the leader's MsgSnap, and a member of an
// older build ignores it. A new group's seeded snapshot (SeedMetadata)
// names its own index as the conf index. A conf state without one (from a
// snapshot written by an older build, or one whose conf index was written
// for another snapshot index: confIndexAtField, with no conf change
// applied since) has an unknown history: before a change proposes a based
// step on it, it proposes a conf change that changes nothing
// (MemberChange's markHistory), whose apply gives every member the same
// conf index; a version 1 base (no conf index) is still read, and judged
// by content only; and a member that does not know its conf index judges a
// version 2 base by content only. That member knows
// none only while no conf change applied since its snapshot, so for the
// history to differ a conf change would have to lie between the step's
// base and that snapshot, taken by an older build while the step was
// planned: a membership change during a rolling upgrade, which the rule
// below already excludes.
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
// context of an observer without an address) in its second byte. Version 2
// adds the base's conf index, a uvarint, after the auto-leave byte. A build
// that reads only version 1 stops at a version 2 step (errBadContext):
// every member must run a build that reads version 2 before a membership
// change is made.

// baseMagic starts a conf change context that carries a base.
const baseMagic = "\x00zkbase"

// The format versions of a based context: baseVersion without the conf
// index (written for a base whose conf index is unknown), baseVersionIndex
// with it. This build reads both.
const (
	baseVersion      = 1
	baseVersionIndex = 2
)

// confIndexField is the protobuf field number under which a conf state
// carries its conf index (a varint), unknown to raft's ConfState.
const confIndexField protowire.Number = 1000

// withConfIndex returns a copy of cs that carries idx as its conf index.
func withConfIndex(cs *pb.ConfState, idx uint64) *pb.ConfState {
	out := proto.Clone(pb.EnsureConfState(cs)).(*pb.ConfState)
	ref := out.ProtoReflect()
	unknown := stripField(ref.GetUnknown(), confIndexField)
	unknown = protowire.AppendTag(unknown, confIndexField, protowire.VarintType)
	ref.SetUnknown(protowire.AppendVarint(unknown, idx))
	return out
}

// ConfIndex returns the conf index of a conf state the Core handed out
// (ConfState): the index of the conf change entry that made it, if known
// (confbase.go). For checkers.
func ConfIndex(cs *pb.ConfState) (uint64, bool) { return confIndexOf(cs) }

// confIndexOf returns the conf index cs carries, if any.
func confIndexOf(cs *pb.ConfState) (uint64, bool) {
	if cs == nil {
		return 0, false
	}
	return unknownVarint(cs.ProtoReflect().GetUnknown(), confIndexField)
}

// unknownVarint returns the last varint field numbered num in the unknown
// fields b, if any.
func unknownVarint(b []byte, num protowire.Number) (uint64, bool) {
	idx, found := uint64(0), false
	for len(b) > 0 {
		n, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return 0, false
		}
		b = b[k:]
		if n == num && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, false
			}
			idx, found = v, true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return 0, false
		}
		b = b[m:]
	}
	return idx, found
}

// rawConf returns cs without its conf index, as raft must see it.
func rawConf(cs *pb.ConfState) *pb.ConfState {
	if _, ok := confIndexOf(cs); !ok {
		return cs
	}
	out := proto.Clone(cs).(*pb.ConfState)
	ref := out.ProtoReflect()
	ref.SetUnknown(stripField(ref.GetUnknown(), confIndexField))
	return out
}

// snapshotMeta returns the metadata of a snapshot at index and term with
// conf state cs: the raw conf state and, if cs's conf index is known, that
// index and the snapshot's own index as the metadata's unknown fields
// confIndexField and confIndexAtField.
func snapshotMeta(index, term uint64, cs *pb.ConfState) *pb.SnapshotMetadata {
	md := &pb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: rawConf(cs)}
	if idx, ok := confIndexOf(cs); ok {
		ref := md.ProtoReflect()
		b := protowire.AppendTag(nil, confIndexField, protowire.VarintType)
		b = protowire.AppendVarint(b, idx)
		b = protowire.AppendTag(b, confIndexAtField, protowire.VarintType)
		ref.SetUnknown(protowire.AppendVarint(b, index))
	}
	return md
}

// confIndexAtField is the unknown field of a snapshot's metadata naming the
// snapshot index its conf index was written for. raft's MemoryStorage
// updates a snapshot's index, term and conf state in place
// (CreateSnapshot) and keeps the unknown fields, so a build that does not
// write them (an older one, after a downgrade) could serve a snapshot with
// the conf index of an earlier one; only a conf index written for the
// metadata's own index is believed, any other is unknown. (From a review.)
const confIndexAtField protowire.Number = 1001

// snapshotConf returns the conf state of a snapshot's metadata md with the
// conf index md carries, if it was written for md's index (a copy: raft's
// is left alone).
func snapshotConf(md *pb.SnapshotMetadata) *pb.ConfState {
	cs := rawConf(proto.Clone(pb.EnsureConfState(md.GetConfState())).(*pb.ConfState))
	if md == nil {
		return cs
	}
	u := md.ProtoReflect().GetUnknown()
	if at, ok := unknownVarint(u, confIndexAtField); !ok || at != md.GetIndex() {
		return cs
	}
	if idx, ok := unknownVarint(u, confIndexField); ok {
		return withConfIndex(cs, idx)
	}
	return cs
}

// SeedMetadata returns the metadata of the snapshot a new group's members
// start from (Seed, bootstrapWithLearners, CreateFromSnapshot; the
// simulator's seeded members): every member seeded at index has the conf
// state cs from there, so index is its conf index (known from the start,
// not only from the first conf change on).
func SeedMetadata(index, term uint64, cs *pb.ConfState) *pb.SnapshotMetadata {
	return snapshotMeta(index, term, withConfIndex(rawConf(cs), index))
}

// stripField returns the unknown fields b without those numbered num.
func stripField(b []byte, num protowire.Number) []byte {
	var out []byte
	for len(b) > 0 {
		n, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return out
		}
		m := protowire.ConsumeFieldValue(n, typ, b[k:])
		if m < 0 {
			return out
		}
		if n != num {
			out = append(out, b[:k+m]...)
		}
		b = b[k+m:]
	}
	return out
}

// sameHistory reports whether the conf states a and b (the same voters and
// learners: sameConf) are the same point of the conf state's history: the
// same conf index, or either's unknown.
func sameHistory(a, b *pb.ConfState) bool {
	ai, aok := confIndexOf(a)
	bi, bok := confIndexOf(b)
	return !aok || !bok || ai == bi
}

// errBadContext marks a conf change context with the base prefix that this
// build cannot read: apply stops at it (as at any entry it cannot read).
var errBadContext = errors.New("consensus: unreadable conf change context")

// stepContext returns the context of a step planned against base, with
// peer (peerContext, or nil) after it.
func stepContext(base *pb.ConfState, peer []byte) []byte {
	idx, known := confIndexOf(base)
	version := byte(baseVersion)
	if known {
		version = baseVersionIndex
	}
	b := append([]byte(baseMagic), version)
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
	if known {
		b = binary.AppendUvarint(b, idx)
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
	if len(rest) == 0 || (rest[0] != baseVersion && rest[0] != baseVersionIndex) {
		return nil, nil, fmt.Errorf("%w: base format version %v, this build reads %d and %d", errBadContext,
			rest[:min(len(rest), 1)], baseVersion, baseVersionIndex)
	}
	version := rest[0]
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
	rest = rest[1:]
	if version == baseVersionIndex {
		idx, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, nil, fmt.Errorf("%w: truncated base conf index", errBadContext)
		}
		base, rest = withConfIndex(base, idx), rest[k:]
	}
	return base, rest, nil
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
