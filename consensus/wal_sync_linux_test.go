//go:build linux

package consensus

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// sysCachestat is cachestat(2) (Linux 6.5+), the same number on every
// architecture.
const sysCachestat = 451

// dirtyPages returns the number of dirty page-cache pages of path, and
// false if the kernel has no cachestat.
func dirtyPages(t *testing.T, path string) (uint64, bool) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var rng [2]uint64 // offset, length (0: to the end)
	var cs [5]uint64  // cache, dirty, writeback, evicted, recently evicted
	_, _, e := syscall.Syscall6(sysCachestat, f.Fd(), uintptr(unsafe.Pointer(&rng)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0)
	if e != 0 {
		return 0, false
	}
	return cs[1], true
}

// TestOpenLeavesNoDirtyPages kills a process (as far as the files are
// concerned) after a write reached the page cache but before its
// fdatasync, and checks with cachestat(2) that open made it durable: the
// restarted member loads it and will act on it, so it must survive an OS
// crash. The check needs dirty pages when the store is reopened; the test
// is skipped, not passed, when the kernel has no cachestat or wrote the
// pages back first.
func TestOpenLeavesNoDirtyPages(t *testing.T) {
	for _, tc := range []struct {
		name string
		// crash leaves an unsynced write; it returns the file holding it.
		crash func(t *testing.T, s *diskStore, dir string) string
	}{
		{"wal record", func(t *testing.T, s *diskStore, dir string) string {
			s.wal.syncFile = func(*os.File) error { return errors.New("killed before fdatasync") }
			require.Error(t, s.Write(&WriteBatch{HardState: hardState(2, 3), Entries: ents(4, 6, 2)}))
			segs := walFiles(t, dir)
			return segs[len(segs)-1]
		}},
		{"bbolt commit", func(t *testing.T, s *diskStore, dir string) string {
			s.db.NoSync = true // the commit's fdatasync never runs
			s.crash = func(p string) error {
				if p == "after-bbolt" {
					return errors.New("killed")
				}
				return nil
			}
			require.Error(t, s.Write(&WriteBatch{Snapshot: snapMeta(3, 1), CompactBelow: 2}))
			return filepath.Join(dir, dbFileName)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			mustWrite(t, s, &WriteBatch{HardState: hardState(1, 2), Entries: ents(1, 3, 1)})
			path := tc.crash(t, s, dir)
			require.NoError(t, s.Close())
			n, ok := dirtyPages(t, path)
			if !ok {
				t.Skip("no cachestat(2)")
			}
			if n == 0 {
				t.Skip("the pages were written back already")
			}
			s, _ = reload(t, nil, dir)
			defer func() { _ = s.Close() }()
			n, _ = dirtyPages(t, path)
			require.Zero(t, n, "open relies on a write that is only in the page cache")
		})
	}
}
