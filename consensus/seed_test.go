package consensus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSeed(t *testing.T) {
	dir := t.TempDir()
	const index = uint64(5)<<32 | 7
	if err := Seed(dir, 1, index, []uint64{1, 2, 3}, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	s, err := openDiskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.Snapshot.GetIndex() != index || st.Snapshot.GetTerm() != 1 || len(st.Snapshot.GetConfState().GetVoters()) != 3 ||
		st.HardState.GetCommit() != index || st.HardState.GetTerm() != 1 || len(st.Entries) != 0 {
		t.Errorf("loaded %+v", st)
	}
	if data, err := s.LoadSnapshot(1, index); err != nil || string(data) != "payload" {
		t.Errorf("snapshot payload %q, %v", data, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		dir     string
		term    uint64
		index   uint64
		voters  []uint64
		wantErr string
	}{
		{"existing storage", dir, 1, 9, []uint64{1}, "already holds"},
		{"no voters", t.TempDir(), 1, 9, nil, "must be positive"},
		{"index 0", t.TempDir(), 1, 0, []uint64{1}, "must be positive"},
		{"no directory", filepath.Join(t.TempDir(), "none"), 1, 9, []uint64{1}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Seed(tc.dir, tc.term, tc.index, tc.voters, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestStartRefusesUnfinishedSeed: a directory an interrupted Seed left
// behind is refused, not taken for empty storage.
func TestStartRefusesUnfinishedSeed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, seedMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(Config{ID: 1, Peers: []Peer{{ID: 1}}, DataDir: dir}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("Start: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, dbFileName)); err == nil {
		t.Error("Start created raft storage in the refused directory")
	}
}
