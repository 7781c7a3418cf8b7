package consensus

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// While a snapshot is being serialized and written, proposals keep being
// committed and applied: the raft loop never waits for it (before the fix
// the loop called Snapshot and fsync'd the file itself, so nothing was
// applied after the snapshot point until it finished). Once it finishes the
// snapshot is recorded, the log compacted, and a restart restores it.
func TestSnapshotWriteDoesNotStallLoop(t *testing.T) {
	dir := t.TempDir()
	small := func(cfg *Config) { cfg.SnapshotEvery, cfg.KeepEntries = 10, 5 }
	tn := startTestNode(t, dir, small)
	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // runs before the node is stopped, even on failure
	tn.sm.mu.Lock()
	tn.sm.gate = gate
	tn.sm.mu.Unlock()
	tn.waitLeader(t)

	want := tn.proposeEach(t, "blocked", 40) // crosses the snapshot point several times
	require.Zero(t, tn.Status().LastSnapshotIndex, "snapshot recorded while its writing is blocked")
	require.Zero(t, tn.Status().SnapshotsTaken, "snapshot counted while its writing is blocked")

	open()
	require.Eventually(t, func() bool { return tn.Status().LastSnapshotIndex > 0 }, testTimeout, 5*time.Millisecond)
	want = append(want, tn.proposeEach(t, "after", 20)...)
	tn.settle(t)
	st := tn.Status()
	require.NotZero(t, st.LastSnapshotIndex)
	require.Greater(t, st.FirstIndex, uint64(1), "log compacted behind the snapshot")
	require.NotZero(t, st.SnapshotsTaken, "a recorded snapshot is counted")
	require.Empty(t, tn.sm.violations())

	require.NoError(t, tn.Stop())
	re := startTestNode(t, dir, small)
	re.waitLeader(t)
	re.sm.waitCount(t, len(want))
	require.Equal(t, want, re.sm.state().datas)
	require.Equal(t, 1, re.sm.restores, "restarted from the snapshot")
	require.Zero(t, re.Status().SnapshotsTaken, "a restored snapshot is not one taken")
	require.Empty(t, re.sm.violations())
}

// The snapshotter records a snapshot without the hard state, and the commit
// index is written lazily, so a crash can leave the durable commit index
// behind the recorded snapshot. Start must accept that (raft would panic on
// a commit index below its snapshot) and restore from the snapshot.
func TestRestartWithCommitBehindSnapshot(t *testing.T) {
	dir := t.TempDir()
	small := func(cfg *Config) { cfg.SnapshotEvery, cfg.KeepEntries = 10, 5 }
	tn := startTestNode(t, dir, small)
	tn.waitLeader(t)
	want := tn.proposeEach(t, "x", 25)
	require.Eventually(t, func() bool { return tn.Status().LastSnapshotIndex > 0 }, testTimeout, 5*time.Millisecond)
	require.NoError(t, tn.Stop())

	// What a crash right after the snapshot was recorded can leave behind.
	st, err := openDiskStore(dir)
	require.NoError(t, err)
	loaded, err := st.Load()
	require.NoError(t, err)
	require.NotNil(t, loaded.Snapshot)
	hs := loaded.HardState
	hs.Commit = new(loaded.Snapshot.GetIndex() - 1)
	require.NoError(t, st.Write(&WriteBatch{HardState: hs}))
	require.NoError(t, st.Close())

	re := startTestNode(t, dir, small)
	re.waitLeader(t)
	re.sm.waitCount(t, len(want))
	require.Equal(t, want, re.sm.state().datas)
	require.Empty(t, re.sm.violations())
}

