package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSnapshotsFollowDataLogDir pins what the README says of dataLogDir: the
// raft log and the snapshots are written there, and dataDir gets neither.
func TestSnapshotsFollowDataLogDir(t *testing.T) {
	logDir := t.TempDir()
	s := startServer(t, func(c *Config) {
		c.DataLogDir = logDir
		c.SnapshotEvery = 5
	})
	c := workload(t, s)
	for i := range 20 {
		_, err := c.Set("/a", []byte{byte(i)}, -1)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		snaps, _ := filepath.Glob(filepath.Join(logDir, "snap", "*.snap"))
		return len(snaps) > 0
	}, 10*time.Second, 10*time.Millisecond, "no snapshot in dataLogDir")
	require.FileExists(t, filepath.Join(logDir, "raft.db"))
	entries, err := os.ReadDir(s.cfg.DataDir)
	require.NoError(t, err)
	require.Empty(t, entries, "dataDir holds files although dataLogDir is set")
}
