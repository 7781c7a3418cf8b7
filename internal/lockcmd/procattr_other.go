//go:build unix && !linux

package lockcmd

import "syscall"

// procAttr: CMD's own process group (no parent-death signal outside Linux).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
