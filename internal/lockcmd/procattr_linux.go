package lockcmd

import (
	"bufio"
	"bytes"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

// procAttr: CMD's own process group, and SIGTERM when zkraft dies. If tty
// is not -1 (stdin is zkraft's controlling terminal and zkraft's group is
// in its foreground), CMD's group is made the terminal's foreground group,
// so that a CMD reading the terminal is not stopped by SIGTTIN (and gets
// the terminal's ^C, as a shell's job would); takeTerminal gives it back.
func procAttr(tty int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if tty >= 0 {
		a.Foreground, a.Ctty = true, tty
	}
	return a
}

// foregroundTerminal returns 0 (stdin's descriptor) if stdin is this
// process's controlling terminal and this process's group is its
// foreground group; -1 otherwise (not a terminal, or running in the
// background, where taking the terminal would steal it from the shell).
func foregroundTerminal() int {
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return -1
	}
	if int(pgrp) != syscall.Getpgrp() {
		return -1
	}
	return 0
}

// takeTerminal makes this process's group the foreground group of tty
// again. As a background process it would get SIGTTOU for that: the signal
// is ignored meanwhile.
func takeTerminal(tty int) {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	pgrp := int32(syscall.Getpgrp())
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(tty), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
}

// groupAlive reports whether a process of group pgid is still running (a
// zombie does not count: whoever inherited it may never reap it).
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b[i+1:]))
		sc.Split(bufio.ScanWords)
		var f []string
		for len(f) < 3 && sc.Scan() {
			f = append(f, sc.Text())
		}
		if len(f) == 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
