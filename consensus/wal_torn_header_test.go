package consensus

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// fakeHeaders returns client data (a znode's bytes, say) holding, at each
// of the 8 shifts against the record alignment, perShift plausible record
// headers (type recBatch, reserved zero, a wrong checksum) claiming claim
// bytes: lengths that reach into the zeros of a preallocated segment.
func fakeHeaders(perShift int, claim uint32) []byte {
	var d []byte
	for s := 0; s < recAlign; s++ {
		d = append(d, make([]byte, s)...)
		for range perShift {
			var h [recHeaderSize]byte
			binary.LittleEndian.PutUint32(h[0:4], claim)
			binary.LittleEndian.PutUint32(h[4:8], 0xdeadbeef)
			h[8] = recBatch
			d = append(d, h[:]...)
		}
		d = append(d, 0xAA)
	}
	return d
}

// TestWALTornTailHeaderLost tears the last (never acknowledged) write so
// that its first sector, with the record's header, did not reach the disk
// but its later sectors did: possible when a record overwrites a
// preallocated segment's zeros in place. What is left is zeros, the
// record's payload (client data full of fake headers claiming megabytes of
// the zeros after it) and the segment's zeros. Open must cut it, with
// checksum work bounded by the non-zero bytes, not by the zeros.
func TestWALTornTailHeaderLost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prealloc int64 // 0: records appended
		perShift int
		claim    uint32
	}{
		{"appended", 0, 32, 3 << 20},
		{"preallocated first segment", walFirstSegmentBytes, 32, 3 << 20},
		{"preallocated full segment", walSegmentBytes, 6, 60 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w := openTestWAL(t, tc.prealloc, walSegmentBytes)
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 0), entries: ents(1, 3, 1)}))
			last := w.size
			data := fakeHeaders(tc.perShift, tc.claim)
			e := &pb.Entry{Index: new(uint64(4)), Term: new(uint64(1)), Data: data}
			require.NoError(t, w.append(&walBatch{entries: []*pb.Entry{e}}))
			end := w.size
			require.NoError(t, w.close())
			seg := w.segs[0].path
			size := fileSize(t, seg)
			zeroAt(t, seg, last, recHeaderSize) // the header never written

			w, r, err := openWAL(dir, walSegmentBytes)
			require.NoError(t, err, "a crash tore a write that was never acknowledged: the member must start")
			require.NoError(t, w.close())
			require.Equal(t, span(1, 3, 1), positions(r.entries))
			require.Equal(t, last, w.size)
			if tc.prealloc > 0 {
				require.Equal(t, size, fileSize(t, seg), "preallocation kept")
			}
			require.True(t, allZero(readFile(t, seg)[last:]), "torn bytes cut")
			// Each fake header costs at most the torn record's bytes (the
			// non-zero bytes after it), not the megabytes it claims.
			require.LessOrEqual(t, r.scanned, int64(recAlign*tc.perShift)*(end-last), "bytes checksummed")
			t.Logf("%d bytes of client data, %d bytes checksummed", len(data), r.scanned)
		})
	}
}

// TestWALTornTailValidRecordInZeros damages a record's header in a
// preallocated segment and writes, after it, a valid record whose payload
// ends in zeros past the segment's last non-zero byte: the scan checksums
// only its non-zero part and extends the checksum over the zeros, and
// still finds it, so open refuses the log (damage followed by a valid
// record, not a torn tail).
func TestWALTornTailValidRecordInZeros(t *testing.T) {
	dir, w := openTestWAL(t, walFirstSegmentBytes, walSegmentBytes)
	require.NoError(t, w.append(&walBatch{hardState: hardState(1, 0), entries: ents(1, 3, 1)}))
	bad := w.size
	require.NoError(t, w.append(&walBatch{entries: ents(4, 4, 1)}))
	next := w.size
	zeros := &pb.Entry{Index: new(uint64(5)), Term: new(uint64(1)), Data: make([]byte, 1<<20)}
	require.NoError(t, w.append(&walBatch{entries: []*pb.Entry{zeros}}))
	require.NoError(t, w.close())
	seg := w.segs[0].path
	zeroAt(t, seg, bad, recHeaderSize)

	data := readFile(t, seg)
	_, _, salt, err := decodeWALHeader(data)
	require.NoError(t, err)
	nzEnd := walHeaderSize + nonZeroLen(data[walHeaderSize:])
	require.Less(t, nzEnd, int(next)+recHeaderSize+100, "the valid record's payload lies in the zeros")
	got, work, exhausted := nextValidRecord(data, int(bad)+recAlign, nzEnd, salt, walScanBudget)
	require.Equal(t, int(next), got)
	require.False(t, exhausted)
	require.Less(t, work, int64(1000), "bytes checksummed")

	_, _, err = openWAL(dir, walSegmentBytes)
	require.ErrorIs(t, err, ErrCorruptLog)
	require.ErrorContains(t, err, "followed by a valid record")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// zeroAt overwrites n bytes of the file at path from off with zeros.
func zeroAt(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, n), off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// FuzzTornTailScan checks nextValidRecord, which checksums a candidate's
// bytes in the zeros after the last non-zero byte by crc32cZeros, against
// decodeRecord tried at every aligned offset: the same first valid record.
// The input is followed by pad zeros (a preallocated segment's).
func FuzzTornTailScan(f *testing.F) {
	const salt = 7
	rec := func(data []byte) []byte {
		e := &pb.Entry{Index: new(uint64(5)), Term: new(uint64(1)), Data: data}
		b, err := appendBatchRecord(make([]byte, 24), salt, &walBatch{entries: []*pb.Entry{e}})
		require.NoError(f, err)
		return b
	}
	f.Add(rec([]byte("abc")), uint16(0))
	f.Add(rec(make([]byte, 3000)), uint16(100))
	f.Add(rec(append([]byte{1, 2, 3}, make([]byte, 500)...))[:40], uint16(600))
	f.Add(fakeHeaders(2, 100), uint16(200))
	f.Fuzz(func(t *testing.T, in []byte, pad uint16) {
		// Both scans are quadratic in the worst case: keep inputs small.
		if len(in) > 8<<10 {
			in = in[:8<<10]
		}
		data := append(append([]byte(nil), in...), make([]byte, pad%(8<<10))...)
		nzEnd := nonZeroLen(data)
		want := -1
		for o := 0; o+recHeaderSize <= len(data); o += recAlign {
			if _, _, _, err := decodeRecord(data[o:], salt); err == nil {
				want = o
				break
			}
		}
		got, _, exhausted := nextValidRecord(data, 0, nzEnd, salt, 1<<62)
		if exhausted || got != want {
			t.Fatalf("nextValidRecord %d (exhausted %v), decodeRecord finds %d", got, exhausted, want)
		}
	})
}
