package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ents returns entries lo..hi (inclusive) of term, with data naming them.
func ents(lo, hi, term uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := lo; i <= hi; i++ {
		out = append(out, &pb.Entry{Index: new(i), Term: new(term), Data: fmt.Appendf(nil, "e%d-t%d", i, term)})
	}
	return out
}

func hardState(term, commit uint64) *pb.HardState {
	return &pb.HardState{Term: new(term), Vote: new(uint64(1)), Commit: new(commit)}
}

func snapMeta(index, term uint64) *pb.SnapshotMetadata {
	return &pb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: &pb.ConfState{Voters: []uint64{1}}}
}

// positions lists (index, term) of es, for readable comparisons.
func positions(es []*pb.Entry) [][2]uint64 {
	out := [][2]uint64{}
	for _, e := range es {
		out = append(out, [2]uint64{e.GetIndex(), e.GetTerm()})
	}
	return out
}

func span(lo, hi, term uint64) [][2]uint64 { return positions(ents(lo, hi, term)) }

func cat(spans ...[][2]uint64) [][2]uint64 { return slices.Concat(spans...) }

// openSegmentedStore opens a store in a new directory with 256-byte WAL
// segments (many segments) holding entries 1..n of term 1, written 3 to a
// record with hard state (term 1, commit 5).
func openSegmentedStore(t *testing.T, n uint64) (dir string, s *diskStore) {
	t.Helper()
	setWALSegmentSize(t, 256)
	dir = t.TempDir()
	s = openStore(t, dir)
	for i := uint64(1); i <= n; i += 3 {
		mustWrite(t, s, &WriteBatch{HardState: hardState(1, 5), Entries: ents(i, i+2, 1)})
	}
	return dir, s
}

func openStore(t *testing.T, dir string) *diskStore {
	t.Helper()
	s, err := openDiskStore(dir)
	require.NoError(t, err)
	return s
}

func mustWrite(t *testing.T, s *diskStore, w *WriteBatch) {
	t.Helper()
	require.NoError(t, s.Write(w))
}

// reload closes s, reopens dir and loads it; the load must be one raft
// accepts.
func reload(t *testing.T, s *diskStore, dir string) (*diskStore, LoadedState) {
	t.Helper()
	if s != nil {
		require.NoError(t, s.Close())
	}
	s = openStore(t, dir)
	st, err := s.Load()
	require.NoError(t, err)
	requireRaftAccepts(t, st)
	return s, st
}

// requireRaftAccepts loads st into raft's MemoryStorage as Core.recover
// does and starts a raft node on it, which panics on a commit index beyond
// the log.
func requireRaftAccepts(t *testing.T, st LoadedState) {
	t.Helper()
	mem := raft.NewMemoryStorage()
	if md := st.Snapshot; md.GetIndex() > 0 {
		// Cloned: raft fills in fields of the conf state.
		md = proto.Clone(md).(*pb.SnapshotMetadata)
		require.NoError(t, mem.ApplySnapshot(&pb.Snapshot{Metadata: md}))
	}
	if hs := st.HardState; hs != nil {
		hs = proto.Clone(hs).(*pb.HardState)
		if hs.GetCommit() < st.Snapshot.GetIndex() {
			hs.Commit = new(st.Snapshot.GetIndex())
		}
		require.NoError(t, mem.SetHardState(hs))
	}
	require.NoError(t, mem.Append(st.Entries))
	last, err := mem.LastIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, max(st.HardState.GetCommit(), st.Snapshot.GetIndex()), last, "commit index beyond the log")
	_, err = raft.NewRawNode(RaftConfig(1, 10, 1, mem, st.Snapshot.GetIndex(), nil))
	require.NoError(t, err)
}

