package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A client suite is a program that takes a server address, prints one line
// per check, "PASS <check>" or "FAIL <check>: <reason>", and ends with
// exactly one line "N passed, M failed"; it exits 0 only if M is 0.
// RunSuite runs one and judges it by that contract.

// summaryRE matches a suite's closing line.
var summaryRE = regexp.MustCompile(`^(\d+) passed, (\d+) failed$`)

// suiteWaitDelay bounds how long RunSuite waits for the output pipes to
// close once the suite's process group has been killed.
const suiteWaitDelay = 10 * time.Second

// RunSuite runs the client suite argv (program and arguments, the server
// address included), with env added to the test process's environment, and
// fails t unless the suite passed.
//
// The suite runs in its own process group, which is killed as a whole when
// timeout passes. Every stdout line is logged to t as it comes, every stderr
// line with the prefix "stderr: ". The suite passed only if all of these
// hold:
//   - it finished within timeout and exited with status 0;
//   - its last stdout line is exactly "N passed, M failed", and no other
//     line is;
//   - M is 0 and no line starts with "FAIL ";
//   - N > 0 and N equals the number of lines starting with "PASS ".
func RunSuite(t testing.TB, timeout time.Duration, env []string, argv ...string) {
	t.Helper()
	if err := runSuite(func(line string) { t.Log(line) }, timeout, env, argv); err != nil {
		t.Fatalf("suite %s: %v", strings.Join(argv, " "), err)
	}
}

// runSuite is RunSuite with the outcome returned: logLine receives every
// output line (never after runSuite has returned).
func runSuite(logLine func(string), timeout time.Duration, env, argv []string) error {
	if len(argv) == 0 {
		return errors.New("no suite command given")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// Own process group (killed as a whole); and killed by the kernel if the
	// test binary dies before its cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = suiteWaitDelay
	stdout := &lineWriter{emit: logLine, keep: true}
	stderr := &lineWriter{emit: func(l string) { logLine("stderr: " + l) }}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := cmd.Run()
	// After WaitDelay, Run may return while a copying goroutine still
	// holds a line; close ends the logging either way.
	stdout.close()
	stderr.close()
	if ctx.Err() != nil {
		return fmt.Errorf("the suite did not finish within %v", timeout)
	}
	return verdict(stdout.lines(), runErr)
}

// verdict judges a finished suite by its stdout lines and the error of its
// run (nil for exit status 0); see RunSuite for the rules.
func verdict(lines []string, runErr error) error {
	pass, summaries := 0, 0
	var fails []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "PASS "):
			pass++
		case strings.HasPrefix(l, "FAIL "):
			fails = append(fails, l)
		case summaryRE.MatchString(l):
			summaries++
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("the suite printed nothing on stdout (exit: %v)", runErr)
	}
	if len(fails) > 0 {
		return fmt.Errorf("%d check(s) failed (exit: %v):\n%s", len(fails), runErr, strings.Join(fails, "\n"))
	}
	last := lines[len(lines)-1]
	m := summaryRE.FindStringSubmatch(last)
	if m == nil {
		return fmt.Errorf("last line %q is not the summary \"N passed, M failed\" (exit: %v)", last, runErr)
	}
	if summaries != 1 {
		return fmt.Errorf("%d summary lines printed, want exactly one", summaries)
	}
	n, errN := strconv.Atoi(m[1])
	f, errF := strconv.Atoi(m[2])
	switch {
	case errN != nil || errF != nil:
		return fmt.Errorf("summary %q: counts out of range", last)
	case f != 0:
		return fmt.Errorf("summary %q reports failed checks but printed no FAIL line (exit: %v)", last, runErr)
	case n == 0:
		return fmt.Errorf("summary %q: the suite ran no check", last)
	case n != pass:
		return fmt.Errorf("summary %q says %d passed but %d PASS lines were printed", last, n, pass)
	case runErr != nil:
		return fmt.Errorf("the suite reported success but exited with %w", runErr)
	}
	return nil
}

// lineWriter is an io.Writer that hands each complete line to emit and, if
// keep is set, remembers the lines. After close it drops all input.
type lineWriter struct {
	emit func(string)
	keep bool

	mu     sync.Mutex
	buf    bytes.Buffer
	kept   []string
	closed bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.buf.Next(i + 1)))
	}
}

// line emits one line without its line ending; w.mu is held.
func (w *lineWriter) line(s string) {
	s = strings.TrimRight(s, "\r\n")
	w.emit(s)
	if w.keep {
		w.kept = append(w.kept, s)
	}
}

// close emits a last line that had no newline and stops the writer.
func (w *lineWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.buf.Len() > 0 {
		w.line(w.buf.String())
		w.buf.Reset()
	}
	w.closed = true
}

func (w *lineWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.kept...)
}
