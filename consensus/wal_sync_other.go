//go:build !linux

package consensus

import "os"

// fdatasync is File.Sync where fdatasync(2) is not available.
func fdatasync(f *os.File) error { return f.Sync() }
