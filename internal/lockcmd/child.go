//go:build unix

package lockcmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// child is CMD, run in its own process group so that a signal reaches
// everything it started (a shell's children too).
type child struct {
	cmd  *exec.Cmd
	pgid int           // CMD's process group: its pid
	done chan struct{} // closed once CMD has been reaped (and the terminal taken back)
	err  error         // Wait's result, valid after done
}

// startChild runs argv with env added to the environment and the standard
// streams of this process.
func startChild(argv, env []string) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Its own process group (the terminal's foreground group if this
	// process has the terminal); and (on Linux) SIGTERM if zkraft itself
	// dies, so CMD does not outlive the process that holds its lock.
	tty := foregroundTerminal()
	cmd.SysProcAttr = procAttr(tty)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	c := &child{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		if tty >= 0 {
			takeTerminal(tty)
		}
		close(c.done)
	}()
	return c, nil
}

// signal sends sig to CMD's process group, also once CMD itself has exited
// while other processes of its group remain; not once the group is gone.
func (c *child) signal(sig syscall.Signal) {
	if c.groupAlive() {
		_ = syscall.Kill(-c.pgid, sig)
	}
}

// groupAlive reports whether a process of CMD's group still runs.
func (c *child) groupAlive() bool { return groupAlive(c.pgid) }

// status is CMD's exit status as a shell reports it: its exit code, or
// 128 + the signal that killed it. Valid after done.
func (c *child) status() int {
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if c.err != nil {
		return ExitFailure
	}
	return 0
}
