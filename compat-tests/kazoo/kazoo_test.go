package kazoo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// python is Debian's interpreter, the one python3-kazoo is installed for.
const python = "/usr/bin/python3"

// suiteTimeout bounds one run of suite.py (it budgets itself 85 s).
const suiteTimeout = 150 * time.Second

func TestKazooSuite(t *testing.T) {
	script, err := filepath.Abs("suite.py")
	if err != nil {
		t.Fatalf("locate suite.py: %v", err)
	}
	checkPrerequisites(t, script)
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, zktest.Options{TickMs: 500})
			zktest.RunSuite(t, suiteTimeout, nil, python, "-u", script, srv.Addr)
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
