package zkimport

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
)

// TestImportCommand runs `zkraft import` as users do.
func TestImportCommand(t *testing.T) {
	bin, err := zktest.ZkraftBinary()
	must(t, err, "zkraft binary")
	zkDir := t.TempDir()
	writeEpochData(t, zkDir, 3)
	notEmpty := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notEmpty, "raft.db"), nil, 0o644), "write")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"usage", []string{"import", "--from", zkDir}, 2, "usage: zkraft import"},
		{"bad members", []string{"import", "--from", zkDir, "--data-dir", t.TempDir(), "--members", "1,x"}, 2, "bad member id"},
		{"not empty", []string{"import", "--from", zkDir, "--data-dir", notEmpty}, 1, "is not empty"},
		{"not ZooKeeper", []string{"import", "--from", t.TempDir(), "--data-dir", t.TempDir()}, 1, "no version-2 directory"},
		{"myid not a member", []string{"import", "--from", zkDir, "--data-dir", t.TempDir(), "--myid", "4", "--members", "1,2,3"}, 1, "not one of the members"},
		{"ok", []string{"import", "--from", zkDir, "--data-dir", filepath.Join(t.TempDir(), "new"), "--myid", "2", "--members", "1,2,3"}, 0,
			"member 2 of [1 2 3], raft log starts after index 21474836483 (0x500000003)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, tc.args...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.out) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out, tc.code, tc.out)
			}
		})
	}
}