func walFiles(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := listWALSegs(filepath.Join(dir, walDirName), false)
	require.NoError(t, err)
	var out []string
	for _, s := range segs {
		out = append(out, s.path)
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func TestWALRecordRoundTrip(t *testing.T) {
	for _, b := range []*walBatch{
		{hardState: hardState(3, 7)},
		{entries: ents(1, 3, 1)},
		{reset: &walPos{20, 4}, hardState: hardState(4, 20), entries: ents(21, 22, 4)},
		{truncateFrom: 5, entries: ents(5, 9, 2)},
		{entries: []*pb.Entry{{Index: new(uint64(1)), Term: new(uint64(1)), Data: make([]byte, 1<<16)}}},
	} {
		rec, err := appendBatchRecord([]byte("prefix"), 42, b)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(rec[:6]))
		rec = rec[6:]
		require.Zero(t, len(rec)%recAlign)
		typ, payload, n, err := decodeRecord(append(rec, make([]byte, 24)...), 42)
		require.NoError(t, err)
		require.Equal(t, recBatch, typ)
		require.Equal(t, len(rec), n)
		got, err := decodeBatch(payload)
		require.NoError(t, err)
		require.Equal(t, b.reset, got.reset)
		require.Equal(t, b.truncateFrom, got.truncateFrom)
		require.True(t, proto.Equal(b.hardState, got.hardState) || b.hardState == nil && got.hardState == nil)
		require.Equal(t, positions(b.entries), positions(got.entries))
		for i := range b.entries {
			require.Equal(t, b.entries[i].GetData(), got.entries[i].GetData())
		}
		// Another segment's salt does not verify it.
		_, _, _, err = decodeRecord(rec, 43)
		require.ErrorIs(t, err, errRecordBad)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, b := range []*walBatch{
		{hardState: hardState(3, 7)},
		{reset: &walPos{20, 4}, truncateFrom: 3, hardState: hardState(4, 20), entries: ents(21, 22, 4)},
	} {
		rec, err := appendBatchRecord(nil, 7, b)
		require.NoError(f, err)
		f.Add(rec)
		f.Add(rec[:len(rec)-3])
	}
	f.Add(make([]byte, 16))
	f.Add(make([]byte, 5000))
	f.Fuzz(func(t *testing.T, data []byte) {
		naive := len(data)
		for naive > 0 && data[naive-1] == 0 {
			naive--
		}
		if got := nonZeroLen(data); got != naive {
			t.Fatalf("nonZeroLen %d, want %d", got, naive)
		}
		if allZero(data) != (naive == 0) {
			t.Fatalf("allZero %v for %d non-zero bytes", allZero(data), naive)
		}
		typ, payload, n, err := decodeRecord(data, 7)
		if err != nil {
			return
		}
		if allZero(data[:n]) {
			t.Fatal("zeros decoded as a record")
		}
		if typ != recBatch || n > len(data) || n%recAlign != 0 || len(payload) > n {
			t.Fatalf("decoded type %d, %d bytes of %d, payload %d", typ, n, len(data), len(payload))
		}
		b, err := decodeBatch(payload)
		if err != nil {
			return
		}
		// What decodes re-encodes to a record that decodes the same.
		rec, err := appendBatchRecord(nil, 7, b)
		if err != nil {
			return
		}
		_, payload2, _, err := decodeRecord(rec, 7)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := decodeBatch(payload2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(positions(b.entries), positions(b2.entries)) || b.truncateFrom != b2.truncateFrom {
			t.Fatalf("re-encoded batch differs")
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	rec, err := appendBatchRecord(nil, 0, &walBatch{reset: &walPos{2, 1}, hardState: hardState(1, 2), entries: ents(3, 4, 1)})
	require.NoError(f, err)
	f.Add(rec[recHeaderSize:])
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeBatch(data)
	})
}

// TestWALTornTail cuts the last segment at every byte offset of its last
// record: open keeps every earlier record, cuts the file there, and the
// log is writable again. In a preallocated segment the record's bytes
// after the cut are zeros (never written) up to the end of the
// preallocation: open overwrites the torn bytes with zeros and keeps the
// file's size.
func TestWALTornTail(t *testing.T) {
	const segBytes = 16 << 10
	for _, tc := range []struct {
		name     string
		prealloc int64
	}{
		{"appended", 0},
		{"preallocated", segBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w := openTestWAL(t, tc.prealloc, segBytes)
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 0), entries: ents(1, 4, 1)}))
			before := w.size
			require.NoError(t, w.append(&walBatch{hardState: hardState(2, 4), entries: ents(5, 7, 2)}))
			after := w.size
			require.NoError(t, w.close())
			seg := w.segs[0].path
			full, err := os.ReadFile(seg)
			require.NoError(t, err)
			size := max(after, tc.prealloc)
			require.Equal(t, size, int64(len(full)))

			for cut := before; cut <= after; cut++ {
				t.Run(fmt.Sprint(cut), func(t *testing.T) {
					torn := slices.Clone(full)
					if tc.prealloc > 0 {
						clear(torn[cut:]) // the record's bytes from cut on never written
					} else {
						torn = torn[:cut]
					}
					require.NoError(t, os.WriteFile(seg, torn, 0o600))
					w, r, err := openWAL(dir, segBytes)
					require.NoError(t, err)
					// Zeros lost at the end of a preallocated record
					// (its padding) leave it intact.
					intact := cut == after || (tc.prealloc > 0 && allZero(full[cut:after]))
					if intact {
						require.Equal(t, cat(span(1, 4, 1), span(5, 7, 2)), positions(r.entries))
						require.Equal(t, uint64(4), r.hardState.GetCommit())
						require.Zero(t, w.torn.len)
					} else {
						require.Equal(t, span(1, 4, 1), positions(r.entries), "the torn record is never applied")
						require.Equal(t, uint64(1), r.hardState.GetTerm())
						if tc.prealloc > 0 {
							require.Equal(t, size, fileSize(t, seg), "the preallocation is kept")
							got, err := os.ReadFile(seg)
							require.NoError(t, err)
							require.True(t, allZero(got[before:]), "the torn bytes are zeroed")
							require.Equal(t, int64(nonZeroLen(full[before:cut])), w.torn.len)
						} else {
							require.Equal(t, before, fileSize(t, seg), "the torn tail is cut")
							require.Equal(t, cut-before, w.torn.len)
						}
						// Appending after the cut continues the log.
						require.NoError(t, w.append(&walBatch{entries: ents(5, 5, 3)}))
					}
					require.NoError(t, w.close())
					r, err = replayWAL(dir, false)
					require.NoError(t, err)
					if !intact {
						require.Equal(t, cat(span(1, 4, 1), span(5, 5, 3)), positions(r.entries))
					}
					if tc.prealloc > 0 {
						require.Equal(t, size, fileSize(t, seg), "an append over the zeros keeps the file's size")
					}
				})
			}
		})
	}
}

