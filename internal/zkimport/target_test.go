package zkimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		myid    uint64
		want    uint64
		wantErr string
	}{
		{"empty", nil, 0, 1, ""},
		{"empty with --myid", nil, 3, 3, ""},
		{"myid file", map[string]string{"myid": "2\n"}, 0, 2, ""},
		{"myid file and the same --myid", map[string]string{"myid": "2"}, 2, 2, ""},
		{"myid file and another --myid", map[string]string{"myid": "2"}, 3, 0, "--myid 3 but"},
		{"bad myid file", map[string]string{"myid": "two"}, 0, 0, "not a member id"},
		{"raft.db", map[string]string{"raft.db": ""}, 0, 0, "is not empty"},
		{"anything else", map[string]string{"myid": "1", "notes": "x"}, 0, 0, "is not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644), "write")
			}
			got, err := checkTarget(dir, tc.myid)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
