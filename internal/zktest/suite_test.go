package zktest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	exitErr := errors.New("exit status 1")
	tests := []struct {
		name    string
		lines   []string
		runErr  error
		wantErr string // "" means success
	}{
		{"all passed", []string{"PASS a", "PASS b", "2 passed, 0 failed"}, nil, ""},
		{"other output is allowed", []string{"# setup", "PASS a", "1 passed, 0 failed"}, nil, ""},
		{"a failure", []string{"PASS a", "FAIL b: x", "1 passed, 1 failed"}, exitErr, "FAIL b: x"},
		{"FAIL line but summary claims success", []string{"FAIL b: x", "1 passed, 0 failed"}, nil, "1 check(s) failed"},
		{"FAIL line, success summary and exit 0", []string{"PASS a", "FAIL b: x", "1 passed, 0 failed"}, nil, "FAIL b: x"},
		{"failures counted but no FAIL line", []string{"PASS a", "1 passed, 1 failed"}, exitErr, "reports failed checks"},
		{"no check ran", []string{"0 passed, 0 failed"}, nil, "ran no check"},
		{"count mismatch", []string{"PASS a", "2 passed, 0 failed"}, nil, "2 passed but 1 PASS lines"},
		{"no summary", []string{"PASS a"}, nil, "is not the summary"},
		{"summary not last", []string{"1 passed, 0 failed", "PASS a"}, nil, "is not the summary"},
		{"trailing blank line", []string{"PASS a", "1 passed, 0 failed", ""}, nil, "is not the summary"},
		{"summary with trailing space", []string{"PASS a", "1 passed, 0 failed "}, nil, "is not the summary"},
		{"two summaries", []string{"PASS a", "1 passed, 0 failed", "PASS b", "2 passed, 0 failed"}, nil, "2 summary lines"},
		{"huge count", []string{"PASS a", "99999999999999999999 passed, 0 failed"}, nil, "out of range"},
		{"success but bad exit", []string{"PASS a", "1 passed, 0 failed"}, exitErr, "exited with exit status 1"},
		{"no output", nil, exitErr, "printed nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verdict(tt.lines, tt.runErr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("verdict(%q, %v) = %v; want success", tt.lines, tt.runErr, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("verdict(%q, %v) succeeded; want an error containing %q", tt.lines, tt.runErr, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("verdict(%q, %v) = %v; want an error containing %q", tt.lines, tt.runErr, err, tt.wantErr)
			}
		})
	}
}

// logRecorder collects what runSuite logs, from any goroutine.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) log(l string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
}

func (r *logRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// TestRunSuite runs small shell scripts as suites.
func TestRunSuite(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		env     []string
		timeout time.Duration
		wantErr string // "" means success
		wantLog []string
	}{
		{
			name:    "passing suite, stdout and stderr logged",
			script:  `echo "PASS a"; echo note >&2; echo "1 passed, 0 failed"`,
			wantLog: []string{"PASS a", "stderr: note", "1 passed, 0 failed"},
		},
		{
			name:    "last line without newline",
			script:  `printf 'PASS a\n1 passed, 0 failed'`,
			wantLog: []string{"PASS a", "1 passed, 0 failed"},
		},
		{
			name:    "env reaches the suite",
			script:  `echo "PASS $SUITE_CHECK"; echo "1 passed, 0 failed"`,
			env:     []string{"SUITE_CHECK=env"},
			wantLog: []string{"PASS env", "1 passed, 0 failed"},
		},
		{
			name:    "failing suite",
			script:  `echo "PASS a"; echo "FAIL b: wrong"; echo "1 passed, 1 failed"; exit 1`,
			wantErr: "FAIL b: wrong",
		},
		{
			name:    "good summary, bad exit status",
			script:  `echo "PASS a"; echo "1 passed, 0 failed"; exit 3`,
			wantErr: "exit status 3",
		},
		{
			// The grandchild keeps stdout open: only killing the whole
			// process group lets runSuite return before the wait delay.
			name:    "timeout kills the process group",
			script:  `echo "PASS a"; sleep 60 & sleep 60`,
			timeout: 300 * time.Millisecond,
			wantErr: "did not finish within 300ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.timeout == 0 {
				tt.timeout = 10 * time.Second
			}
			rec := &logRecorder{}
			start := time.Now()
			err := runSuite(rec.log, tt.timeout, tt.env, []string{"/bin/sh", "-c", tt.script})
			if took := time.Since(start); took >= suiteWaitDelay {
				t.Errorf("runSuite took %v; the process group was not killed", took)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("runSuite: %v; want success (log %q)", err, rec.got())
			case tt.wantErr != "" && err == nil:
				t.Fatalf("runSuite succeeded; want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("runSuite: %v; want an error containing %q", err, tt.wantErr)
			}
			if tt.wantLog != nil {
				got := rec.got()
				// stdout and stderr are read concurrently: compare as sets.
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tt.wantLog))
				if !slices.Equal(got, want) {
					t.Fatalf("logged %q; want %q", got, want)
				}
			}
		})
	}
}

func TestRunSuiteNoCommand(t *testing.T) {
	if err := runSuite(func(string) {}, time.Second, nil, nil); err == nil {
		t.Fatal("runSuite with no command succeeded")
	}
}