// TestWALCorruption flips or removes bytes: a bad record at the end of the
// last segment is a torn tail, anything else is ErrCorruptLog.
func TestWALCorruption(t *testing.T) {
	// Three segments: the rotation size is small, so every record starts a
	// new segment... two records per segment here.
	build := func(t *testing.T) (dir string, segs []string, offs [][]int64) {
		dir = filepath.Join(t.TempDir(), walDirName)
		require.NoError(t, initWALDir(dir, walPos{}, nil, 0))
		w, _, err := openWAL(dir, 150)
		require.NoError(t, err)
		offs = [][]int64{{}}
		for i := uint64(0); i < 6; i++ {
			offs[len(offs)-1] = append(offs[len(offs)-1], w.size)
			n := len(w.segs)
			require.NoError(t, w.append(&walBatch{hardState: hardState(1, 3*i), entries: ents(3*i+1, 3*i+3, 1)}))
			if len(w.segs) > n {
				offs = append(offs, []int64{})
			}
		}
		require.NoError(t, w.close())
		for _, s := range w.segs {
			segs = append(segs, s.path)
		}
		return dir, segs, offs
	}
	dir, segs, offs := build(t)
	require.Len(t, segs, 4, "records per segment: %v", offs)
	require.Len(t, offs[0], 2)
	require.Empty(t, offs[3], "the last segment is empty after a rotation")

	flip := func(seg int, off int64) func(*testing.T, []string) {
		return func(t *testing.T, segs []string) {
			b, err := os.ReadFile(segs[seg])
			require.NoError(t, err)
			b[off] ^= 0x40
			require.NoError(t, os.WriteFile(segs[seg], b, 0o600))
		}
	}
	_ = dir
	for _, tc := range []struct {
		name     string
		damage   func(*testing.T, []string)
		wantErr  bool
		wantLast uint64 // last entry index after open
	}{
		{"intact", func(*testing.T, []string) {}, false, 18},
		{"flip in the first record of a closed segment", flip(0, offs[0][0]+recHeaderSize+3), true, 0},
		{"flip in the last record of a closed segment", flip(2, offs[2][1]+recHeaderSize+3), true, 0},
		{"flip in a segment header", flip(1, 12), true, 0},
		{"flip in a record header's length of a closed segment", flip(1, offs[1][0]), true, 0},
		{"a segment missing in the middle", func(t *testing.T, segs []string) { require.NoError(t, os.Remove(segs[1])) }, true, 0},
		{"the first segment missing", func(t *testing.T, segs []string) { require.NoError(t, os.Remove(segs[0])) }, false, 18},
		{"garbage appended to a closed segment", func(t *testing.T, segs []string) {
			f, err := os.OpenFile(segs[1], os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("garbage!"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, true, 0},
		{"zeros appended to a closed segment", func(t *testing.T, segs []string) {
			// Never preallocated, synced whole before the next segment
			// was created: the zeros stand for lost writes.
			f, err := os.OpenFile(segs[1], os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write(make([]byte, 64))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, true, 0},
		{"the last record of a closed segment zeroed", func(t *testing.T, segs []string) {
			b, err := os.ReadFile(segs[1])
			require.NoError(t, err)
			clear(b[offs[1][1]:])
			require.NoError(t, os.WriteFile(segs[1], b, 0o600))
		}, true, 0},
		{"garbage appended to the last segment: a torn tail", func(t *testing.T, segs []string) {
			f, err := os.OpenFile(segs[3], os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write(bytes.Repeat([]byte{0xab}, 40))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, false, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, segs, _ := build(t)
			tc.damage(t, segs)
			w, r, err := openWAL(dir, 150)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorruptLog)
				return
			}
			require.NoError(t, err)
			require.NoError(t, w.close())
			require.Equal(t, tc.wantLast, r.last().index)
		})
	}

	// In the last segment: a bad record followed by a good one is
	// corruption; the bad last record is a torn tail.
	t.Run("last segment", func(t *testing.T) {
		dir, w := openTestWAL(t, 0, walSegmentBytes)
		var offs []int64
		for i := uint64(0); i < 3; i++ {
			offs = append(offs, w.size)
			require.NoError(t, w.append(&walBatch{entries: ents(i+1, i+1, 1)}))
		}
		require.NoError(t, w.close())
		full, err := os.ReadFile(w.segs[0].path)
		require.NoError(t, err)
		for _, tc := range []struct {
			name    string
			off     int64
			wantErr bool
			last    uint64
		}{
			{"first record's payload", offs[0] + recHeaderSize + 1, true, 0},
			{"middle record's crc", offs[1] + 5, true, 0},
			{"middle record's length", offs[1] + 1, true, 0},
			{"middle record's type", offs[1] + 8, true, 0},
			{"last record's payload", offs[2] + recHeaderSize + 1, false, 2},
			{"last record's length", offs[2], false, 2},
			{"last record's padding", int64(len(full)) - 1, false, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := slices.Clone(full)
				b[tc.off] ^= 0x01
				require.NoError(t, os.WriteFile(w.segs[0].path, b, 0o600))
				w2, r, err := openWAL(dir, walSegmentBytes)
				if tc.wantErr {
					require.ErrorIs(t, err, ErrCorruptLog)
					return
				}
				require.NoError(t, err)
				require.NoError(t, w2.close())
				require.Equal(t, tc.last, r.last().index)
				require.Equal(t, offs[2], fileSize(t, w.segs[0].path))
			})
		}
	})
}

func TestDiskStoreRotationRestart(t *testing.T) {
	setWALSegmentSize(t, 512)
	dir := t.TempDir()
	s := openStore(t, dir)
	for i := uint64(0); i < 50; i++ {
		mustWrite(t, s, &WriteBatch{HardState: hardState(1, 4*i), Entries: ents(4*i+1, 4*i+4, 1)})
	}
	require.Greater(t, len(walFiles(t, dir)), 5)
	s, st := reload(t, s, dir)
	require.Equal(t, span(1, 200, 1), positions(st.Entries))
	require.Equal(t, uint64(196), st.HardState.GetCommit())
	// It goes on writing after the restart, and again.
	mustWrite(t, s, &WriteBatch{HardState: hardState(2, 200), Entries: ents(201, 210, 2)})
	s, st = reload(t, s, dir)
	require.Equal(t, cat(span(1, 200, 1), span(201, 210, 2)), positions(st.Entries))
	require.NoError(t, s.Close())
}

func TestDiskStoreTruncationRestart(t *testing.T) {
	setWALSegmentSize(t, 200)
	dir := t.TempDir()
	s := openStore(t, dir)
	mustWrite(t, s, &WriteBatch{HardState: hardState(1, 2), Entries: ents(1, 10, 1)})
	for i := uint64(11); i <= 30; i++ {
		mustWrite(t, s, &WriteBatch{Entries: ents(i, i, 1)})
	}
	require.Greater(t, len(walFiles(t, dir)), 2)
	// A new leader overwrites 8.. (entries of earlier segments).
	mustWrite(t, s, &WriteBatch{HardState: hardState(2, 7), Entries: ents(8, 9, 2)})
	s, st := reload(t, s, dir)
	require.Equal(t, cat(span(1, 7, 1), span(8, 9, 2)), positions(st.Entries))
	// Then another conflict in the last record, and appends.
	mustWrite(t, s, &WriteBatch{Entries: ents(9, 12, 3)})
	mustWrite(t, s, &WriteBatch{Entries: ents(13, 13, 3)})
	s, st = reload(t, s, dir)
	require.Equal(t, cat(span(1, 7, 1), span(8, 8, 2), span(9, 13, 3)), positions(st.Entries))
	require.Equal(t, uint64(7), st.HardState.GetCommit())
	require.NoError(t, s.Close())
}

func TestDiskStoreCompactionRestart(t *testing.T) {
	setWALSegmentSize(t, 512)
	dir := t.TempDir()
	s := openStore(t, dir)
	for i := uint64(1); i <= 100; i++ {
		mustWrite(t, s, &WriteBatch{HardState: hardState(1, i-1), Entries: ents(i, i, 1)})
	}
	segsBefore := walFiles(t, dir)
	mustWrite(t, s, &WriteBatch{Snapshot: snapMeta(60, 1), CompactBelow: 55})
	segsAfter := walFiles(t, dir)
	require.Less(t, len(segsAfter), len(segsBefore))
	require.Equal(t, segsBefore[len(segsBefore)-len(segsAfter):], segsAfter, "the oldest segments go")
	n, err := s.entryCount()
	require.NoError(t, err)
	require.Less(t, n, 100)
	require.GreaterOrEqual(t, n, 100-55+1, "entries from CompactBelow on stay")

	s, st := reload(t, s, dir)
	require.Equal(t, span(61, 100, 1), positions(st.Entries))
	require.Equal(t, uint64(60), st.Snapshot.GetIndex())
	require.Equal(t, uint64(99), st.HardState.GetCommit())

	// A conflict after compaction, then another compaction and restart.
	mustWrite(t, s, &WriteBatch{HardState: hardState(2, 99), Entries: ents(100, 101, 2)})
	mustWrite(t, s, &WriteBatch{Snapshot: snapMeta(101, 2), CompactBelow: 101})
	s, st = reload(t, s, dir)
	require.Empty(t, st.Entries)
	require.Equal(t, uint64(101), st.Snapshot.GetIndex())
	mustWrite(t, s, &WriteBatch{Entries: ents(102, 103, 2)})
	s, st = reload(t, s, dir)
	require.Equal(t, span(102, 103, 2), positions(st.Entries))
	require.NoError(t, s.Close())
}

// TestDiskStoreCrashBetweenSteps stops a Write after its bbolt step or its
// WAL step, as a crash would, and checks what a restart loads.
func TestDiskStoreCrashBetweenSteps(t *testing.T) {
	errCrash := errors.New("crash")
	for _, tc := range []struct {
		name  string
		at    string
		write *WriteBatch
		// what the restart loads
		snap    uint64
		entries [][2]uint64
		commit  uint64
		term    uint64
	}{
		{
			// The leader's snapshot is recorded, the reset is not: the
			// log's suffix above 20 disagrees with it (entry 20 has term
			// 1, the snapshot's term is 3) and must not be kept.
			name: "leader snapshot, crash after bbolt", at: "after-bbolt",
			write: &WriteBatch{Snapshot: snapMeta(20, 3), DropAllEntries: true, HardState: hardState(3, 20), Entries: ents(21, 22, 3)},
			snap:  20, entries: [][2]uint64{}, commit: 5, term: 1,
		},
		{
			name: "leader snapshot, crash after wal", at: "after-wal",
			write: &WriteBatch{Snapshot: snapMeta(20, 3), DropAllEntries: true, HardState: hardState(3, 20), Entries: ents(21, 22, 3)},
			snap:  20, entries: span(21, 22, 3), commit: 20, term: 3,
		},
		{
			name: "leader snapshot behind the log end, crash after bbolt", at: "after-bbolt",
			write: &WriteBatch{Snapshot: snapMeta(40, 3), DropAllEntries: true, HardState: hardState(3, 40)},
			snap:  40, entries: [][2]uint64{}, commit: 5, term: 1,
		},
		{
			// The snapshot is at the log's last index with another term:
			// the log holds nothing above it but still disagrees with it,
			// so the restart must write the reset the crash lost.
			name: "leader snapshot at the log end, crash after bbolt", at: "after-bbolt",
			write: &WriteBatch{Snapshot: snapMeta(30, 3), DropAllEntries: true, HardState: hardState(3, 30), Entries: ents(31, 32, 3)},
			snap:  30, entries: [][2]uint64{}, commit: 5, term: 1,
		},
		{
			name: "leader snapshot at the log end, crash after wal", at: "after-wal",
			write: &WriteBatch{Snapshot: snapMeta(30, 3), DropAllEntries: true, HardState: hardState(3, 30)},
			snap:  30, entries: [][2]uint64{}, commit: 30, term: 3,
		},
		{
			name: "local snapshot, crash after bbolt", at: "after-bbolt",
			write: &WriteBatch{Snapshot: snapMeta(15, 1), CompactBelow: 12},
			snap:  15, entries: span(16, 30, 1), commit: 5, term: 1,
		},
		{
			name: "local snapshot, crash after wal", at: "after-wal",
			write: &WriteBatch{Snapshot: snapMeta(15, 1), CompactBelow: 12},
			snap:  15, entries: span(16, 30, 1), commit: 5, term: 1,
		},
		{
			name: "conf state and hard state, crash after bbolt", at: "after-bbolt",
			write: &WriteBatch{ConfState: &pb.ConfState{Voters: []uint64{1, 2}}, HardState: hardState(1, 9)},
			snap:  0, entries: span(1, 30, 1), commit: 5, term: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s := openSegmentedStore(t, 30)
			s.crash = func(p string) error {
				if p == tc.at {
					return errCrash
				}
				return nil
			}
			require.ErrorIs(t, s.Write(tc.write), errCrash)
			s, st := reload(t, s, dir)
			require.Equal(t, tc.snap, st.Snapshot.GetIndex())
			require.Equal(t, tc.entries, positions(st.Entries))
			require.Equal(t, tc.commit, st.HardState.GetCommit())
			require.Equal(t, tc.term, st.HardState.GetTerm())
			// The member goes on: the leader sends what follows.
			next := max(tc.snap, uint64(len(tc.entries))+tc.snap)
			if len(tc.entries) > 0 {
				next = tc.entries[len(tc.entries)-1][0]
			}
			mustWrite(t, s, &WriteBatch{HardState: hardState(4, next), Entries: ents(next+1, next+2, 4)})
			s, st = reload(t, s, dir)
			require.NotEmpty(t, st.Entries, "the entries written after the restart")
			require.Equal(t, next+2, st.Entries[len(st.Entries)-1].GetIndex())
			require.NoError(t, s.Close())
		})
	}
}

// writeLegacyDir fills dir with the bbolt-only store as the code before the
// WAL wrote it: a snapshot at 10, entries 5..40 (5..10 kept behind the
// snapshot), a hard state.
func writeLegacyDir(t *testing.T, dir string) LoadedState {
	t.Helper()
	old, err := openLegacyStore(dir)
	require.NoError(t, err)
	require.NoError(t, old.Write(&WriteBatch{HardState: hardState(1, 3), Entries: ents(1, 30, 1)}))
	require.NoError(t, old.Write(&WriteBatch{HardState: hardState(2, 25), Entries: ents(28, 40, 2)}))
	require.NoError(t, writeSnapFile(old.snapDir, 1, 10, []byte("snap")))
	require.NoError(t, old.Write(&WriteBatch{Snapshot: snapMeta(10, 1), CompactBelow: 5, ConfState: &pb.ConfState{Voters: []uint64{1}}}))
	st, err := old.Load()
	require.NoError(t, err)
	require.NoError(t, old.Close())
	require.Equal(t, cat(span(11, 27, 1), span(28, 40, 2)), positions(st.Entries))
	return st
}

func requireSameState(t *testing.T, want, got LoadedState) {
	t.Helper()
	require.True(t, proto.Equal(want.HardState, got.HardState), "hard state %v, want %v", got.HardState, want.HardState)
	require.True(t, proto.Equal(want.Snapshot, got.Snapshot), "snapshot %v, want %v", got.Snapshot, want.Snapshot)
	require.True(t, proto.Equal(want.ConfState, got.ConfState), "conf state %v, want %v", got.ConfState, want.ConfState)
	require.Equal(t, positions(want.Entries), positions(got.Entries))
	for i := range want.Entries {
		require.Equal(t, want.Entries[i].GetData(), got.Entries[i].GetData())
	}
}

// requireUpgraded checks that raft.db holds no log any more.
func requireUpgraded(t *testing.T, db *bolt.DB) {
	t.Helper()
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		require.Nil(t, tx.Bucket(bucketEntries))
		require.Nil(t, tx.Bucket(bucketMeta).Get(keyHardState))
		require.Equal(t, u64Bytes(schemaVersion), tx.Bucket(bucketMeta).Get(keySchemaVersion))
		return nil
	}))
}

