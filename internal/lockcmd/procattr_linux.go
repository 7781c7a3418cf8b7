package lockcmd

import "syscall"

// procAttr: CMD's own process group, and SIGTERM when zkraft dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
