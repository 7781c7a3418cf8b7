package zktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartSuite checks that lines reach the caller while the suite still
// runs, and that the verdict follows RunSuite's rules.
func TestStartSuite(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	// The suite prints a line, then waits (bounded) for the test to create
	// the gate file before finishing.
	script := `echo "progress 1"; i=0; while [ ! -e "$GATE" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -e "$GATE" ] && echo "PASS gate" && echo "1 passed, 0 failed" && exit 0
echo "FAIL gate: not opened"; echo "0 passed, 1 failed"; exit 1`
	lines := make(chan string, 10)
	p, err := startSuite(func(l string) { lines <- l }, 10*time.Second, []string{"GATE=" + gate}, []string{"/bin/sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	defer p.kill()
	select {
	case l := <-lines:
		if l != "progress 1" {
			t.Fatalf("first line %q; want %q", l, "progress 1")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no line within 5 s")
	}
	select {
	case <-p.Done():
		t.Fatal("the suite ended before the gate opened")
	default:
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.result(); err != nil {
		t.Fatalf("result: %v", err)
	}
}

func TestStartSuiteVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		wantErr string
	}{
		{"failing suite", `echo "FAIL a: no"; echo "0 passed, 1 failed"; exit 1`, 0, "FAIL a: no"},
		{"timeout kills the process group", `echo "PASS a"; sleep 60 & sleep 60`, 300 * time.Millisecond, "did not finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.timeout == 0 {
				tt.timeout = 10 * time.Second
			}
			start := time.Now()
			p, err := startSuite(func(string) {}, tt.timeout, nil, []string{"/bin/sh", "-c", tt.script})
			if err != nil {
				t.Fatal(err)
			}
			err = p.result()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("result: %v; want an error containing %q", err, tt.wantErr)
			}
			if took := time.Since(start); took >= suiteWaitDelay {
				t.Errorf("took %v; the process group was not killed", took)
			}
		})
	}
}

// TestStartSuiteKill: the cleanup ends a suite that still runs, promptly.
func TestStartSuiteKill(t *testing.T) {
	p, err := startSuite(func(string) {}, time.Minute, nil, []string{"/bin/sh", "-c", "sleep 60 & sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.kill()
	if took := time.Since(start); took >= suiteWaitDelay {
		t.Errorf("kill took %v", took)
	}
	if _, err := startSuite(func(string) {}, time.Second, nil, nil); err == nil {
		t.Error("startSuite with no command succeeded")
	}
}