func TestDiskStoreUpgrade(t *testing.T) {
	errCrash := errors.New("crash")
	crashAfterWAL := func(t *testing.T, dir string) {
		_, err := openDiskStoreHook(dir, func(p string) error {
			if p == "upgrade-wal-written" {
				return errCrash
			}
			return nil
		})
		require.ErrorIs(t, err, errCrash)
		require.DirExists(t, filepath.Join(dir, walDirName))
	}
	for _, tc := range []struct {
		name string
		// crash interrupts the first open; it returns the state the
		// upgraded store must load.
		crash func(t *testing.T, dir string, want LoadedState) LoadedState
	}{
		{"clean", nil},
		{"crash after the wal is written", func(t *testing.T, dir string, want LoadedState) LoadedState {
			crashAfterWAL(t, dir)
			return want
		}},
		{"crash before the wal dir is renamed", func(t *testing.T, dir string, want LoadedState) LoadedState {
			// What initWALDir leaves when it is interrupted.
			tmp := filepath.Join(dir, walDirName+tmpSuffix)
			require.NoError(t, os.MkdirAll(tmp, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(tmp, walSegName(0)), []byte("ZKRWAL01 partial"), 0o600))
			return want
		}},
		{"crash after the wal is written, then the old binary runs on", func(t *testing.T, dir string, _ LoadedState) LoadedState {
			// A rollback: the old binary ignores wal/ and acknowledges
			// more entries and a new vote in raft.db; the stale WAL must
			// not be adopted by the next upgrade.
			crashAfterWAL(t, dir)
			old, err := openLegacyStore(dir)
			require.NoError(t, err)
			require.NoError(t, old.Write(&WriteBatch{HardState: hardState(3, 45), Entries: ents(41, 50, 3)}))
			want, err := old.Load()
			require.NoError(t, err)
			require.NoError(t, old.Close())
			return want
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := writeLegacyDir(t, dir)
			if tc.crash != nil {
				want = tc.crash(t, dir, want)
			}
			s, got := reload(t, nil, dir)
			requireSameState(t, want, got)
			requireUpgraded(t, s.db)
			require.NoDirExists(t, filepath.Join(dir, walDirName+tmpSuffix))
			data, err := s.LoadSnapshot(1, 10)
			require.NoError(t, err)
			require.Equal(t, "snap", string(data))
			// It goes on, and reopens the same.
			last := want.Entries[len(want.Entries)-1]
			next := ents(last.GetIndex()+1, last.GetIndex()+1, want.HardState.GetTerm())
			mustWrite(t, s, &WriteBatch{HardState: hardState(want.HardState.GetTerm(), last.GetIndex()), Entries: next})
			s, got = reload(t, s, dir)
			require.Equal(t, positions(append(slices.Clone(want.Entries), next...)), positions(got.Entries))
			require.NoError(t, s.Close())
		})
	}
	t.Run("newer schema refused", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		require.NoError(t, s.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keySchemaVersion, u64Bytes(schemaVersion+1))
		}))
		require.NoError(t, s.Close())
		_, err := openDiskStore(dir)
		require.ErrorContains(t, err, "unsupported schema version")
	})
	t.Run("wal missing", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, openStore(t, dir).Close())
		require.NoError(t, os.RemoveAll(filepath.Join(dir, walDirName)))
		_, err := openDiskStore(dir)
		require.Error(t, err)
	})
}

