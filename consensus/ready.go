package consensus

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// handleReady processes one raft.Ready in the documented order. Any error
// is fatal to the node: the caller stops the loop without calling Advance.
func (n *Node) handleReady(rd raft.Ready) error {
	if rd.SoftState != nil {
		n.lead.Store(rd.SoftState.Lead)
		n.isLeader.Store(rd.SoftState.RaftState == raft.StateLeader)
		n.raftState.Store(uint64(rd.SoftState.RaftState))
	}

	// 1. Persist: snapshot file first, then snapshot metadata, hard state
	// and entries in one bbolt transaction (one fsync for the whole batch).
	hasSnap := !raft.IsEmptySnap(rd.Snapshot)
	if hasSnap {
		// Ordered against the snapshotter recording a local snapshot.
		n.snaps.mu.Lock()
		defer n.snaps.mu.Unlock()
	}
	if err := n.persist(rd, hasSnap); err != nil {
		return err
	}

	// 2. Mirror into raft's in-memory storage, which raft reads from.
	if hasSnap {
		if err := n.mem.ApplySnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("apply snapshot to raft storage: %w", err)
		}
	}
	if rd.HardState != nil {
		if err := n.mem.SetHardState(rd.HardState); err != nil {
			return fmt.Errorf("set hard state: %w", err)
		}
	}
	if err := n.mem.Append(rd.Entries); err != nil {
		return fmt.Errorf("append entries to raft storage: %w", err)
	}

	// 3. Send: only now is everything the messages promise durable.
	if n.transport != nil && len(rd.Messages) > 0 {
		n.transport.Send(rd.Messages)
	}

	// 4. Apply the snapshot and committed entries to the state machine.
	if hasSnap {
		if err := n.restoreSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := n.applyCommitted(rd.CommittedEntries); err != nil {
		return err
	}
	n.reads.deliver(rd.ReadStates)
	n.maybeNotifyLeader()

	// 5. Snapshot if due, then tell raft this Ready is done.
	if err := n.maybeSnapshot(); err != nil {
		return err
	}
	n.rn.Advance()
	if n.confDirty {
		n.publishConf()
	}
	return nil
}

// persist writes the durable part of rd. A HardState that only moves the
// commit index (rd.MustSync false, no entries) is not written on its own:
// raft allows losing it, and it rides along with the next write. This keeps
// one fsync per Ready on the sequential-propose path.
func (n *Node) persist(rd raft.Ready, hasSnap bool) error {
	var w writeBatch
	if hasSnap {
		md := rd.Snapshot.GetMetadata()
		if err := writeSnapFile(n.store.snapDir, md.GetTerm(), md.GetIndex(), rd.Snapshot.GetData()); err != nil {
			return fmt.Errorf("save received snapshot at index %d: %w", md.GetIndex(), err)
		}
		w.snapshot = md
		w.dropAllEntries = true
		w.confState = md.GetConfState()
	}
	if rd.HardState != nil {
		n.hardState = rd.HardState
		n.hsDirty = true
		n.term.Store(rd.HardState.GetTerm())
	}
	w.entries = rd.Entries
	if n.hsDirty && (rd.MustSync || !w.empty()) {
		w.hardState = n.hardState
	}
	if err := n.store.write(&w); err != nil {
		return err
	}
	if w.hardState != nil {
		n.hsDirty = false
	}
	if len(rd.Entries) > 0 {
		n.batches.Add(1)
		n.persisted.Add(uint64(len(rd.Entries)))
	}
	if hasSnap {
		if err := pruneSnapFiles(n.store.snapDir); err != nil {
			return err
		}
	}
	return nil
}

// restoreSnapshot hands a snapshot received from the leader to the state
// machine. It is durable on disk already.
func (n *Node) restoreSnapshot(s *pb.Snapshot) error {
	md := s.GetMetadata()
	if err := n.sm.Restore(md.GetIndex(), s.GetData()); err != nil {
		return fmt.Errorf("restore state machine from snapshot at index %d: %w", md.GetIndex(), err)
	}
	n.setConfState(pb.EnsureConfState(proto.Clone(md.GetConfState()).(*pb.ConfState)))
	n.snapIndex.Store(md.GetIndex())
	n.applied.advance(md.GetIndex())
	n.lg.Info().Uint64("index", md.GetIndex()).Uint64("term", md.GetTerm()).Msg("restored snapshot from leader")
	return nil
}

