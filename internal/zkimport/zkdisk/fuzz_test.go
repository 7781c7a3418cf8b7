package zkdisk

import (
	"encoding/binary"
	"hash/adler32"
	"testing"
)

// seal appends a seal (Adler-32 of b, then ustring "/") to b.
func seal(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(b)))
	return append(binary.BigEndian.AppendUint32(b, 1), '/')
}

func jstr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// minimalSnapshot is a snapshot of a root alone, no sessions, no ACLs.
func minimalSnapshot() []byte {
	b := binary.BigEndian.AppendUint32(nil, SnapMagic)
	b = binary.BigEndian.AppendUint32(b, FileVersion)
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))
	b = binary.BigEndian.AppendUint32(b, 0) // sessions
	b = binary.BigEndian.AppendUint32(b, 0) // ACLs
	b = jstr(b, "")
	b = binary.BigEndian.AppendUint32(b, 0)          // data
	b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // acl -1
	b = append(b, make([]byte, 60)...)               // StatPersisted
	b = jstr(b, "/")
	return seal(b)
}

func TestReadSnapshot(t *testing.T) {
	good := minimalSnapshot()
	for _, tc := range []struct {
		name  string
		in    []byte
		nodes int
		ok    bool
	}{
		{"minimal", good, 1, true},
		{"truncated", good[:len(good)-3], 0, false},
		{"flipped", append(append([]byte{}, good[:20]...), append([]byte{good[20] ^ 1}, good[21:]...)...), 0, false},
		{"bad magic", append([]byte("ZKLG"), good[4:]...), 0, false},
		{"trailing", append(append([]byte{}, good...), 0), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSnapshot(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && len(s.Nodes) != tc.nodes {
				t.Fatalf("%d nodes, want %d", len(s.Nodes), tc.nodes)
			}
		})
	}
}

func logFile(recs ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, LogMagic)
	b = binary.BigEndian.AppendUint32(b, FileVersion)
	b = binary.BigEndian.AppendUint64(b, 0)
	for _, r := range recs {
		b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(r)))
		b = binary.BigEndian.AppendUint32(b, uint32(len(r)))
		b = append(append(b, r...), 'B')
	}
	return b
}

func deleteTxn(zxid int64, path string) []byte {
	b := binary.BigEndian.AppendUint64(nil, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, OpDelete)
	return jstr(b, path)
}

func TestLogRecords(t *testing.T) {
	two := logFile(deleteTxn(1, "/a"), deleteTxn(2, "/b"))
	for _, tc := range []struct {
		name     string
		in       []byte
		recs     int
		torn, ok bool
	}{
		{"two", two, 2, false, true},
		{"preallocated", append(append([]byte{}, two...), make([]byte, 100)...), 2, false, true},
		{"torn in data", two[:len(two)-5], 1, true, true},
		{"torn before EOR", two[:len(two)-1], 1, true, true},
		{"torn in crc", two[:len(two)-(12+len(deleteTxn(2, "/b"))+1)+5], 1, true, true},
		{"crc", append(append([]byte{}, two[:len(two)-3]...), two[len(two)-3]^1, two[len(two)-2], 'B'), 0, false, false},
		{"short header", two[:10], 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, torn, err := LogRecords(tc.in)
			if (err == nil) != tc.ok || len(recs) != tc.recs || torn != tc.torn {
				t.Fatalf("%d records, torn %v, err %v; want %d, %v, ok=%v", len(recs), torn, err, tc.recs, tc.torn, tc.ok)
			}
			for _, r := range recs {
				if _, err := DecodeTxn(r); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func FuzzReadSnapshot(f *testing.F) {
	f.Add(minimalSnapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ReadSnapshot(b)
		_ = LooksComplete(b)
	})
}

func FuzzLogRecords(f *testing.F) {
	f.Add(logFile(deleteTxn(1, "/a"), deleteTxn(2, "/b")))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, _ := LogRecords(b)
		for _, r := range recs {
			_, _ = DecodeTxn(r)
		}
	})
}

func FuzzDecodeTxn(f *testing.F) {
	f.Add(deleteTxn(1, "/a"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = DecodeTxn(b) })
}
