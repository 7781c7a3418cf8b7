package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// legacyWriteSnapFile is writeSnapFile as it was before snapshots were
// streamed (header first, then the payload from memory in snapWriteChunk
// pieces): the reference a streamed file must equal byte for byte.
func legacyWriteSnapFile(dir string, term, index uint64, payload []byte) error {
	name := filepath.Join(dir, snapFileName(term, index))
	var hdr [snapHeaderSize]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint32(hdr[len(snapMagic):], crc32.Checksum(payload, crc32c))
	binary.BigEndian.PutUint64(hdr[len(snapMagic)+4:], uint64(len(payload)))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(hdr[:])
	for off := 0; err == nil && off < len(payload); off += snapWriteChunk {
		_, err = f.Write(payload[off:min(off+snapWriteChunk, len(payload))])
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// snapPayload is a test payload of n distinct-looking bytes.
func snapPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>16)
	}
	return b
}

// writeInPieces returns a SnapshotFreezer-style function writing payload
// in pieces of the given sizes, cycling (the tree encoder writes 64 KiB
// pieces, the small sections a few bytes).
func writeInPieces(payload []byte, sizes ...int) func(io.Writer) error {
	return func(w io.Writer) error {
		for i := 0; len(payload) > 0; i++ {
			k := min(sizes[i%len(sizes)], len(payload))
			if _, err := w.Write(payload[:k]); err != nil {
				return err
			}
			payload = payload[k:]
		}
		return nil
	}
}

// jobCore is a Core with just what SnapshotJob.Run uses, over a disk store
// in dir whose raft log holds entries 1..10 of term 1.
func jobCore(t *testing.T, dir string) (*Core, *diskStore) {
	t.Helper()
	st, err := openDiskStore(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	mem := raft.NewMemoryStorage()
	var ents []*pb.Entry
	for i := uint64(1); i <= 10; i++ {
		ents = append(ents, &pb.Entry{Index: new(i), Term: new(uint64(1))})
	}
	require.NoError(t, mem.Append(ents))
	return &Core{cfg: Config{KeepEntries: 5}, lg: zerolog.Nop(), store: st, mem: mem}, st
}

func snapJob(c *Core, write func(io.Writer) error) *SnapshotJob {
	return &SnapshotJob{c: c, index: 10, term: 1, confState: &pb.ConfState{Voters: []uint64{1}}, serialize: write}
}

// A snapshot job streams its payload into the file, and the file is byte
// for byte the one the in-memory path wrote for the same payload, whatever
// the pieces the payload comes in (across the write buffer and the
// writeback chunk), and loads.
func TestSnapshotJobStreamsTheOldFile(t *testing.T) {
	big := snapPayload(2*snapWriteChunk + 12345)
	for _, tc := range []struct {
		name    string
		payload []byte
		pieces  []int
	}{
		{"empty", nil, []int{1}},
		{"small", big[:100], []int{7}},
		{"tree encoder pieces", big, []int{64 << 10, 3, 24}},
		{"odd pieces", big, []int{1, snapWriteBuf - 1, 5, 3*snapWriteBuf + 17, 100000}},
		{"one piece", big, []int{len(big)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, st := jobCore(t, dir)
			require.NoError(t, snapJob(c, writeInPieces(tc.payload, tc.pieces...)).Run())
			got, err := os.ReadFile(filepath.Join(st.snapDir, snapFileName(1, 10)))
			require.NoError(t, err)

			ref := t.TempDir()
			require.NoError(t, legacyWriteSnapFile(ref, 1, 10, tc.payload))
			want, err := os.ReadFile(filepath.Join(ref, snapFileName(1, 10)))
			require.NoError(t, err)
			require.True(t, string(want) == string(got), "streamed file (%d bytes) differs from the in-memory path's (%d bytes)", len(got), len(want))

			payload, err := st.LoadSnapshot(1, 10)
			require.NoError(t, err)
			require.Equal(t, len(tc.payload), len(payload))
			loaded, err := st.Load()
			require.NoError(t, err)
			require.Equal(t, uint64(10), loaded.Snapshot.GetIndex(), "recorded")
		})
	}
}

// A write error in the middle of the stream (the file's, or the encoder's
// own) is the job's error, and leaves no snapshot: no .snap, no .tmp,
// nothing recorded.
func TestSnapshotJobWriteErrorLeavesNoSnapshot(t *testing.T) {
	errDisk := errors.New("injected: no space left on device")
	errEncode := errors.New("injected: encoder failed")
	payload := snapPayload(3*snapWriteBuf + 5)
	for _, tc := range []struct {
		name  string
		fault func(off int64) error
		write func(io.Writer) error
		want  error
	}{
		{"file write fails mid-stream", func(off int64) error {
			if off >= 2*snapWriteBuf {
				return errDisk
			}
			return nil
		}, writeInPieces(payload, 64<<10), errDisk},
		{"file write fails, encoder ignores it", func(off int64) error {
			if off >= snapWriteBuf {
				return errDisk
			}
			return nil
		}, func(w io.Writer) error {
			_ = writeInPieces(payload, 64<<10)(io.Writer(ignoreErrors{w}))
			return nil
		}, errDisk},
		{"encoder fails mid-stream", nil, func(w io.Writer) error {
			if err := writeInPieces(payload[:2*snapWriteBuf+3], 64<<10)(w); err != nil {
				return err
			}
			return fmt.Errorf("snapshot tree: %w", errEncode)
		}, errEncode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snapWriteFault = tc.fault
			t.Cleanup(func() { snapWriteFault = nil })
			dir := t.TempDir()
			c, st := jobCore(t, dir)
			err := snapJob(c, tc.write).Run()
			require.ErrorIs(t, err, tc.want)
			ents, rerr := os.ReadDir(st.snapDir)
			require.NoError(t, rerr)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			require.Empty(t, names, "files left in the snapshot dir")
			loaded, lerr := st.Load()
			require.NoError(t, lerr)
			require.Nil(t, loaded.Snapshot, "a snapshot was recorded")
			require.Zero(t, c.snapIndex.Load())
		})
	}
}

