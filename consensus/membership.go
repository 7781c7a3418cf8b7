package consensus

import (
	"context"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// AddMember proposes adding p as a voter (its Addr travels in the conf
// change so every member's transport learns it) and waits until this member
// has applied the change. The new member must then be started with
// Config.Join. Raft refuses a conf change while another is pending; the call
// then waits until ctx is done.
func (n *Node) AddMember(ctx context.Context, p Peer) error {
	if p.ID == 0 {
		return fmt.Errorf("consensus: add member: id must be non-zero")
	}
	cc := &pb.ConfChangeV2{
		Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(p.ID)}},
		Context: []byte(p.Addr),
	}
	return n.changeMembership(ctx, cc, func(cs *pb.ConfState) bool {
		return slices.Contains(cs.GetVoters(), p.ID)
	})
}

// RemoveMember proposes removing member id and waits until this member has
// applied the change.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	cc := &pb.ConfChangeV2{
		Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(id)}},
	}
	return n.changeMembership(ctx, cc, func(cs *pb.ConfState) bool {
		return !slices.Contains(cs.GetVoters(), id) && !slices.Contains(cs.GetLearners(), id)
	})
}

func (n *Node) changeMembership(ctx context.Context, cc *pb.ConfChangeV2, applied func(*pb.ConfState) bool) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	if n.lead.Load() == 0 {
		return ErrNoLeader
	}
	if err := n.rn.ProposeConfChange(ctx, cc); err != nil {
		return n.mapErr(err)
	}
	for {
		ch := n.confWatch()
		if applied(n.confState.Load()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return ErrStopped
		}
	}
}