// TestDiskStoreNewDBBesideWAL opens a data dir whose raft.db is new (no
// schema version) beside an existing wal/: a WAL holding nothing (an
// interrupted first open) is rebuilt, one holding a log is refused and
// left as it is.
func TestDiskStoreNewDBBesideWAL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fill    func(t *testing.T, walDir string)
		wantErr bool
	}{
		{"empty wal dir", func(t *testing.T, walDir string) {
			require.NoError(t, os.Mkdir(walDir, 0o700))
		}, false},
		{"wal with one empty segment", func(t *testing.T, walDir string) {
			require.NoError(t, initWALDir(walDir, walPos{}, nil, 0))
		}, false},
		{"wal holding a log", func(t *testing.T, walDir string) {
			require.NoError(t, initWALDir(walDir, walPos{}, &walBatch{hardState: hardState(2, 3), entries: ents(1, 5, 2)}, 0))
		}, true},
		{"wal holding only a hard state", func(t *testing.T, walDir string) {
			require.NoError(t, initWALDir(walDir, walPos{}, &walBatch{hardState: hardState(2, 0)}, 0))
		}, true},
		{"unreadable wal", func(t *testing.T, walDir string) {
			require.NoError(t, os.Mkdir(walDir, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(walDir, walSegName(0)), []byte("garbage"), 0o600))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			walDir := filepath.Join(dir, walDirName)
			tc.fill(t, walDir)
			before := dirContents(t, walDir)
			s, err := openDiskStore(dir)
			if tc.wantErr {
				require.Error(t, err)
				require.Equal(t, before, dirContents(t, walDir), "the wal was changed")
				return
			}
			require.NoError(t, err)
			st, err := s.Load()
			require.NoError(t, err)
			require.True(t, st.empty())
			require.NoError(t, s.Close())
		})
	}
}

