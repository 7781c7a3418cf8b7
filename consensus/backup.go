package consensus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Backups (zkraft snapshot save / restore).
//
// Freeze takes the state machine's frozen view at the applied index on the
// loop goroutine, exactly as a local snapshot does (SnapshotFreezer), and
// returns it with the index, its term and the conf state as of it; the
// caller serializes it off the loop. CreateFromSnapshot makes a new data
// directory whose only content is such a snapshot, recorded at its index,
// with the conf state the caller chooses: a restarted member then restores
// it, elects a leader in a later term and appends entries (zxids) above it.

// FrozenState is the state machine frozen at one applied index.
type FrozenState struct {
	Index, Term uint64
	ConfState   *pb.ConfState
	// Write writes what StateMachine.Snapshot would have returned at Index
	// to w. It may run on any goroutine, once (Write or Serialize).
	Write func(w io.Writer) error
}

// Serialize returns what StateMachine.Snapshot would have returned at
// Index: fs.Write into memory. It may run on any goroutine, once (Write or
// Serialize).
func (fs FrozenState) Serialize() ([]byte, error) { return Collect(fs.Write) }

// Freeze freezes the state machine at the applied index on the loop
// goroutine (a SnapshotFreezer's cheap copy, or Snapshot) and returns it.
// Call ReadIndex first for a state that holds every write acknowledged
// before the call. Errors: ErrStopped, ctx.Err(), or the state machine's.
func (n *Node) Freeze(ctx context.Context) (FrozenState, error) {
	type result struct {
		fs  FrozenState
		err error
	}
	resC := make(chan result, 1)
	n.q.push(func(n *Node) {
		fs, err := n.core.freeze()
		resC <- result{fs, err}
	})
	select {
	case r := <-resC:
		return r.fs, r.err
	case <-ctx.Done():
		return FrozenState{}, ctx.Err()
	case <-n.done:
		return FrozenState{}, ErrStopped
	}
}

// freeze runs on the core's goroutine, between Applies.
func (c *Core) freeze() (FrozenState, error) {
	applied := c.applied.get()
	term, err := c.mem.Term(applied)
	if err != nil {
		return FrozenState{}, fmt.Errorf("term of applied index %d: %w", applied, err)
	}
	fs := FrozenState{Index: applied, Term: term, ConfState: proto.Clone(rawConf(c.confState.Load())).(*pb.ConfState)}
	if f, ok := c.sm.(SnapshotFreezer); ok {
		if fs.Write, err = f.FreezeSnapshot(); err != nil {
			return FrozenState{}, fmt.Errorf("freeze state machine at index %d: %w", applied, err)
		}
		return fs, nil
	}
	data, err := c.sm.Snapshot()
	if err != nil {
		return FrozenState{}, fmt.Errorf("state machine snapshot at index %d: %w", applied, err)
	}
	fs.Write = writeBytes(data)
	return fs, nil
}

// ErrDataDirNotEmpty is returned by CreateFromSnapshot for a directory that
// already holds raft state.
var ErrDataDirNotEmpty = errors.New("data directory is not empty")

// CreateFromSnapshot makes dataDir (created if missing) the storage of a
// member whose state is data, a StateMachine snapshot, recorded at (term,
// index) with the conf state cs: the snapshot file, its metadata, the conf
// state and a hard state of that term committed up to index, with no log
// entries. dataDir must not hold raft.db, wal/ or snap/ already. Starting a Node
// on it restores the snapshot and continues after index. While it writes,
// dataDir holds Seed's marker (seedMarker): Start refuses a directory whose
// restore did not finish.
func CreateFromSnapshot(dataDir string, term, index uint64, cs *pb.ConfState, data []byte) error {
	if index == 0 || term == 0 {
		return fmt.Errorf("snapshot at index %d term %d: both must be positive", index, term)
	}
	if len(cs.GetVoters()) == 0 {
		return errors.New("conf state without voters")
	}
	for _, name := range []string{dbFileName, walDirName, snapDirName, seedMarker} {
		if _, err := os.Lstat(filepath.Join(dataDir, name)); err == nil {
			return fmt.Errorf("%w: %s exists", ErrDataDirNotEmpty, filepath.Join(dataDir, name))
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("check data dir: %w", err)
		}
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	// As Seed: the marker makes Start refuse the directory until every
	// write below is durable, so a restore killed midway never passes for
	// empty storage (a member would bootstrap an empty tree on it).
	marker := filepath.Join(dataDir, seedMarker)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("create data dir from snapshot: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("create data dir from snapshot: %w", err)
	}
	st, err := openDiskStore(dataDir)
	if err != nil {
		return err
	}
	err = st.SaveSnapshot(term, index, data)
	if err == nil {
		err = st.Write(&WriteBatch{
			Snapshot:  SeedMetadata(index, term, cs),
			HardState: &pb.HardState{Term: new(term), Commit: new(index)},
			ConfState: rawConf(cs),
		})
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err == nil && createFromSnapshotCrash != nil {
		err = createFromSnapshotCrash()
	}
	if err != nil {
		return fmt.Errorf("create data dir from snapshot: %w", err)
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("create data dir from snapshot: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("create data dir from snapshot: %w", err)
	}
	return nil
}

// createFromSnapshotCrash, set by tests, stands for a crash of
// CreateFromSnapshot after the storage is written but before it finished.
var createFromSnapshotCrash func() error
