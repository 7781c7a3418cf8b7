//go:build linux

package consensus

import (
	"os"
	"syscall"
)

// fdatasync makes f's data (and the size needed to read it) durable without
// flushing other metadata such as the modification time.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
