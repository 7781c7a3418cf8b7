package consensus

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestWALZeroRecordNeverDecodes checks that zeros (a preallocated
// segment's unwritten rest) never decode as a record whatever the salt,
// even a zero header whose checksum field matches its salted checksum.
func TestWALZeroRecordNeverDecodes(t *testing.T) {
	for _, salt := range []uint32{0, 1, 7, 0xdeadbeef, 0xffffffff} {
		for _, n := range []int{0, 1, 8, recHeaderSize, recHeaderSize + 8, 4096} {
			_, _, _, err := decodeRecord(make([]byte, n), salt)
			require.ErrorIs(t, err, errRecordEnd, "salt %08x, %d zeros", salt, n)
		}
		// Type 0, length 0, and the checksum a record of that header
		// would carry: still not a record.
		b := make([]byte, 64)
		binary.LittleEndian.PutUint32(b[4:8], crc32.Update(salt, crc32c, b[8:16]))
		_, _, _, err := decodeRecord(b, salt)
		require.ErrorIs(t, err, errRecordBad, "salt %08x", salt)
	}
}

// bigEnts returns entries lo..hi of term holding 300 bytes each.
func bigEnts(lo, hi, term uint64) []*pb.Entry {
	es := ents(lo, hi, term)
	for _, e := range es {
		e.Data = append(e.Data, make([]byte, 300)...)
	}
	return es
}

// TestWALPreallocatedReplay opens a WAL whose last segment is zero-filled
// past its records: the log ends at the last record, nothing is cut (the
// file keeps its size), and later records are written over the zeros.
func TestWALPreallocatedReplay(t *testing.T) {
	const segBytes = 64 << 10
	for _, tc := range []struct {
		name    string
		records uint64
	}{
		{"no record", 0},
		{"one record", 1},
		{"five records", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), walDirName)
			require.NoError(t, initWALDir(dir, walPos{}, nil, segBytes))
			seg := filepath.Join(dir, walSegName(0))
			require.Equal(t, int64(segBytes), fileSize(t, seg), "segment 0 is preallocated")
			w, _, err := openWAL(dir, segBytes)
			require.NoError(t, err)
			for i := uint64(1); i <= tc.records; i++ {
				require.NoError(t, w.append(&walBatch{hardState: hardState(1, i-1), entries: ents(i, i, 1)}))
			}
			end := w.size
			require.NoError(t, w.close())

			w, r, err := openWAL(dir, segBytes)
			require.NoError(t, err)
			require.Equal(t, span(1, tc.records, 1), positions(r.entries))
			require.Equal(t, end, r.end)
			require.Equal(t, end, w.size)
			require.Zero(t, w.torn.len, "zeros after the last record are no torn tail")
			require.Equal(t, int64(segBytes), fileSize(t, seg), "the preallocation is kept")
			require.NoError(t, w.append(&walBatch{entries: ents(tc.records+1, tc.records+1, 2)}))
			require.NoError(t, w.close())
			require.Equal(t, int64(segBytes), fileSize(t, seg), "the record overwrote zeros")

			r, err = replayWAL(dir, false)
			require.NoError(t, err)
			require.Equal(t, append(span(1, tc.records, 1), span(tc.records+1, tc.records+1, 2)...), positions(r.entries))
		})
	}
}

