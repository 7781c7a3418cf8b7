package consensus

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestFreezeAndCreateFromSnapshot: a frozen state restored into a new data
// dir starts as a member holding it, and new entries get higher indexes.
func TestFreezeAndCreateFromSnapshot(t *testing.T) {
	src := startTestNode(t, t.TempDir())
	src.waitLeader(t)
	want := src.proposeEach(t, "a", 5)
	src.settle(t)
	fs, err := src.Freeze(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, src.AppliedIndex(), fs.Index)
	require.NotZero(t, fs.Term)
	require.Equal(t, []uint64{1}, fs.ConfState.GetVoters())
	// Later writes do not change the frozen view.
	src.proposeEach(t, "later", 2)
	data, err := fs.Serialize()
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, CreateFromSnapshot(dir, fs.Term, fs.Index, &pb.ConfState{Voters: []uint64{1}}, data))
	err = CreateFromSnapshot(dir, fs.Term, fs.Index, &pb.ConfState{Voters: []uint64{1}}, data)
	require.True(t, errors.Is(err, ErrDataDirNotEmpty), "%v", err)

	dst := startTestNode(t, dir)
	dst.waitLeader(t)
	require.Equal(t, want, dst.sm.state().datas)
	require.Equal(t, 1, dst.sm.restores)
	dst.proposeEach(t, "b", 1)
	idx := dst.sm.state().indexes
	require.Greater(t, idx[len(idx)-1], fs.Index)
	require.Empty(t, dst.sm.violations())
}

func TestCreateFromSnapshotRefuses(t *testing.T) {
	cs := &pb.ConfState{Voters: []uint64{1}}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, dbFileName), nil, 0o600))
	require.ErrorIs(t, CreateFromSnapshot(dir, 1, 1, cs, []byte("x")), ErrDataDirNotEmpty)
	require.Error(t, CreateFromSnapshot(t.TempDir(), 0, 1, cs, []byte("x")))
	require.Error(t, CreateFromSnapshot(t.TempDir(), 1, 1, &pb.ConfState{}, []byte("x")))
}

// TestStartRefusesUnfinishedCreateFromSnapshot: a restore killed after
// writing the storage but before finishing leaves a directory Start
// refuses, not one it takes for a new member's empty storage.
func TestStartRefusesUnfinishedCreateFromSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	createFromSnapshotCrash = func() error { return errors.New("killed") }
	t.Cleanup(func() { createFromSnapshotCrash = nil })
	require.Error(t, CreateFromSnapshot(dir, 1, 5, &pb.ConfState{Voters: []uint64{1}}, []byte("x")))
	_, err := Start(Config{ID: 1, Peers: []Peer{{ID: 1}}, DataDir: dir}, nil)
	require.ErrorContains(t, err, "did not finish")
	// And a second restore into it is refused too.
	createFromSnapshotCrash = nil
	require.ErrorIs(t, CreateFromSnapshot(dir, 1, 5, &pb.ConfState{Voters: []uint64{1}}, []byte("x")), ErrDataDirNotEmpty)
}
