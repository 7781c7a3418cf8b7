package consensus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Seed creates the raft storage of a new member in dataDir whose state is
// the state machine snapshot payload at (term, index), with voters as the
// group's members, and nothing after it: a member started on it restarts
// from that snapshot (Restore), and every later entry gets an index above
// index. The others of a group start with empty storage and Join, and
// receive the snapshot from the leader. dataDir must hold no raft storage.
func Seed(dataDir string, term, index uint64, voters []uint64, payload []byte) (err error) {
	if index == 0 || term == 0 || len(voters) == 0 {
		return fmt.Errorf("seed: index %d, term %d, %d voters: all must be positive", index, term, len(voters))
	}
	for _, name := range []string{dbFileName, snapDirName} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("seed: %s already holds %s", dataDir, name)
		}
	}
	s, err := openDiskStore(dataDir)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("seed: %w", cerr)
		}
	}()
	if err := s.SaveSnapshot(term, index, payload); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	cs := &pb.ConfState{Voters: append([]uint64(nil), voters...)}
	w := WriteBatch{
		Snapshot:  &pb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: cs},
		HardState: &pb.HardState{Term: new(term), Commit: new(index)},
		ConfState: cs,
	}
	if err := s.Write(&w); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}
