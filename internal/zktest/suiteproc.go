package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SuiteProcess is a client suite started by StartSuite: it runs in the
// background while the test acts on the servers (kills a leader, restarts
// a member), and Wait judges it by the same rules as RunSuite.
type SuiteProcess struct {
	argv     []string
	cmd      *exec.Cmd
	cancel   context.CancelFunc
	stdout   *lineWriter
	stderr   *lineWriter
	done     chan struct{} // closed once the process is reaped
	waitErr  error         // the process's exit; valid after done
	timedOut bool          // the timeout killed the process; valid after done
}

// StartSuite starts the client suite argv like RunSuite does (own process
// group, killed as a whole when timeout passes, env added to the test
// process's environment) and returns without waiting for it. Every output
// line is passed to onLine as soon as it is complete: stdout lines as
// printed, stderr lines with the prefix "stderr: " (each stream in order,
// the two possibly concurrently); onLine is never called once Done is
// closed. A nil onLine logs every
// line to t. The process is killed in t's cleanup if it still runs.
func StartSuite(t testing.TB, timeout time.Duration, env []string, onLine func(string), argv ...string) *SuiteProcess {
	t.Helper()
	if onLine == nil {
		onLine = func(l string) { t.Log(l) }
	}
	p, err := startSuite(onLine, timeout, env, argv)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(p.kill)
	return p
}

// startSuite is StartSuite without the test: the caller must call kill or
// result.
func startSuite(onLine func(string), timeout time.Duration, env, argv []string) (*SuiteProcess, error) {
	if len(argv) == 0 {
		return nil, errors.New("no suite command given")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// Own process group (killed as a whole); and killed by the kernel if the
	// test binary dies before its cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = suiteWaitDelay
	p := &SuiteProcess{
		argv:   argv,
		cmd:    cmd,
		cancel: cancel,
		stdout: &lineWriter{emit: onLine, keep: true},
		stderr: &lineWriter{emit: func(l string) { onLine("stderr: " + l) }},
		done:   make(chan struct{}),
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start suite %s: %w", strings.Join(argv, " "), err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		p.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		p.stdout.close()
		p.stderr.close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the suite's process has exited and its output is
// complete.
func (p *SuiteProcess) Done() <-chan struct{} { return p.done }

// Signal sends sig to the suite's process group: SIGSTOP and SIGCONT pause
// and resume a client program (its session then expires as if it hung).
func (p *SuiteProcess) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal %v to suite %s: %w", sig, strings.Join(p.argv, " "), err)
	}
	return nil
}

// kill ends the process group (if it still runs) and reaps it.
func (p *SuiteProcess) kill() {
	p.cancel()
	<-p.done
}

// Wait waits for the suite to exit (at most until its timeout, when its
// process group is killed) and fails t unless it passed by RunSuite's rules.
func (p *SuiteProcess) Wait(t testing.TB) {
	t.Helper()
	if err := p.result(); err != nil {
		t.Fatalf("suite %s: %v", strings.Join(p.argv, " "), err)
	}
}

// result waits for the process and returns the verdict.
func (p *SuiteProcess) result() error {
	<-p.done
	p.cancel()
	if p.timedOut {
		return errors.New("the suite did not finish within its time limit")
	}
	return verdict(p.stdout.lines(), p.waitErr)
}