// dirContents maps each file name in dir to its contents.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		m[de.Name()] = string(b)
	}
	return m
}

// TestDiskStoreMatchesLegacy writes the same random raft-like batches
// (appends, conflicting appends from a new leader, local snapshots with
// compaction, leader snapshots replacing the log) to the WAL store, with
// tiny segments, and to the bbolt-only store it replaced, and checks that
// both load the same state, also across restarts.
func TestDiskStoreMatchesLegacy(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			setWALSegmentSize(t, int64(150+seed*40))
			rng := rand.New(rand.NewPCG(seed, 99))
			newDir, oldDir := t.TempDir(), t.TempDir()
			s := openStore(t, newDir)
			old, err := openLegacyStore(oldDir)
			require.NoError(t, err)
			defer func() { _ = old.Close() }()

			term, commit, snap := uint64(1), uint64(0), uint64(0)
			terms := map[uint64]uint64{} // index -> term of the log (and the snapshot's)
			last := uint64(0)
			write := func(w *WriteBatch) {
				require.NoError(t, s.Write(w))
				require.NoError(t, old.Write(w))
			}
			for step := 0; step < 250; step++ {
				switch op := rng.IntN(20); {
				case op < 12: // append, the commit index moves
					n := uint64(1 + rng.IntN(4))
					es := ents(last+1, last+n, term)
					for _, e := range es {
						terms[e.GetIndex()] = term
					}
					last += n
					commit = max(commit, last-min(last, uint64(rng.IntN(3))))
					write(&WriteBatch{HardState: hardState(term, commit), Entries: es})
				case op < 14 && last > max(commit, snap): // a new leader overwrites the uncommitted tail
					term++
					from := max(commit, snap) + 1 + uint64(rng.IntN(int(last-max(commit, snap))))
					n := uint64(1 + rng.IntN(3))
					es := ents(from, from+n-1, term)
					for i := from; i <= last; i++ {
						delete(terms, i)
					}
					for _, e := range es {
						terms[e.GetIndex()] = term
					}
					last = from + n - 1
					write(&WriteBatch{HardState: hardState(term, commit), Entries: es})
				case op < 16 && commit > snap: // local snapshot and compaction
					at := snap + 1 + uint64(rng.IntN(int(commit-snap)))
					keep := uint64(rng.IntN(6))
					var below uint64
					if at > keep {
						below = at - keep
					}
					snap = at
					write(&WriteBatch{Snapshot: snapMeta(at, terms[at]), CompactBelow: below})
				case op < 17: // a leader's snapshot replaces the log
					term++
					at := max(last, commit) + 1 + uint64(rng.IntN(5))
					clear(terms)
					terms[at] = term
					snap, commit, last = at, at, at
					w := &WriteBatch{Snapshot: snapMeta(at, term), DropAllEntries: true, HardState: hardState(term, at),
						ConfState: &pb.ConfState{Voters: []uint64{1}}}
					if rng.IntN(2) == 0 {
						w.Entries = ents(at+1, at+2, term)
						terms[at+1], terms[at+2] = term, term
						last = at + 2
					}
					write(w)
				default: // restart both
					s, _ = reload(t, s, newDir)
					require.NoError(t, old.Close())
					old, err = openLegacyStore(oldDir)
					require.NoError(t, err)
				}
				got, err := s.Load()
				require.NoError(t, err, "step %d", step)
				want, err := old.Load()
				require.NoError(t, err)
				requireSameState(t, want, got)
			}
			require.NoError(t, s.Close())
		})
	}
}

