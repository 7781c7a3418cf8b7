package javaclient_test

import (
	"bytes"
	"context"
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

// summaryRE matches the suite's closing line.
var summaryRE = regexp.MustCompile(`^(\d+) passed, (\d+) failed$`)

// runSuite runs name with args (and env added to the environment) in its
// own process group, killed as a whole on timeout; it logs every output line
// and fails t unless the suite passed.
func runSuite(t *testing.T, timeout time.Duration, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout := &lineLogger{t: t, prefix: "", keep: true}
	stderr := &lineLogger{t: t, prefix: "stderr: "}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := cmd.Run()
	stdout.flush()
	stderr.flush()
	if ctx.Err() != nil {
		t.Fatalf("suite did not finish within %v", timeout)
	}
	if err := verdict(stdout.lines(), runErr); err != nil {
		t.Fatal(err)
	}
}

// verdict checks the suite's stdout lines and exit status.
func verdict(lines []string, runErr error) error {
	var last string
	pass, fail := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "PASS "):
			pass++
		case strings.HasPrefix(l, "FAIL "):
			fail++
		}
		if strings.TrimSpace(l) != "" {
			last = strings.TrimSpace(l)
		}
	}
	m := summaryRE.FindStringSubmatch(last)
	if m == nil {
		return fmt.Errorf("last line %q is not the summary (exit: %v)", last, runErr)
	}
	n, _ := strconv.Atoi(m[1])
	f, _ := strconv.Atoi(m[2])
	switch {
	case f != 0 || fail != 0:
		return fmt.Errorf("%d check(s) failed (%d FAIL lines); exit: %v", f, fail, runErr)
	case n == 0:
		return fmt.Errorf("the suite ran no check")
	case n != pass:
		return fmt.Errorf("summary says %d passed but %d PASS lines were printed", n, pass)
	case runErr != nil:
		return fmt.Errorf("the suite reported success but exited with %v", runErr)
	}
	return nil
}

// lineLogger is an io.Writer that logs each complete line to t and, if
// keep is set, remembers the lines.
type lineLogger struct {
	t      *testing.T
	prefix string
	keep   bool

	mu   sync.Mutex
	buf  bytes.Buffer
	kept []string
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		l.emit(string(l.buf.Next(i + 1)))
	}
}

func (l *lineLogger) emit(line string) {
	line = strings.TrimRight(line, "\r\n")
	l.t.Log(l.prefix + line)
	if l.keep {
		l.kept = append(l.kept, line)
	}
}

// flush logs a last line that had no newline.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 0 {
		l.emit(l.buf.String())
		l.buf.Reset()
	}
}

func (l *lineLogger) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.kept...)
}

func TestVerdict(t *testing.T) {
	exitErr := fmt.Errorf("exit status 1")
	tests := []struct {
		name    string
		lines   []string
		runErr  error
		wantErr bool
	}{
		{"all passed", []string{"PASS a", "PASS b", "2 passed, 0 failed"}, nil, false},
		{"trailing blank line", []string{"PASS a", "1 passed, 0 failed", ""}, nil, false},
		{"a failure", []string{"PASS a", "FAIL b: x", "1 passed, 1 failed"}, exitErr, true},
		{"FAIL line but summary claims success", []string{"FAIL b: x", "1 passed, 0 failed"}, nil, true},
		{"no check ran", []string{"0 passed, 0 failed"}, nil, true},
		{"count mismatch", []string{"PASS a", "2 passed, 0 failed"}, nil, true},
		{"no summary", []string{"PASS a"}, nil, true},
		{"summary not last", []string{"1 passed, 0 failed", "PASS a"}, nil, true},
		{"success but bad exit", []string{"PASS a", "1 passed, 0 failed"}, exitErr, true},
		{"no output", nil, exitErr, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verdict(tt.lines, tt.runErr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("verdict(%q, %v) = %v, want error: %v", tt.lines, tt.runErr, err, tt.wantErr)
			}
		})
	}
}
