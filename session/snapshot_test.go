package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleTable() *Table {
	tb := NewTable()
	tb.Add(Session{ID: 0x0100000000010000, TimeoutMs: 4000, Password: pw(1)})
	tb.Add(Session{ID: 0x0100000000010001, TimeoutMs: 40000, Password: pw(2)})
	tb.Add(Session{ID: math.MinInt64 + 1, TimeoutMs: 6000, Password: pw(3)})
	tb.Add(Session{ID: math.MaxInt64, TimeoutMs: 1, Password: nil})
	return tb
}

func snapshotBytes(t testing.TB, tb *Table) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, tb.WriteSnapshot(&buf))
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	for name, tb := range map[string]*Table{"empty": NewTable(), "sample": sampleTable()} {
		t.Run(name, func(t *testing.T) {
			data := snapshotBytes(t, tb)
			got, err := ReadSnapshot(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, tb.All(), got.All())
			require.Equal(t, data, snapshotBytes(t, got), "re-encoding gives the same bytes")
		})
	}
}

func TestSnapshotDeterministic(t *testing.T) {
	all := sampleTable().All()
	forward, backward := NewTable(), NewTable()
	for i := range all {
		forward.Add(all[i])
		backward.Add(all[len(all)-1-i])
	}
	require.Equal(t, snapshotBytes(t, forward), snapshotBytes(t, backward))
}

func TestSnapshotEmptyLayout(t *testing.T) {
	data := snapshotBytes(t, NewTable())
	require.Len(t, data, headerLen+4)
	require.Equal(t, []byte("ZKSS\x00\x00\x00\x01\x00\x00\x00\x00"), data[:headerLen])
}

func TestSnapshotReadsOnlyItsBytes(t *testing.T) {
	data := snapshotBytes(t, sampleTable())
	r := bytes.NewReader(append(bytes.Clone(data), "next section"...))
	_, err := ReadSnapshot(r)
	require.NoError(t, err)
	rest, _ := io.ReadAll(r)
	require.Equal(t, "next section", string(rest))
}

func TestSnapshotTruncated(t *testing.T) {
	data := snapshotBytes(t, sampleTable())
	for n := range len(data) {
		_, err := ReadSnapshot(bytes.NewReader(data[:n]))
		require.ErrorIs(t, err, ErrCorruptSnapshot, "truncated to %d bytes", n)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "truncated to %d bytes", n)
	}
}

func TestSnapshotBitFlips(t *testing.T) {
	data := snapshotBytes(t, sampleTable())
	for i := range data {
		for bit := range 8 {
			bad := bytes.Clone(data)
			bad[i] ^= 1 << bit
			_, err := ReadSnapshot(bytes.NewReader(bad))
			require.ErrorIs(t, err, ErrCorruptSnapshot, "byte %d bit %d", i, bit)
		}
	}
}

// withCRC appends the checksum, so that a test reaches the check it aims at.
func withCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32Castagnoli(b))
}

func header(count uint32) []byte {
	b := []byte(snapshotMagic)
	b = binary.BigEndian.AppendUint32(b, snapshotVersion)
	return binary.BigEndian.AppendUint32(b, count)
}

func record(id int64, timeoutMs int32, pwLen uint32, pw []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs))
	b = binary.BigEndian.AppendUint32(b, pwLen)
	return append(b, pw...)
}

func TestSnapshotCorrupt(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		data []byte
		eof  bool // wants io.ErrUnexpectedEOF too
	}{
		{"empty input", nil, true},
		{"bad magic", withCRC(cat([]byte("ZKSX"), header(0)[4:])), false},
		{"bad version", withCRC(cat([]byte(snapshotMagic), []byte{0, 0, 0, 2}, []byte{0, 0, 0, 0})), false},
		{"huge count, short input", withCRC(header(math.MaxUint32)), true},
		{"huge password length", withCRC(cat(header(1), record(1, 4000, math.MaxUint32, nil))), false},
		{"password length over cap", withCRC(cat(header(1), record(1, 4000, MaxPasswordLen+1, make([]byte, MaxPasswordLen+1)))), false},
		{"duplicate id", withCRC(cat(header(2), record(5, 4000, 0, nil), record(5, 4000, 0, nil))), false},
		{"ids out of order", withCRC(cat(header(2), record(6, 4000, 0, nil), record(5, 4000, 0, nil))), false},
		{"bad checksum", cat(header(0), []byte{1, 2, 3, 4}), false},
		{"missing checksum", cat(header(1), record(5, 4000, 0, nil)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSnapshot(bytes.NewReader(tt.data))
			require.ErrorIs(t, err, ErrCorruptSnapshot)
			require.Equal(t, tt.eof, errors.Is(err, io.ErrUnexpectedEOF), "err = %v", err)
		})
	}

	// Sanity check of the helpers: a hand-built snapshot is accepted.
	ok := withCRC(cat(header(2), record(5, 4000, 0, nil), record(6, 5000, 2, []byte("pw"))))
	tb, err := ReadSnapshot(bytes.NewReader(ok))
	require.NoError(t, err)
	require.Equal(t, []Session{{ID: 5, TimeoutMs: 4000}, {ID: 6, TimeoutMs: 5000, Password: []byte("pw")}}, tb.All())
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestSnapshotIOErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadSnapshot(failingReader{boom})
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, ErrCorruptSnapshot)

	require.ErrorIs(t, sampleTable().WriteSnapshot(failingWriter{boom}), boom)

	tb := NewTable()
	tb.Add(Session{ID: 1, Password: make([]byte, MaxPasswordLen+1)})
	require.Error(t, tb.WriteSnapshot(io.Discard), "a password ReadSnapshot would refuse is not written")
}

// FuzzReadSnapshot checks that ReadSnapshot never panics and that whatever
// it accepts is canonical: writing the table back gives exactly the bytes
// it consumed.
func FuzzReadSnapshot(f *testing.F) {
	f.Add(snapshotBytes(f, NewTable()))
	f.Add(snapshotBytes(f, sampleTable()))
	f.Add(header(math.MaxUint32))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		tb, err := ReadSnapshot(r)
		if err != nil {
			return
		}
		consumed := data[:len(data)-r.Len()]
		var buf bytes.Buffer
		if err := tb.WriteSnapshot(&buf); err != nil {
			t.Fatalf("WriteSnapshot of an accepted snapshot: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), consumed) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", buf.Bytes(), consumed)
		}
	})
}

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, crcTable) }
