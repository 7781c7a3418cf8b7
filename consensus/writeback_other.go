//go:build !(linux && amd64)

package consensus

import "os"

// paceWriteback is a no-op where sync_file_range is not wired up (see
// writeback_linux_amd64.go): the final fsync writes the whole file.
func paceWriteback(*os.File, int64, int64) error { return nil }
