package consensus

import (
	"fmt"
	"os"
	"syscall"
)

// sync_file_range(2) flags.
const (
	syncFileRangeWaitBefore = 1
	syncFileRangeWrite      = 2
	syncFileRangeWaitAfter  = 4
)

// paceWriteback writes back [off, off+n) of f and waits until it is on
// disk (sync_file_range: data only, no metadata, no durability promise).
// Called after each chunk of a large file, it makes the file go to disk in
// steps paced by the device instead of one flood at the final fsync, so the
// raft log's small fsyncs, queued behind it, wait for one chunk at most.
//
// A writeback error is returned, not ignored: the wait reports it and
// advances the file's error cursor, so the final fsync on the same
// descriptor would no longer see it (Linux ≥ 4.13, errseq). Only "not
// supported here" answers are ignored: then the final fsync writes the
// whole file, as where paceWriteback is a no-op.
func paceWriteback(f *os.File, off, n int64) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n),
		syncFileRangeWaitBefore|syncFileRangeWrite|syncFileRangeWaitAfter, 0, 0)
	switch errno {
	case 0, syscall.ENOSYS, syscall.EINVAL, syscall.ESPIPE, syscall.EOPNOTSUPP:
		return nil
	}
	return fmt.Errorf("sync_file_range: %w", errno)
}
