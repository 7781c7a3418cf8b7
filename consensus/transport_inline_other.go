//go:build !unix

package consensus

import "syscall"

// writeNow is not available here: every frame goes through the peer's
// sender goroutine.
func writeNow(syscall.RawConn, []byte) int { return 0 }