// ignoreErrors drops its writer's errors (an encoder that does not check).
type ignoreErrors struct{ w io.Writer }

func (w ignoreErrors) Write(p []byte) (int, error) {
	_, _ = w.w.Write(p)
	return len(p), nil
}

// A snapshot job allocates fixed buffers, not its payload: the payload goes
// from the encoder into the file in pieces. Measured for 8 MB and 64 MB
// payloads written in the tree encoder's 64 KiB pieces; the in-memory path
// allocated the payload (plus the encoder's own copies) for each.
func TestSnapshotJobAllocationDoesNotScaleWithPayload(t *testing.T) {
	piece := snapPayload(64 << 10)
	stream := func(n int) func(io.Writer) error {
		return func(w io.Writer) error {
			for ; n > 0; n -= len(piece) {
				if _, err := w.Write(piece[:min(n, len(piece))]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	allocs := map[int]uint64{}
	for _, size := range []int{8 << 20, 64 << 20} {
		c, _ := jobCore(t, t.TempDir())
		job := snapJob(c, stream(size))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		require.NoError(t, job.Run())
		runtime.ReadMemStats(&after)
		allocs[size] = after.TotalAlloc - before.TotalAlloc
		t.Logf("payload %d bytes: the job allocated %d bytes", size, allocs[size])
	}
	require.Less(t, allocs[64<<20], uint64(snapJobBytes), "the job's allocation grows with the payload")
}

// A writeback error while the snapshot streams (a device's EIO, which the
// wait of sync_file_range reports and which the final fsync on the same
// file would then not report again) fails the job and leaves no snapshot.
func TestSnapshotJobWritebackErrorLeavesNoSnapshot(t *testing.T) {
	errIO := errors.New("injected: input/output error")
	dir := t.TempDir()
	c, st := jobCore(t, dir)
	injectWritebackFault(t, ".snap.tmp", errIO)
	err := snapJob(c, writeInPieces(snapPayload(snapWriteChunk+5), 64<<10)).Run()
	require.ErrorIs(t, err, errIO)
	ents, rerr := os.ReadDir(st.snapDir)
	require.NoError(t, rerr)
	require.Empty(t, ents, "files left in the snapshot dir")
	loaded, lerr := st.Load()
	require.NoError(t, lerr)
	require.Nil(t, loaded.Snapshot, "a snapshot was recorded")
}

// The zero-filling of a log segment fails on a writeback error instead of
// leaving it to an fsync that may no longer see it.
func TestZeroFillWritebackError(t *testing.T) {
	errIO := errors.New("injected: input/output error")
	injectWritebackFault(t, "seg", errIO)
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	require.ErrorIs(t, zeroFill(f, 3*walZeroChunk, nil), errIO)
}

// The encoder runs once even when the snapshot file cannot be made, so
// that what it holds (the state machine's frozen tree) is released then too.
func TestSnapshotJobOpenFailureStillRunsTheEncoder(t *testing.T) {
	dir := t.TempDir()
	c, st := jobCore(t, dir)
	require.NoError(t, os.Mkdir(filepath.Join(st.snapDir, snapFileName(1, 10)+tmpSuffix), 0o700))
	calls := 0
	var got error
	err := snapJob(c, func(w io.Writer) error {
		calls++
		_, got = w.Write([]byte("x"))
		return got
	}).Run()
	require.Error(t, err)
	require.Equal(t, 1, calls, "the encoder ran once")
	require.Error(t, got, "its writer failed")
}

// injectWritebackFault fails the writeback of files whose name ends in
// suffix with err until the test ends.
func injectWritebackFault(t *testing.T, suffix string, err error) {
	fault := func(name string) error {
		if strings.HasSuffix(name, suffix) {
			return err
		}
		return nil
	}
	writebackFault.Store(&fault)
	t.Cleanup(func() { writebackFault.Store(nil) })
}
