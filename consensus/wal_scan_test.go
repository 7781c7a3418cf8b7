package consensus

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// fakeHeaderWAL builds a WAL holding entry 1 and then entry 2, whose data
// (client data, e.g. a znode's bytes) is a record header at every aligned
// offset of the segment: type recBatch, reserved bytes zero, a length of
// fakeLen. It returns the WAL's dir, the segment and where entry 2's
// record starts.
func fakeHeaderWAL(t *testing.T, size, fakeLen int) (dir, seg string, start int64) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), walDirName)
	require.NoError(t, initWALDir(dir, walPos{}, nil, 0))
	w, _, err := openWAL(dir, walSegmentBytes)
	require.NoError(t, err)
	require.NoError(t, w.append(&walBatch{entries: ents(1, 1, 1)}))
	start = w.size
	data := make([]byte, size)
	for o := 0; o+recHeaderSize <= size; o += recHeaderSize {
		binary.LittleEndian.PutUint32(data[o:], uint32(fakeLen))
		data[o+8] = recBatch
	}
	e := &pb.Entry{Index: new(uint64(2)), Term: new(uint64(1)), Data: data}
	require.NoError(t, w.append(&walBatch{entries: []*pb.Entry{e}}))
	require.NoError(t, w.close())
	seg = w.segs[0].path
	// Shift the data so that its fake headers sit at aligned offsets.
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	at := bytes.Index(full[start:], data[:2*recHeaderSize])
	require.GreaterOrEqual(t, at, 0)
	if shift := (recAlign - (int(start)+at)%recAlign) % recAlign; shift > 0 {
		e.Data = append(make([]byte, shift), data...)
		require.NoError(t, os.Truncate(seg, start))
		w, _, err = openWAL(dir, walSegmentBytes)
		require.NoError(t, err)
		require.NoError(t, w.append(&walBatch{entries: []*pb.Entry{e}}))
		require.NoError(t, w.close())
	}
	return dir, seg, start
}