// TestWALTornRecordInPreallocation damages the last record of a
// preallocated segment: garbage or a torn record followed by zeros is cut
// (zeroed, the file keeps its size) and appends after it are replayed; a
// valid record after the damage is ErrCorruptLog.
func TestWALTornRecordInPreallocation(t *testing.T) {
	const segBytes = 64 << 10
	for _, tc := range []struct {
		name    string
		damage  func(b []byte, last, end int64)
		wantErr bool
	}{
		{"record's second half zeros", func(b []byte, last, end int64) { clear(b[last+(end-last)/2 : end]) }, false},
		{"record's header only", func(b []byte, last, end int64) { clear(b[last+recHeaderSize : end]) }, false},
		{"garbage after the last record", func(b []byte, _, end int64) { copy(b[end:], "garbage garbage!") }, false},
		{"garbage far after the last record", func(b []byte, _, end int64) { copy(b[end+1000:], "garbage garbage!") }, false},
		{"a valid record after a zeroed one", func(b []byte, last, end int64) {
			copy(b[end+64:], b[last:end])
			clear(b[last+recHeaderSize : end])
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w := openTestWAL(t, segBytes, segBytes)
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 0), entries: ents(1, 3, 1)}))
			last := w.size
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 3), entries: ents(4, 6, 1)}))
			end := w.size
			require.NoError(t, w.close())
			seg := w.segs[0].path
			b, err := os.ReadFile(seg)
			require.NoError(t, err)
			tc.damage(b, last, end)
			require.NoError(t, os.WriteFile(seg, b, 0o600))

			w, r, err := openWAL(dir, segBytes)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorruptLog)
				return
			}
			require.NoError(t, err)
			require.NotZero(t, w.torn.len)
			require.Equal(t, w.torn.offset, r.end)
			got, err := os.ReadFile(seg)
			require.NoError(t, err)
			require.Len(t, got, segBytes, "the preallocation is kept")
			require.True(t, allZero(got[r.end:]), "the damage is zeroed")
			want := span(1, 3, 1)
			if r.end == end {
				want = span(1, 6, 1) // garbage after the intact record
			}
			require.Equal(t, want, positions(r.entries))
			next := r.last().index + 1
			require.NoError(t, w.append(&walBatch{entries: ents(next, next, 2)}))
			require.NoError(t, w.close())
			r, err = replayWAL(dir, false)
			require.NoError(t, err)
			require.Equal(t, append(want, span(next, next, 2)...), positions(r.entries))
		})
	}
}

