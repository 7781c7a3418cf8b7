package kazoo_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// python is Debian's interpreter, the one python3-kazoo is installed for.
const python = "/usr/bin/python3"

// suiteTimeout bounds one run of suite.py (it budgets itself 85 s).
const suiteTimeout = 150 * time.Second

// summaryRE matches the suite's final line.
var summaryRE = regexp.MustCompile(`^(\d+) passed, (\d+) failed$`)

func TestKazooSuite(t *testing.T) {
	script, err := filepath.Abs("suite.py")
	if err != nil {
		t.Fatalf("locate suite.py: %v", err)
	}
	checkPrerequisites(t, script)
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, zktest.Options{TickMs: 500})
			runSuite(t, script, srv.Addr)
		})
	}
}

// checkPrerequisites fails (never skips) when kazoo is not importable.
func checkPrerequisites(t *testing.T, script string) {
	t.Helper()
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("suite script: %v", err)
	}
	out, err := exec.Command(python, "-c", "import kazoo.client, kazoo.recipe.cache").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
}

// runSuite runs suite.py against addr, streams its output into the test log
// and fails unless it exits 0 with a final "N passed, 0 failed", N > 0.
func runSuite(t *testing.T, script, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-u", script, addr)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", python, script, err)
	}

	var (
		wg    sync.WaitGroup
		lines []string
		fails []string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		forEachLine(stdout, func(line string) {
			t.Log(line)
			lines = append(lines, line)
			if strings.HasPrefix(line, "FAIL ") {
				fails = append(fails, line)
			}
		})
	}()
	go func() {
		defer wg.Done()
		forEachLine(stderr, func(line string) { t.Log("stderr: " + line) })
	}()
	wg.Wait()
	waitErr := cmd.Wait()

	if ctx.Err() != nil {
		t.Errorf("suite did not finish within %v", suiteTimeout)
	}
	for _, f := range fails {
		t.Errorf("kazoo check failed on %s: %s", addr, f)
	}
	if waitErr != nil {
		var exitErr *exec.ExitError
		if !errors.As(waitErr, &exitErr) {
			t.Fatalf("run suite: %v", waitErr)
		}
		t.Errorf("suite exited with status %d", exitErr.ExitCode())
	}
	if len(lines) == 0 {
		t.Fatal("suite printed nothing on stdout")
	}
	last := lines[len(lines)-1]
	m := summaryRE.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q is not an \"N passed, M failed\" summary", last)
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	if passed == 0 || failed != 0 {
		t.Fatalf("summary %q: want N > 0 passed and 0 failed", last)
	}
	if passed != countPrefix(lines, "PASS ") || failed != len(fails) {
		t.Fatalf("summary %q disagrees with %d PASS and %d FAIL lines", last, countPrefix(lines, "PASS "), len(fails))
	}
}

// forEachLine calls fn for every line read from r until EOF.
func forEachLine(r io.Reader, fn func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		fn(sc.Text())
	}
	// A read error after the process died ends the stream; Wait reports it.
	_, _ = io.Copy(io.Discard, r)
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
