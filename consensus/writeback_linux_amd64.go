package consensus

import (
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
// Errors are ignored: the final fsync is what makes the file durable and
// reports failures.
func paceWriteback(f *os.File, off, n int64) {
	_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n),
		syncFileRangeWaitBefore|syncFileRangeWrite|syncFileRangeWaitAfter, 0, 0)
}