// A leader's snapshot whose record fills its segment: the segment holding
// the reset must survive the deletion of the segments before it.
func TestDiskStoreResetFillsSegment(t *testing.T) {
	setWALSegmentSize(t, 100)
	dir := t.TempDir()
	s := openStore(t, dir)
	mustWrite(t, s, &WriteBatch{HardState: hardState(1, 2), Entries: ents(1, 5, 1)})
	mustWrite(t, s, &WriteBatch{Snapshot: snapMeta(20, 2), DropAllEntries: true, HardState: hardState(2, 20), Entries: ents(21, 23, 2)})
	s, st := reload(t, s, dir)
	require.Equal(t, span(21, 23, 2), positions(st.Entries))
	require.Equal(t, uint64(20), st.HardState.GetCommit())
	require.NoError(t, s.Close())
}

// A member restarts on a data directory in the old layout (written here
// by the bbolt-only store from the state a member left): it upgrades it,
// replays the same log, and goes on.
func TestNodeRestartsOnLegacyDataDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []cfgOpt
	}{
		{"log only", nil},
		{"snapshot and log", []cfgOpt{func(c *Config) { c.SnapshotEvery, c.KeepEntries = 20, 5 }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tn := startTestNode(t, dir, tc.opts...)
			tn.waitLeader(t)
			want := tn.proposeEach(t, "a", 50)
			tn.settle(t)
			before := tn.sm.state()
			appliedBefore := tn.AppliedIndex()
			require.NoError(t, tn.Stop())

			// The same state, in the layout the code before the WAL wrote.
			s := openStore(t, dir)
			st, err := s.Load()
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.Equal(t, tc.opts != nil, st.Snapshot != nil, "snapshot recorded: %v", st.Snapshot)
			legacyDir := t.TempDir()
			old, err := openLegacyStore(legacyDir)
			require.NoError(t, err)
			if md := st.Snapshot; md != nil {
				data, err := readSnapFile(filepath.Join(dir, snapDirName), md.GetTerm(), md.GetIndex())
				require.NoError(t, err)
				require.NoError(t, writeSnapFile(old.snapDir, md.GetTerm(), md.GetIndex(), data))
			}
			require.NoError(t, old.Write(&WriteBatch{Snapshot: st.Snapshot, HardState: st.HardState, ConfState: st.ConfState, Entries: st.Entries}))
			require.NoError(t, old.Close())

			tn2 := startTestNode(t, legacyDir, tc.opts...)
			require.NoError(t, tn2.WaitApplied(testCtx(t), appliedBefore))
			require.Equal(t, before, tn2.sm.state())
			tn2.waitLeader(t)
			tn2.proposeEach(t, "b", 3)
			tn2.sm.waitCount(t, len(want)+3)
			require.Empty(t, tn2.sm.violations())
			require.NoError(t, tn2.Stop())
			require.DirExists(t, filepath.Join(legacyDir, walDirName))
		})
	}
}

