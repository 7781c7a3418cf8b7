//go:build unix && !linux

package lockcmd

import "syscall"

// procAttr: CMD's own process group (no parent-death signal outside Linux;
// CMD is not given the terminal: one that reads it is stopped by SIGTTIN).
func procAttr(int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// foregroundTerminal: not handled outside Linux.
func foregroundTerminal() int { return -1 }

func takeTerminal(int) {}

// groupAlive reports whether group pgid still exists (zombies included).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}
