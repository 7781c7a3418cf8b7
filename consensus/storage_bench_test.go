package consensus

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// BenchmarkDiskStoreWrite measures one Storage.Write of 8 entries of 200
// bytes with a hard state (one raft log write of a loaded member), with a
// local snapshot recorded and the log compacted to its last 5000 entries
// every 1000 entries, on the WAL store.
func BenchmarkDiskStoreWrite(b *testing.B) {
	setWALSegmentSize(b, walSegmentBytes)
	s, err := openDiskStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchStoreWrite(b, s.Write)
}

// BenchmarkLegacyStoreWrite is BenchmarkDiskStoreWrite on the bbolt-only
// store the WAL replaced (the A side of the comparison).
func BenchmarkLegacyStoreWrite(b *testing.B) {
	s, err := openLegacyStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchStoreWrite(b, s.Write)
}

func benchStoreWrite(b *testing.B, write func(*WriteBatch) error) {
	data := make([]byte, 200)
	idx := uint64(0)
	one := func() {
		w := &WriteBatch{HardState: &pb.HardState{Term: new(uint64(1)), Commit: new(idx)}}
		for j := 0; j < 8; j++ {
			idx++
			w.Entries = append(w.Entries, &pb.Entry{Index: new(idx), Term: new(uint64(1)), Data: data})
		}
		if err := write(w); err != nil {
			b.Fatal(err)
		}
		if idx%1000 == 0 && idx > 5000 {
			// What a SnapshotJob writes.
			snap := &WriteBatch{Snapshot: &pb.SnapshotMetadata{Index: new(idx), Term: new(uint64(1))}, CompactBelow: idx - 5000}
			if err := write(snap); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range 1000 {
		one()
	}
	b.ResetTimer()
	for range b.N {
		one()
	}
}
