package consensus

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// raftStorage is the raft.Storage raft reads: the Core's MemoryStorage,
// whose snapshot is recorded without its payload (the Core calls
// CreateSnapshot and ApplySnapshot with nil Data). The payload is durable in
// the Storage already, so Snapshot loads it from there when raft wants to
// send a snapshot to a lagging member, which is rare: a member does not keep
// a second copy of its state (as large as the state's encoding) in memory
// for as long as the snapshot is the latest.
//
// Invariant: the recorded snapshot's payload file exists in store while it
// is MemoryStorage's snapshot (PruneSnapshots keeps the newest two, and a
// newer one is recorded in MemoryStorage only after its file is durable).
type raftStorage struct {
	*raft.MemoryStorage
	store Storage
}

// Snapshot returns the latest snapshot with its payload read from the
// Storage. If the payload cannot be read (for instance it was just pruned
// after a newer snapshot was recorded), raft is told to try again later.
func (s *raftStorage) Snapshot() (*pb.Snapshot, error) {
	snap, err := s.MemoryStorage.Snapshot()
	if err != nil {
		return snap, err
	}
	md := snap.GetMetadata()
	if md.GetIndex() == 0 {
		return snap, nil
	}
	// A local snapshot's conf state (CreateSnapshot) carries its conf index:
	// raft must see the raw conf state, the index goes on the metadata.
	if _, ok := confIndexOf(md.GetConfState()); ok {
		snap = &pb.Snapshot{Metadata: snapshotMeta(md.GetIndex(), md.GetTerm(), md.GetConfState()), Data: snap.GetData()}
		md = snap.GetMetadata()
	}
	if len(snap.GetData()) > 0 {
		return snap, nil
	}
	data, err := s.store.LoadSnapshot(md.GetTerm(), md.GetIndex())
	if err != nil {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	snap.Data = data
	return snap, nil
}

// withoutData returns a copy of snap's metadata as a snapshot without
// payload, for MemoryStorage.ApplySnapshot.
func withoutData(snap *pb.Snapshot) *pb.Snapshot {
	return &pb.Snapshot{Metadata: snap.GetMetadata()}
}