// Raft's in-memory storage records a snapshot without its payload (a second
// copy of the state in memory); what raft sends a lagging member is read
// from the snapshot file, byte for byte the payload recorded, both after a
// local snapshot and after a restart from one.
func TestRaftStorageSnapshotPayloadFromFile(t *testing.T) {
	dir := t.TempDir()
	small := func(cfg *Config) { cfg.SnapshotEvery, cfg.KeepEntries = 10, 5 }
	check := func(tn *testNode) {
		t.Helper()
		c := tn.core
		held, err := c.mem.Snapshot()
		require.NoError(t, err)
		md := held.GetMetadata()
		require.NotZero(t, md.GetIndex())
		require.Empty(t, held.GetData(), "the in-memory storage holds the snapshot's payload")
		sent, err := (&raftStorage{MemoryStorage: c.mem, store: c.store}).Snapshot()
		require.NoError(t, err)
		file, err := c.store.LoadSnapshot(md.GetTerm(), md.GetIndex())
		require.NoError(t, err)
		require.NotEmpty(t, file)
		require.Equal(t, file, sent.GetData())
		require.Equal(t, md.GetIndex(), sent.GetMetadata().GetIndex())
	}
	tn := startTestNode(t, dir, small)
	tn.waitLeader(t)
	want := tn.proposeEach(t, "x", 25)
	require.Eventually(t, func() bool { return tn.Status().LastSnapshotIndex > 0 }, testTimeout, 5*time.Millisecond)
	tn.settle(t)
	check(tn)
	require.NoError(t, tn.Stop())

	re := startTestNode(t, dir, small)
	re.waitLeader(t)
	re.sm.waitCount(t, len(want))
	check(re)
}

// snapshotThreshold: alone, a member snapshots every SnapshotEvery
// entries; in a group, after between half of that and all of it, a
// different number per member (and per snapshot), so that the members do
// not all snapshot at the same index.
func TestSnapshotThresholdSpreadsMembers(t *testing.T) {
	const every = 100000
	core := func(id uint64, voters ...uint64) *Core {
		c := &Core{cfg: Config{ID: id, SnapshotEvery: every}}
		c.confState.Store(&pb.ConfState{Voters: voters})
		return c
	}
	for _, last := range []uint64{0, 1, 12345, every} {
		require.Equal(t, uint64(every), core(1, 1).snapshotThreshold(last), "a single member")
	}
	seen := map[uint64]bool{}
	for id := uint64(1); id <= 3; id++ {
		c := core(id, 1, 2, 3)
		for last := uint64(0); last < 50*every; last += every {
			th := c.snapshotThreshold(last)
			require.GreaterOrEqual(t, th, uint64(every/2))
			require.LessOrEqual(t, th, uint64(every))
			require.Equal(t, th, c.snapshotThreshold(last), "deterministic")
			seen[th] = true
		}
	}
	require.Greater(t, len(seen), 140, "thresholds of 3 members x 50 snapshots are spread, not one value")
	a, b, c := core(1, 1, 2, 3).snapshotThreshold(0), core(2, 1, 2, 3).snapshotThreshold(0), core(3, 1, 2, 3).snapshotThreshold(0)
	require.False(t, a == b && b == c, "the members' first snapshots at one index: %d %d %d", a, b, c)
}

// The members of a group take their snapshots at different indexes (they
// all took it at the SnapshotEvery-th entry, at once, which slowed every
// quorum together).
func TestClusterMembersSnapshotAtDifferentIndexes(t *testing.T) {
	opts := func(cfg *Config) { cfg.SnapshotEvery, cfg.KeepEntries = 40, 5 }
	c := newCluster(t, 3, opts)
	lead := c.waitLeader()
	c.nodes[lead].proposeEach(t, "e", 45)
	c.waitAllApplied(45)
	idx := map[uint64]bool{}
	for _, tn := range c.nodes {
		require.Eventually(t, func() bool { return tn.Status().LastSnapshotIndex > 0 }, testTimeout, 5*time.Millisecond)
		idx[tn.Status().LastSnapshotIndex] = true
	}
	require.Greater(t, len(idx), 1, "every member took its first snapshot at the same index")
}
