package curator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
			zktest.RunSuite(t, suiteTimeout, []string{"CURATOR_BUILD_DIR=" + classes}, runScript(t), srv.Addr)
		})
	}
}