// applyCommitted applies committed entries in order. Entries at or below the
// applied index (already covered by a snapshot) are skipped.
func (n *Node) applyCommitted(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	applied := n.applied.get()
	confChanged := false
	for _, e := range ents {
		idx := e.GetIndex()
		if idx <= applied {
			continue
		}
		if idx != applied+1 {
			return fmt.Errorf("committed entry %d does not follow applied index %d", idx, applied)
		}
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) > 0 {
				if err := n.sm.Apply(idx, e.GetTerm(), e.GetData()); err != nil {
					// Fatal: the applied index stays below idx and the
					// caller returns before Advance.
					n.applied.advance(applied)
					return fmt.Errorf("state machine cannot apply entry %d (term %d): %w", idx, e.GetTerm(), err)
				}
			}
		case pb.EntryConfChange:
			var cc pb.ConfChange
			if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
				return fmt.Errorf("decode conf change at index %d: %w", idx, err)
			}
			n.applyConfChange(&cc)
			confChanged = true
		case pb.EntryConfChangeV2:
			var cc pb.ConfChangeV2
			if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
				return fmt.Errorf("decode conf change v2 at index %d: %w", idx, err)
			}
			n.applyConfChange(&cc)
			confChanged = true
		default:
			return fmt.Errorf("unknown entry type %v at index %d", e.GetType(), idx)
		}
		applied = idx
	}
	if confChanged {
		// A snapshot from before this change does not list new members,
		// and raft on a new member refuses such a snapshot. Once the log
		// has been compacted a new member can only join through a
		// snapshot, so take a fresh one at the end of this Ready.
		n.snapAfterConfChange = n.snapIndex.Load() > 0
		if err := n.writeWithHardState(&writeBatch{confState: n.confState.Load()}); err != nil {
			return err
		}
	}
	n.applied.advance(applied)
	return nil
}

// applyConfChange applies cc to raft and tells the transport about peers.
func (n *Node) applyConfChange(cc pb.ConfChangeI) {
	cs := n.rn.ApplyConfChange(cc)
	n.setConfState(pb.EnsureConfState(cs))
	v2 := cc.AsV2()
	pu, _ := n.transport.(PeerUpdater)
	for _, ch := range v2.GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
			if pu != nil && id != n.cfg.ID && len(v2.GetContext()) > 0 {
				pu.AddPeer(Peer{ID: id, Addr: string(v2.GetContext())})
			}
		case pb.ConfChangeRemoveNode:
			if pu != nil && id != n.cfg.ID {
				pu.RemovePeer(id)
			}
			if id == n.cfg.ID {
				n.lg.Warn().Msg("this member was removed from the group")
				if n.cfg.OnRemoved != nil {
					n.cfg.OnRemoved()
				}
			}
		}
	}
	n.lg.Info().Str("change", pb.ConfChangesToString(v2.GetChanges())).
		Uints64("voters", cs.GetVoters()).Msg("applied conf change")
}

// maybeNotifyLeader calls OnLeaderChange when the leader or this member's
// leadership changed since the last call.
func (n *Node) maybeNotifyLeader() {
	lead, me := n.lead.Load(), n.isLeader.Load()
	if lead == n.notifiedLead && me == n.notifiedMe {
		return
	}
	n.notifiedLead, n.notifiedMe = lead, me
	n.lg.Info().Uint64("leader", lead).Bool("is_leader", me).Uint64("term", n.term.Load()).Msg("leader changed")
	if n.cfg.OnLeaderChange != nil {
		n.cfg.OnLeaderChange(me, lead, n.term.Load())
	}
}

// writeWithHardState writes w durably, with the hard state if it changed
// since it was last written.
func (n *Node) writeWithHardState(w *writeBatch) error {
	if n.hsDirty {
		w.hardState = n.hardState
	}
	if err := n.store.write(w); err != nil {
		return err
	}
	if w.hardState != nil {
		n.hsDirty = false
	}
	return nil
}
