package consensus

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkFdatasyncConcurrent measures what the disk gives writers that
// each write 1 KiB to their own part of one preallocated file and
// fdatasync it, one to four at once: syncs/s, and the mean latency of one
// write-and-sync (ns/op is per sync over all writers). On the benchmark
// machine two writers got about twice the syncs of one at the same
// latency (README, "Where the time goes now"): the disk takes concurrent
// flushes, while the WAL issues one at a time.
func BenchmarkFdatasyncConcurrent(b *testing.B) {
	for _, writers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "sync.dat"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			const region = 16 << 20
			zeros := make([]byte, 1<<20)
			for off := int64(0); off < int64(writers)*region; off += int64(len(zeros)) {
				if _, err := f.WriteAt(zeros, off); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 1024)
			var next atomic.Int64
			var lat atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					base, off := int64(w)*region, int64(0)
					for next.Add(1) <= int64(b.N) {
						t := time.Now()
						if _, err := f.WriteAt(buf, base+off); err != nil {
							b.Error(err)
							return
						}
						if err := fdatasync(f); err != nil {
							b.Error(err)
							return
						}
						lat.Add(int64(time.Since(t)))
						off = (off + 4096) % region
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "syncs/s")
			b.ReportMetric(float64(lat.Load())/float64(b.N)/1e3, "µs/sync")
		})
	}
}