// TestWALTornTailScanWork damages the last record of a WAL, a 2 MiB entry
// full of fake record headers, and checks what open decides and how many
// bytes it checksums looking for a valid record after it: checking every
// fake header would be quadratic (here about 48 GiB).
func TestWALTornTailScanWork(t *testing.T) {
	const size, fakeLen = 2 << 20, 512 << 10
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, seg string, start int64)
		wantErr bool
		// work: at most maxWork bytes checksummed
		maxWork int64
	}{
		{"torn: the record's last 4 KiB never written", func(t *testing.T, seg string, _ int64) {
			require.NoError(t, os.Truncate(seg, fileSize(t, seg)-4096))
		}, false, walScanBudget},
		{"bad checksum in the record's payload", func(t *testing.T, seg string, start int64) {
			flipByte(t, seg, start+recHeaderSize+size/2)
		}, false, 0},
		{"torn: the record's header never written", func(t *testing.T, seg string, start int64) {
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(make([]byte, recHeaderSize), start)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, true, walScanBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, seg, start := fakeHeaderWAL(t, size, fakeLen)
			tc.damage(t, seg, start)
			data, err := os.ReadFile(seg)
			require.NoError(t, err)
			_, _, salt, err := decodeWALHeader(data)
			require.NoError(t, err)
			_, _, _, derr := decodeRecord(data[start:], salt)
			require.Error(t, derr)
			work, _, err := checkTornTail(data, int(start), salt, derr)
			require.LessOrEqual(t, work, tc.maxWork, "bytes checksummed")
			require.Equal(t, tc.wantErr, err != nil, "error: %v", err)

			w, r, err := openWAL(dir, walSegmentBytes)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorruptLog)
				require.ErrorContains(t, err, "gave up")
				return
			}
			require.NoError(t, err)
			require.NoError(t, w.close())
			require.Equal(t, uint64(1), r.last().index)
			require.Equal(t, start, fileSize(t, seg), "the damaged record is cut")
			require.Equal(t, work, r.scanned)
		})
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[off] ^= 0x01
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// TestWALTornTailLog checks how open's cut of the last segment's tail is
// logged: a write torn by a crash at warn level, a damaged record (it may
// have been acknowledged) at error level. In a preallocated segment a torn
// write usually fits, its unwritten sectors zeros: it does not verify, and
// is told from damage by those zeros at its end.
func TestWALTornTailLog(t *testing.T) {
	// The record damaged: entries 4-6 holding 400 non-zero bytes each, so
	// that it spans sector boundaries and ends in non-zero bytes.
	last3 := ents(4, 6, 1)
	for _, e := range last3 {
		e.Data = append(e.Data, bytes.Repeat([]byte{0xAB}, 400)...)
	}
	// firstSector is the first sector boundary in the record's payload.
	firstSector := func(last int64) int64 {
		return (last + recHeaderSize + walSectorSize) &^ (walSectorSize - 1)
	}
	for _, tc := range []struct {
		name      string
		prealloc  int64
		damage    func(t *testing.T, seg string, last, end int64)
		wantLevel string // "" for no log
		wantMsg   string
	}{
		{"intact", 0, func(*testing.T, string, int64, int64) {}, "", ""},
		{"last record cut short", 0, func(t *testing.T, seg string, _, _ int64) {
			require.NoError(t, os.Truncate(seg, fileSize(t, seg)-3))
		}, "warn", "torn by a crash"},
		{"zeros after the last record: the clean end of a preallocated segment", 0, func(t *testing.T, seg string, _, _ int64) {
			require.NoError(t, os.Truncate(seg, fileSize(t, seg)+64))
		}, "", ""},
		{"last record's payload damaged", 0, func(t *testing.T, seg string, last, _ int64) {
			flipByte(t, seg, last+recHeaderSize+2)
		}, "error", "damaged record"},
		{"last record's header damaged", 0, func(t *testing.T, seg string, last, _ int64) {
			flipByte(t, seg, last+9)
		}, "error", "damaged record"},
		{"preallocated: intact", 64 << 10, func(*testing.T, string, int64, int64) {}, "", ""},
		{"preallocated: last record's last sectors never written", 64 << 10, func(t *testing.T, seg string, last, end int64) {
			zeroAt(t, seg, firstSector(last), int(end-firstSector(last)))
		}, "warn", "torn by a crash"},
		{"preallocated: last record's header sector never written", 64 << 10, func(t *testing.T, seg string, last, _ int64) {
			zeroAt(t, seg, last, int(firstSector(last)-last))
		}, "warn", "torn by a crash"},
		{"preallocated: last record's payload damaged", 64 << 10, func(t *testing.T, seg string, last, _ int64) {
			flipByte(t, seg, last+recHeaderSize+2)
		}, "error", "damaged record"},
		{"preallocated: last record's header damaged", 64 << 10, func(t *testing.T, seg string, last, _ int64) {
			flipByte(t, seg, last+9)
		}, "error", "damaged record"},
		{"preallocated: a sector in the middle of the last record lost, its end kept", 64 << 10, func(t *testing.T, seg string, last, _ int64) {
			zeroAt(t, seg, firstSector(last), walSectorSize)
		}, "error", "damaged record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w := openTestWAL(t, tc.prealloc, walSegmentBytes)
			require.NoError(t, w.append(&walBatch{entries: ents(1, 3, 1)}))
			last := w.size
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 3), entries: last3}))
			end := w.size
			require.NoError(t, w.close())
			require.Greater(t, end-recAlign, firstSector(last)+walSectorSize, "the record spans three sectors")
			tc.damage(t, w.segs[0].path, last, end)

			w, _, err := openWAL(dir, walSegmentBytes)
			require.NoError(t, err)
			require.NoError(t, w.close())
			var buf bytes.Buffer
			w.torn.log(zerolog.New(&buf))
			if tc.wantLevel == "" {
				require.Zero(t, buf.Len(), buf.String())
				return
			}
			var ev struct{ Level, Message, Cause string }
			require.NoError(t, json.Unmarshal(buf.Bytes(), &ev), buf.String())
			require.Equal(t, tc.wantLevel, ev.Level, buf.String())
			require.Contains(t, ev.Message, tc.wantMsg)
			require.NotEmpty(t, ev.Cause)
		})
	}
}
