package curator_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// suiteTimeout bounds one run of the Java suite (it budgets itself 85 s).
const suiteTimeout = 150 * time.Second

// buildTimeout bounds the javac run.
const buildTimeout = 120 * time.Second

// serverOptions: a short tick so the session-expiry check is quick, and a
// short container/TTL check interval for the container and TTL checks.
var serverOptions = zktest.Options{TickMs: 500, ContainerCheckIntervalMs: 500}

var summaryRE = regexp.MustCompile(`^(\d+) passed, (\d+) failed$`)

// build compiles the suite once per test process.
var build struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// runScript returns the absolute path of run.sh (the test runs in this folder).
func runScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("run.sh")
	if err != nil {
		t.Fatalf("locate run.sh: %v", err)
	}
	return p
}

// compiled compiles the Java sources once and returns the class directory.
func compiled(t *testing.T) string {
	t.Helper()
	script := runScript(t)
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "curator-suite-build-")
		if build.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "--build-only")
		cmd.Env = append(os.Environ(), "CURATOR_BUILD_DIR="+build.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("run.sh --build-only: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("compile the Curator suite: %v", build.err)
	}
	return build.dir
}

func TestCuratorSuite(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			classes := compiled(t)
			srv := zktest.Start(t, target, serverOptions)
			runSuite(t, classes, srv.Addr)
		})
	}
}

// runSuite runs the compiled suite against addr, logs its output line by
// line, and fails unless it ends with "N passed, 0 failed" (N > 0) and exit 0.
func runSuite(t *testing.T, classes, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, runScript(t), addr)
	cmd.Env = append(os.Environ(), "CURATOR_BUILD_DIR="+classes)
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start run.sh: %v", err)
	}
	var wg sync.WaitGroup
	var lastLine string
	wg.Add(2)
	go func() {
		defer wg.Done()
		lastLine = streamLines(t, stdout, "")
	}()
	go func() {
		defer wg.Done()
		streamLines(t, stderr, "stderr: ")
	}()
	wg.Wait()
	waitErr := cmd.Wait()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("suite did not finish within %v", suiteTimeout)
	}
	m := summaryRE.FindStringSubmatch(lastLine)
	if m == nil {
		t.Fatalf("last output line %q is not \"N passed, M failed\" (exit: %v)", lastLine, waitErr)
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	if failed != 0 || passed == 0 || waitErr != nil {
		t.Fatalf("suite result %q, exit: %v", lastLine, waitErr)
	}
}

// streamLines logs every line of r with prefix and returns the last
// non-empty one.
func streamLines(t *testing.T, r io.Reader, prefix string) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	last := ""
	for sc.Scan() {
		line := sc.Text()
		t.Log(prefix + line)
		if line != "" {
			last = line
		}
	}
	return last
}
