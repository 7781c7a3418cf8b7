package consensus

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// BenchmarkDiskStoreWrite measures one Storage.Write of 8 entries of 200
// bytes with a hard state (one raft log write of a loaded member), the log
// compacted to its last 5000 entries as it goes.
func BenchmarkDiskStoreWrite(b *testing.B) {
	s, err := openDiskStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := make([]byte, 200)
	idx := uint64(0)
	write := func() {
		w := &WriteBatch{HardState: &pb.HardState{Term: new(uint64(1)), Commit: new(idx)}}
		for j := 0; j < 8; j++ {
			idx++
			w.Entries = append(w.Entries, &pb.Entry{Index: new(idx), Term: new(uint64(1)), Data: data})
		}
		if idx%1000 == 0 && idx > 5000 {
			w.CompactBelow = idx - 5000
		}
		if err := s.Write(w); err != nil {
			b.Fatal(err)
		}
	}
	for range 1000 {
		write()
	}
	b.ResetTimer()
	for range b.N {
		write()
	}
}
