package consensus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
)

// seedMarker names the file Seed keeps in a data directory while it writes
// it: a member refuses to start on a directory holding it (an interrupted
// seeding would otherwise look like empty storage and bootstrap an empty
// group).
const seedMarker = "SEEDING"

// checkNotSeeding refuses a data directory whose seeding did not finish.
func checkNotSeeding(dataDir string) error {
	if _, err := os.Stat(filepath.Join(dataDir, seedMarker)); err == nil {
		return fmt.Errorf("%s holds %s: importing or restoring into it did not finish; empty it and import or restore again", dataDir, seedMarker)
	}
	return nil
}

// Seed creates the raft storage of a new member in dataDir whose state is
// the state machine snapshot payload at (term, index), with voters as the
// group's members, and nothing after it: a member started on it restarts
// from that snapshot (Restore), and every later entry gets an index above
// index. The others of a group start with empty storage and Join, and
// receive the snapshot from the leader. dataDir must exist and hold no raft
// storage. While Seed writes, dataDir holds a marker file (seedMarker) that
// makes Start refuse the directory, so an interrupted Seed never passes for
// empty storage.
func Seed(dataDir string, term, index uint64, voters []uint64, payload []byte) error {
	if index == 0 || term == 0 || len(voters) == 0 {
		return fmt.Errorf("seed: index %d, term %d, %d voters: all must be positive", index, term, len(voters))
	}
	for _, name := range []string{dbFileName, walDirName, snapDirName, seedMarker} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("seed: %s already holds %s", dataDir, name)
		}
	}
	marker := filepath.Join(dataDir, seedMarker)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	s, err := openDiskStore(dataDir)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := s.seed(term, index, voters, payload); err != nil {
		_ = s.Close()
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	// Every write above is durable (fsync'd by bbolt, the WAL and writeSnapFile);
	// removing the marker makes the directory usable.
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

func (s *diskStore) seed(term, index uint64, voters []uint64, payload []byte) error {
	if err := s.SaveSnapshot(term, index, payload); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	cs := &pb.ConfState{Voters: append([]uint64(nil), voters...)}
	w := WriteBatch{
		Snapshot:  SeedMetadata(index, term, cs),
		HardState: &pb.HardState{Term: new(term), Commit: new(index)},
		ConfState: cs,
	}
	if err := s.Write(&w); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}
