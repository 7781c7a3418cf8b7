package consensus

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// countOpenSyncs replaces openSync for the test with wrappers that record
// what they sync (file and directory paths, and bbolt syncs as dbFileName).
func countOpenSyncs(t *testing.T) *[]string {
	t.Helper()
	saved := openSync
	t.Cleanup(func() { openSync = saved })
	var synced []string
	openSync.file = func(f *os.File) error {
		synced = append(synced, f.Name())
		return saved.file(f)
	}
	openSync.dir = func(dir string) error {
		synced = append(synced, dir)
		return saved.dir(dir)
	}
	openSync.db = func(db *bolt.DB) error {
		synced = append(synced, filepath.Base(db.Path()))
		return saved.db(db)
	}
	return &synced
}

// TestOpenSyncsWhatItReplays checks that open makes durable what it
// replays and what reconcile acts on: a record or a bbolt commit that a
// crashed process left only in the page cache reads like a durable one.
func TestOpenSyncsWhatItReplays(t *testing.T) {
	errKilled := errors.New("killed before fdatasync")
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, s *diskStore) // the process dies during it
	}{
		{"clean close", func(*testing.T, *diskStore) {}},
		{"record written, not synced", func(t *testing.T, s *diskStore) {
			s.wal.syncFile = func(*os.File) error { return errKilled }
			require.ErrorIs(t, s.Write(&WriteBatch{HardState: hardState(2, 30), Entries: ents(31, 33, 2)}), errKilled)
		}},
		{"leader snapshot in bbolt, crash before the wal", func(t *testing.T, s *diskStore) {
			s.crash = func(p string) error {
				if p == "after-bbolt" {
					return errKilled
				}
				return nil
			}
			require.ErrorIs(t, s.Write(&WriteBatch{Snapshot: snapMeta(40, 3), DropAllEntries: true, HardState: hardState(3, 40)}), errKilled)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s := openSegmentedStore(t, 30)
			tc.crash(t, s)
			require.NoError(t, s.Close())
			segs := walFiles(t, dir)
			require.Greater(t, len(segs), 1)

			synced := countOpenSyncs(t)
			s, err := openDiskStore(dir)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.GreaterOrEqual(t, len(*synced), 3)
			// bbolt first (upgrade and reconcile read it), then the WAL's
			// last segment and its directory.
			require.Equal(t, []string{dbFileName, segs[len(segs)-1], filepath.Join(dir, walDirName)}, (*synced)[:3])
		})
	}
}

// TestDiskStoreRemovesSegmentsOutsideLock checks that a Write's segment
// removals (each waits for a directory fsync) run without the store's mu,
// so that other Writes need not wait for them, and one at a time (delMu).
func TestDiskStoreRemovesSegmentsOutsideLock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write *WriteBatch
	}{
		{"local snapshot with compaction", &WriteBatch{Snapshot: snapMeta(25, 1), CompactBelow: 20}},
		{"leader snapshot", &WriteBatch{Snapshot: snapMeta(40, 3), DropAllEntries: true, HardState: hardState(3, 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s := openSegmentedStore(t, 30)
			before := len(walFiles(t, dir))
			saved := removeSync
			t.Cleanup(func() { removeSync = saved })
			var muFree, delMuFree []bool
			removeSync = func(dir string) error {
				free := s.mu.TryLock()
				if free {
					s.mu.Unlock()
				}
				muFree = append(muFree, free)
				free = s.delMu.TryLock()
				if free {
					s.delMu.Unlock()
				}
				delMuFree = append(delMuFree, free)
				return saved(dir)
			}
			mustWrite(t, s, tc.write)
			require.Less(t, len(walFiles(t, dir)), before, "segments removed")
			require.NotEmpty(t, muFree)
			for i := range muFree {
				require.True(t, muFree[i], "removal %d runs holding mu", i)
				require.False(t, delMuFree[i], "removal %d runs without delMu", i)
			}
			require.NoError(t, s.Close())
		})
	}
}