// TestWALRemovesLeftoverSpare leaves what a crash during the preparation
// of a spare (or of a segment) leaves: open removes it and replays the
// segments.
func TestWALRemovesLeftoverSpare(t *testing.T) {
	dir, w := openTestWAL(t, 0, 4096)
	require.NoError(t, w.append(&walBatch{entries: ents(1, 2, 1)}))
	require.NoError(t, w.close())
	leftovers := []string{walSpareName, walSegName(1) + tmpSuffix}
	for _, name := range leftovers {
		// Half zero-filled; the second with a header already.
		b := make([]byte, 2048)
		copy(b, encodeWALHeader(1, walPos{2, 1}, 5))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	w, r, err := openWAL(dir, 4096)
	require.NoError(t, err)
	require.Equal(t, span(1, 2, 1), positions(r.entries))
	require.NoError(t, w.close())
	for _, name := range leftovers {
		require.NoFileExists(t, filepath.Join(dir, name))
	}
	require.Len(t, r.segs, 1)
}

// blockSpare makes spares zero-fill only after release is closed (or
// close stops them), as on a slow disk.
func blockSpare(t *testing.T) (release chan struct{}) {
	release = make(chan struct{})
	orig := fillSpareFile
	fillSpareFile = func(path string, size int64, stop *atomic.Bool) (*os.File, error) {
		for {
			select {
			case <-release:
				return orig(path, size, stop)
			case <-time.After(time.Millisecond):
				if stop.Load() {
					return nil, errSpareStopped
				}
			}
		}
	}
	t.Cleanup(func() { fillSpareFile = orig })
	return release
}

// TestWALRotateSpare fills segments past the rotation size with the spare
// ready, still being zero-filled, or failed, and checks the segments: the
// next one is the preallocated spare only if it was ready, the closed one
// is cut to its last record (replay refuses anything after a closed
// segment's last record), and the log replays whole.
func TestWALRotateSpare(t *testing.T) {
	const segBytes = 4096
	for _, tc := range []struct {
		name string
		// setup runs before the WAL is opened; before runs when the
		// spare was started, before the rotation.
		setup  func(t *testing.T)
		before func(t *testing.T, sp *walSpare)
		// wantAlloc is the new segment's size, keepSpare whether a spare
		// is still under way after the rotation.
		wantAlloc int64
		keepSpare bool
	}{
		{"spare ready", func(*testing.T) {}, func(_ *testing.T, sp *walSpare) { <-sp.done }, segBytes, false},
		{"spare not ready", func(t *testing.T) { blockSpare(t) }, func(*testing.T, *walSpare) {}, walHeaderSize, true},
		{"spare failed", func(t *testing.T) {
			orig := fillSpareFile
			fillSpareFile = func(string, int64, *atomic.Bool) (*os.File, error) { return nil, errors.New("disk full") }
			t.Cleanup(func() { fillSpareFile = orig })
		}, func(_ *testing.T, sp *walSpare) { <-sp.done }, walHeaderSize, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			dir, w := openTestWAL(t, segBytes, segBytes)
			defer func() { require.NoError(t, w.close()) }()
			require.Nil(t, w.spare, "no spare before the segment is half full")
			idx := uint64(0)
			for w.spare == nil {
				idx++
				require.NoError(t, w.append(&walBatch{entries: bigEnts(idx, idx, 1)}))
			}
			require.GreaterOrEqual(t, w.size, int64(segBytes/2))
			tc.before(t, w.spare)
			for len(w.segs) == 1 {
				idx++
				require.NoError(t, w.append(&walBatch{hardState: hardState(1, idx), entries: bigEnts(idx, idx, 1)}))
			}
			closed, end := w.segs[0].path, int64(0)
			r, err := replayWAL(dir, false)
			require.NoError(t, err, "a closed segment with zeros after its last record is corrupt")
			require.Equal(t, positions(bigEnts(1, idx, 1)), positions(r.entries))
			data, err := os.ReadFile(closed)
			require.NoError(t, err)
			_, _, salt, err := decodeWALHeader(data)
			require.NoError(t, err)
			for off := walHeaderSize; off < len(data); {
				_, _, n, err := decodeRecord(data[off:], salt)
				require.NoError(t, err)
				off += n
				end = int64(off)
			}
			require.Greater(t, end, int64(segBytes), "the record that crossed the rotation size went past the zeros")
			require.Equal(t, end, int64(len(data)), "the closed segment ends at its last record")

			require.Equal(t, tc.wantAlloc, fileSize(t, w.segs[1].path), "the new segment")
			require.Equal(t, tc.keepSpare, w.spare != nil, "a spare not ready serves the next rotation")
			require.NoFileExists(t, filepath.Join(dir, walSegName(1)+tmpSuffix))

			// The new segment takes records, and the log replays whole.
			idx++
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, idx), entries: bigEnts(idx, idx, 1)}))
			require.Equal(t, tc.wantAlloc == segBytes, fileSize(t, w.segs[1].path) == segBytes)
			r, err = replayWAL(dir, false)
			require.NoError(t, err)
			require.Equal(t, positions(bigEnts(1, idx, 1)), positions(r.entries))
		})
	}
}

// TestWALSpareAfterSlowRotation lets a spare that was not ready at one
// rotation finish: the next rotation uses it.
func TestWALSpareAfterSlowRotation(t *testing.T) {
	const segBytes = 4096
	release := blockSpare(t)
	dir, w := openTestWAL(t, segBytes, segBytes)
	idx := uint64(0)
	for len(w.segs) < 2 {
		idx++
		require.NoError(t, w.append(&walBatch{entries: bigEnts(idx, idx, 1)}))
	}
	require.Equal(t, int64(walHeaderSize), fileSize(t, w.segs[1].path), "the spare was not ready")
	close(release)
	<-w.spare.done
	for len(w.segs) < 3 {
		idx++
		require.NoError(t, w.append(&walBatch{entries: bigEnts(idx, idx, 1)}))
	}
	require.Equal(t, int64(segBytes), fileSize(t, w.segs[2].path), "the spare is the third segment")
	require.NoFileExists(t, filepath.Join(dir, walSpareName))
	require.NoError(t, w.close())
	w, r, err := openWAL(dir, segBytes)
	require.NoError(t, err)
	require.NoError(t, w.close())
	require.Equal(t, positions(bigEnts(1, idx, 1)), positions(r.entries))
}

