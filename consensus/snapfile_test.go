package consensus

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSnapFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	// Past one chunk too, not a multiple of it, distinct bytes everywhere
	// (a chunk written twice or skipped shows).
	big := make([]byte, 2*snapWriteChunk+12345)
	for i := range big {
		big[i] = byte(i*7 + i>>16)
	}
	for _, payload := range [][]byte{nil, []byte("x"), make([]byte, 1<<16), big[:snapWriteChunk], big} {
		require.NoError(t, writeSnapFile(dir, 3, uint64(len(payload)+1), payload))
		got, err := readSnapFile(dir, 3, uint64(len(payload)+1))
		require.NoError(t, err)
		require.Equal(t, len(payload), len(got))
		require.Equal(t, string(payload), string(got))
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		require.NotContains(t, e.Name(), tmpSuffix)
	}
}

func TestDecodeSnapFileRejectsCorruption(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeSnapFile(dir, 1, 2, []byte("hello snapshot")))
	good, err := os.ReadFile(filepath.Join(dir, snapFileName(1, 2)))
	require.NoError(t, err)

	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x01
		return b
	}
	tests := []struct {
		name string
		file []byte
		wmsg string
	}{
		{"empty", nil, "bad header"},
		{"bad magic", flip(0), "bad header"},
		{"payload bit flip", flip(len(good) - 1), "checksum mismatch"},
		{"crc bit flip", flip(len(snapMagic)), "checksum mismatch"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"trailing garbage", append(append([]byte(nil), good...), 0), "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeSnapFile("f", tt.file)
			require.ErrorIs(t, err, ErrCorruptSnapshot)
			require.ErrorContains(t, err, tt.wmsg)
		})
	}
}

func TestSnapFileNames(t *testing.T) {
	tests := []struct {
		name          string
		wterm, windex uint64
		wok           bool
	}{
		{snapFileName(1, 2), 1, 2, true},
		{snapFileName(0xabc, 1<<40), 0xabc, 1 << 40, true},
		{"0000000000000001-0000000000000002.snap.tmp", 0, 0, false},
		{"1-2.snap", 0, 0, false},
		{"raft.db", 0, 0, false},
	}
	for _, tt := range tests {
		term, index, ok := parseSnapFileName(tt.name)
		require.Equal(t, tt.wok, ok, tt.name)
		require.Equal(t, tt.wterm, term, tt.name)
		require.Equal(t, tt.windex, index, tt.name)
	}
}

func TestPruneAndCleanSnapDir(t *testing.T) {
	dir := t.TempDir()
	for i := uint64(1); i <= 5; i++ {
		require.NoError(t, writeSnapFile(dir, 1, i*10, []byte{byte(i)}))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, snapFileName(1, 60)+tmpSuffix), nil, 0o600))

	removed, err := cleanSnapDir(dir, 40)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{snapFileName(1, 50), snapFileName(1, 60) + tmpSuffix}, removed)

	require.NoError(t, pruneSnapFiles(dir))
	files, err := listSnapFiles(dir)
	require.NoError(t, err)
	require.Len(t, files, snapFilesKept)
	require.Equal(t, uint64(30), files[0].index)
	require.Equal(t, uint64(40), files[1].index)
}

// TestSnapshotWritebackPacedPerMiB: a snapshot file is written back to
// disk at least once per MiB written, so a raft log fdatasync queued
// behind its writeback waits for at most about a MiB (snapWriteChunk; with
// 8 MiB chunks a log fdatasync's p99 during a snapshot was about twice as
// long on this project's disk).
func TestSnapshotWritebackPacedPerMiB(t *testing.T) {
	var calls atomic.Int64
	fault := func(name string) error {
		if strings.HasSuffix(name, tmpSuffix) {
			calls.Add(1)
		}
		return nil
	}
	writebackFault.Store(&fault)
	t.Cleanup(func() { writebackFault.Store(nil) })
	const mib = 6
	payload := make([]byte, mib<<20)
	require.NoError(t, writeSnapFile(t.TempDir(), 1, 2, payload))
	require.GreaterOrEqual(t, calls.Load(), int64(mib), "writebacks of a %d MiB snapshot", mib)
}