// A leader's snapshot whose WAL record is torn (the crash came after the
// new segment was created, during the record's write): the restart loads
// the snapshot with an empty log, as for a crash before the WAL step, and
// entries written after it follow the snapshot. The snapshot is behind the
// log's end, or at it with another term.
func TestDiskStoreTornResetRecord(t *testing.T) {
	for _, at := range []uint64{20, 30} {
		t.Run(fmt.Sprintf("snapshot at %d of 30", at), func(t *testing.T) {
			dir, s := openSegmentedStore(t, 30)
			segsBefore := walFiles(t, dir)
			s.crash = func(p string) error {
				if p == "after-wal" {
					return errors.New("crash") // before the old segments are deleted
				}
				return nil
			}
			require.Error(t, s.Write(&WriteBatch{Snapshot: snapMeta(at, 3), DropAllEntries: true, HardState: hardState(3, at), Entries: ents(at+1, at+2, 3)}))
			require.NoError(t, s.Close())
			segs := walFiles(t, dir)
			require.Len(t, segs, len(segsBefore)+1, "the reset starts a segment")
			require.NoError(t, os.Truncate(segs[len(segs)-1], walHeaderSize+5))

			s, st := reload(t, nil, dir)
			require.Equal(t, at, st.Snapshot.GetIndex())
			require.Empty(t, st.Entries)
			require.Equal(t, uint64(1), st.HardState.GetTerm())
			mustWrite(t, s, &WriteBatch{HardState: hardState(3, at), Entries: ents(at+1, at+1, 3)})
			s, st = reload(t, s, dir)
			require.Equal(t, span(at+1, at+1, 3), positions(st.Entries))
			require.NoError(t, s.Close())
		})
	}
}

// TestDiskStoreKeepsHardState writes a hard state (a vote) and then only
// entries, enough to fill several segments, and deletes the segment the
// hard state is in: the vote must survive the restart.
func TestDiskStoreKeepsHardState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write *WriteBatch // deletes the segment holding the hard state
	}{
		{"local snapshot with compaction", &WriteBatch{Snapshot: snapMeta(20, 5), CompactBelow: 18}},
		{"leader snapshot without a hard state", &WriteBatch{Snapshot: snapMeta(40, 6), DropAllEntries: true}},
		{"snapshot beyond the log's end", &WriteBatch{Snapshot: snapMeta(40, 5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setWALSegmentSize(t, 256)
			dir := t.TempDir()
			s := openStore(t, dir)
			vote := &pb.HardState{Term: new(uint64(5)), Vote: new(uint64(2))}
			mustWrite(t, s, &WriteBatch{HardState: vote})
			for i := uint64(1); i <= 30; i += 3 {
				mustWrite(t, s, &WriteBatch{Entries: ents(i, i+2, 5)})
			}
			first := walFiles(t, dir)[0]
			mustWrite(t, s, tc.write)
			require.NoFileExists(t, first, "the segment holding the hard state is deleted")
			s, st := reload(t, s, dir)
			require.True(t, proto.Equal(vote, st.HardState), "hard state %v, want %v", st.HardState, vote)
			require.NoError(t, s.Close())
		})
	}
}

// TestDiskStoreFinishesResetDeletion crashes a Write recording a leader's
// snapshot after its reset reached the WAL, before the segments before it
// were deleted: the restart deletes them.
func TestDiskStoreFinishesResetDeletion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write *WriteBatch
	}{
		{"snapshot behind the log's end", &WriteBatch{Snapshot: snapMeta(20, 3), DropAllEntries: true, HardState: hardState(3, 20)}},
		{"snapshot at the log's end", &WriteBatch{Snapshot: snapMeta(60, 3), DropAllEntries: true, HardState: hardState(3, 60)}},
		{"snapshot beyond the log's end", &WriteBatch{Snapshot: snapMeta(80, 3), DropAllEntries: true, HardState: hardState(3, 80)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s := openSegmentedStore(t, 60)
			s.crash = func(p string) error {
				if p == "after-wal" {
					return errors.New("crash")
				}
				return nil
			}
			require.Error(t, s.Write(tc.write))
			segs := walFiles(t, dir)
			require.Greater(t, len(segs), 1)
			s, st := reload(t, s, dir)
			require.Equal(t, segs[len(segs)-1:], walFiles(t, dir), "only the segment holding the reset is left")
			require.Equal(t, tc.write.Snapshot.GetIndex(), st.Snapshot.GetIndex())
			require.Empty(t, st.Entries)
			require.True(t, proto.Equal(tc.write.HardState, st.HardState))
			require.NoError(t, s.Close())
		})
	}
}

// TestDiskStoreUpgradeChunks upgrades a version-1 log larger than one
// record may hold (here: the chunk lowered to a few entries' bytes): the
// WAL holds it in several records, and loads the same.
func TestDiskStoreUpgradeChunks(t *testing.T) {
	// writeLegacyDir leaves 30 entries above the snapshot, some 20 bytes each.
	for _, tc := range []struct {
		chunk            int
		minRecs, maxRecs int
	}{
		{1, 30, 30},     // one entry per record
		{100, 3, 10},    // a few entries per record
		{1 << 20, 1, 1}, // all in one
	} {
		t.Run(fmt.Sprint(tc.chunk), func(t *testing.T) {
			saved := walInitChunk
			walInitChunk = tc.chunk
			t.Cleanup(func() { walInitChunk = saved })
			dir := t.TempDir()
			want := writeLegacyDir(t, dir)
			s, got := reload(t, nil, dir)
			requireSameState(t, want, got)
			require.NoError(t, s.Close())
			r, err := replayWAL(filepath.Join(dir, walDirName), false)
			require.NoError(t, err)
			require.GreaterOrEqual(t, r.records, tc.minRecs)
			require.LessOrEqual(t, r.records, tc.maxRecs)
		})
	}
}