// TestWALCloseStopsSpare closes a WAL while its spare is being
// zero-filled: close stops the goroutine, waits for it (goleak checks the
// package) and removes the spare's file.
func TestWALCloseStopsSpare(t *testing.T) {
	blockSpare(t)
	dir, w := openTestWAL(t, 0, 4096)
	for idx := uint64(1); w.spare == nil; idx++ {
		require.NoError(t, w.append(&walBatch{entries: bigEnts(idx, idx, 1)}))
	}
	sp := w.spare
	require.NoError(t, w.close())
	select {
	case <-sp.done:
	default:
		t.Fatal("close returned before the spare's goroutine ended")
	}
	require.ErrorIs(t, sp.err, errSpareStopped)
	require.NoFileExists(t, filepath.Join(dir, walSpareName))
}

// TestWALClosedSegmentCut rotates a preallocated segment long before it is
// full (a reset starts a new segment): the closed segment is cut to its
// last record, because replay takes anything after a closed segment's last
// record, zeros included, for damage.
func TestWALClosedSegmentCut(t *testing.T) {
	const segBytes = 64 << 10
	dir, w := openTestWAL(t, segBytes, segBytes)
	require.NoError(t, w.append(&walBatch{hardState: hardState(1, 3), entries: ents(1, 3, 1)}))
	end := w.size
	require.NoError(t, w.append(&walBatch{reset: &walPos{10, 2}, hardState: hardState(2, 10), entries: ents(11, 12, 2)}))
	require.Len(t, w.segs, 2, "the reset started a segment")
	require.NoError(t, w.close())
	closed := w.segs[0].path
	w, r, err := openWAL(dir, segBytes)
	require.NoError(t, err)
	require.NoError(t, w.close())
	require.Equal(t, span(11, 12, 2), positions(r.entries))
	require.Equal(t, end, fileSize(t, closed), "the closed segment ends at its last record")
}

// TestWALFirstSegmentRotatesWhenFull opens a log whose first segment was
// preallocated to less than the rotation size (a new store's, bounded by
// walFirstSegmentBytes): it rotates when its zeros run out, into a spare
// walSpareGrowth times larger, and so on up to the rotation size.
func TestWALFirstSegmentRotatesWhenFull(t *testing.T) {
	const first, segBytes = 8 << 10, 64 << 10
	dir, w := openTestWAL(t, first, segBytes)
	defer func() { require.NoError(t, w.close()) }()
	idx := uint64(0)
	sizes := []int64{fileSize(t, w.segs[0].path)} // each segment's when it became the last
	for len(w.segs) < 4 {
		if w.spare != nil {
			<-w.spare.done
		}
		idx++
		n := len(w.segs)
		require.NoError(t, w.append(&walBatch{entries: bigEnts(idx, idx, 1)}))
		if len(w.segs) > n {
			sizes = append(sizes, fileSize(t, w.segs[n].path))
		}
	}
	require.Equal(t, []int64{first, walSpareGrowth * first, segBytes, segBytes}, sizes,
		"the first segment rotated when its zeros ran out, and the spares grew to the rotation size")
	r, err := replayWAL(dir, false)
	require.NoError(t, err)
	require.Equal(t, positions(bigEnts(1, idx, 1)), positions(r.entries))
}

// TestDiskStoreFirstSegmentPreallocated checks that a new store's first
// segment is zero-filled before its first write, and that writes leave
// its size alone.
func TestDiskStoreFirstSegmentPreallocated(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer func() { require.NoError(t, s.Close()) }()
	want := min(walSegmentSize, walFirstSegmentBytes)
	seg := walFiles(t, dir)[0]
	require.Equal(t, want, fileSize(t, seg))
	mustWrite(t, s, &WriteBatch{HardState: hardState(1, 3), Entries: ents(1, 3, 1)})
	require.Equal(t, want, fileSize(t, seg))
}

// openTestWAL creates a new log in a temporary directory, its first
// segment preallocated to prealloc bytes (0: not), and opens it rotating
// at segBytes.
func openTestWAL(t *testing.T, prealloc, segBytes int64) (dir string, w *wal) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), walDirName)
	require.NoError(t, initWALDir(dir, walPos{}, nil, prealloc))
	w, _, err := openWAL(dir, segBytes)
	require.NoError(t, err)
	return dir, w
}
