package zkcli_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// suiteTimeout bounds one run of the suite.
const suiteTimeout = 120 * time.Second

// python is Debian's interpreter; the suite needs only its standard library.
const python = "/usr/bin/python3"

// TestZkCliSuite runs suite.py (zkCli.sh sessions) against each target.
func TestZkCliSuite(t *testing.T) {
	script, err := filepath.Abs("suite.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			t.Parallel()
			s := zktest.Start(t, target, zktest.Options{ContainerCheckIntervalMs: 500})
			zktest.RunSuite(t, suiteTimeout, []string{"PYTHONDONTWRITEBYTECODE=1"}, python, script, s.Addr)
		})
	}
}
