//go:build unix

package consensus

import (
	"errors"
	"syscall"
)

// writeNow writes b to the socket behind rc once, without waiting for it to
// become writable (the descriptor is non-blocking, as the runtime keeps
// every socket): it returns how many bytes the kernel took, 0 when its
// buffer is full (EAGAIN) or the write failed (the sender's next write on
// the connection reports that).
func writeNow(rc syscall.RawConn, b []byte) int {
	var n int
	var err error
	if cerr := rc.Write(func(fd uintptr) bool {
		for {
			n, err = syscall.Write(int(fd), b)
			if !errors.Is(err, syscall.EINTR) {
				return true // done, whatever happened: never wait
			}
		}
	}); cerr != nil || err != nil || n < 0 {
		return 0
	}
	return n
}
