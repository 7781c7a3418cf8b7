package consensus

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// crashModel is the raft state a store must load: what the bbolt-only store
// it replaced would hold after the same batches.
type crashModel struct {
	snapIdx, snapTerm uint64
	hs                *pb.HardState
	log               map[uint64]uint64 // index -> term of the entries kept
	last              uint64
}

func (m *crashModel) clone() *crashModel {
	c := *m
	c.log = map[uint64]uint64{}
	for k, v := range m.log {
		c.log[k] = v
	}
	if m.hs != nil {
		c.hs = proto.Clone(m.hs).(*pb.HardState)
	}
	return &c
}

func (m *crashModel) apply(w *WriteBatch) {
	if w.Snapshot != nil {
		m.snapIdx, m.snapTerm = w.Snapshot.GetIndex(), w.Snapshot.GetTerm()
	}
	if w.DropAllEntries || (w.Snapshot != nil && w.Snapshot.GetIndex() > m.last) {
		clear(m.log)
		m.last = m.snapIdx
	}
	if w.HardState != nil {
		m.hs = proto.Clone(w.HardState).(*pb.HardState)
	}
	if len(w.Entries) > 0 {
		for i := w.Entries[0].GetIndex(); i <= m.last; i++ {
			delete(m.log, i)
		}
		for _, e := range w.Entries {
			m.log[e.GetIndex()] = e.GetTerm()
		}
		m.last = w.Entries[len(w.Entries)-1].GetIndex()
	}
}

func (m *crashModel) above() [][2]uint64 {
	out := [][2]uint64{}
	for i := m.snapIdx + 1; i <= m.last; i++ {
		out = append(out, [2]uint64{i, m.log[i]})
	}
	return out
}

// TestDiskStoreRandomCrashes writes random raft-like batches (appends,
// conflicting appends of a new leader, local snapshots with compaction,
// leader snapshots behind, at or beyond the log's end) with tiny segments,
// crashes some of them after the bbolt step, after the WAL step or with a
// torn WAL tail (its end unwritten, or in a preallocated segment its
// header), restarts, and checks the loaded log against the model:
// a Write that returned is never lost, one that crashed loses at most its
// own WAL part (and then its leader snapshot's divergent suffix).
func TestDiskStoreRandomCrashes(t *testing.T) {
	seeds := uint64(12)
	if testing.Short() {
		seeds = 6
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			setWALSegmentSize(t, int64(120+seed*17%200))
			rng := rand.New(rand.NewPCG(seed, 7))
			dir := t.TempDir()
			s := openStore(t, dir)
			defer func() { _ = s.Close() }()
			m := &crashModel{log: map[uint64]uint64{}}
			term, commit := uint64(1), uint64(0)
			for step := 0; step < 150; step++ {
				var w *WriteBatch
				switch op := rng.IntN(20); {
				case op < 11:
					n := uint64(1 + rng.IntN(4))
					commit = max(commit, m.last+n-min(m.last+n, uint64(rng.IntN(3))))
					w = &WriteBatch{HardState: hardState(term, commit), Entries: ents(m.last+1, m.last+n, term)}
				case op < 13 && m.last > max(commit, m.snapIdx):
					term++
					lo := max(commit, m.snapIdx)
					from := lo + 1 + uint64(rng.IntN(int(m.last-lo)))
					w = &WriteBatch{HardState: hardState(term, commit), Entries: ents(from, from+uint64(rng.IntN(3)), term)}
				case op < 15 && commit > m.snapIdx:
					at := m.snapIdx + 1 + uint64(rng.IntN(int(commit-m.snapIdx)))
					var below uint64
					if k := uint64(rng.IntN(6)); at > k {
						below = at - k
					}
					w = &WriteBatch{Snapshot: snapMeta(at, m.log[at]), CompactBelow: below}
				case op < 17:
					// A leader's snapshot above the commit index, ahead of or
					// behind the log end (then its term differs from the log's).
					term++
					at := commit + 1 + uint64(rng.IntN(int(m.last-commit)+5))
					commit = at
					w = &WriteBatch{Snapshot: snapMeta(at, term), DropAllEntries: true, HardState: hardState(term, at),
						ConfState: &pb.ConfState{Voters: []uint64{1}}}
					if rng.IntN(2) == 0 {
						w.Entries = ents(at+1, at+2, term)
					}
				default:
					s, _ = reload(t, s, dir)
					continue
				}
				post := m.clone()
				post.apply(w)
				mode := rng.IntN(8) // 0 after-bbolt, 1 after-wal, 2 torn, else no crash
				if mode > 2 {
					require.NoError(t, s.Write(w), "step %d", step)
					m = post
					st, err := s.Load()
					require.NoError(t, err)
					require.Equal(t, m.above(), positions(st.Entries), "step %d", step)
					continue
				}
				segsBefore := walFiles(t, dir)
				lastBefore := segsBefore[len(segsBefore)-1]
				sizeBefore := s.wal.size // where the last segment's records end
				at := "after-wal"
				if mode == 0 {
					at = "after-bbolt"
				}
				s.crash = func(p string) error {
					if p == at {
						return errors.New("crash")
					}
					return nil
				}
				require.Error(t, s.Write(w))
				s.crash = nil
				require.NoError(t, s.Close())
				torn := false
				if mode == 2 {
					segs := walFiles(t, dir)
					last := segs[len(segs)-1]
					if len(segs) > len(segsBefore) && recordsEnd(t, last) == walHeaderSize && len(segs) > 1 {
						// a rotation after the record: the crash came before it
						if prev := segs[len(segs)-2]; prev != lastBefore || recordsEnd(t, prev) > sizeBefore {
							require.NoError(t, os.Remove(last))
							last = prev
						}
					}
					start := int64(walHeaderSize)
					if last == lastBefore {
						start = sizeBefore
					}
					if end := recordsEnd(t, last); end > start {
						if fileSize(t, last) > end && end-start > recHeaderSize && rng.IntN(2) == 0 {
							// Over a preallocated segment's zeros: the
							// record's first bytes (its header's sector)
							// never reached the disk, its later ones did.
							lost := recHeaderSize + recAlign*rng.Int64N((end-start-recHeaderSize)/recAlign+1)
							zeroAt(t, last, start, int(min(lost, end-start)))
						} else {
							// The record's bytes from cut on never reached
							// the disk: past the end of the file, or zeros
							// in a preallocated segment.
							cut := start + rng.Int64N(end-start)
							tearAt(t, last, cut, end)
						}
						torn = true
					}
				}
				var st LoadedState
				s, st = reload(t, nil, dir)
				got := positions(st.Entries)
				switch {
				case mode == 1 || (mode == 2 && !torn):
					require.Equal(t, post.snapIdx, st.Snapshot.GetIndex(), "step %d mode %d", step, mode)
					require.Equal(t, post.above(), got, "step %d mode %d", step, mode)
					require.True(t, proto.Equal(post.hs, st.HardState), "step %d", step)
					m = post
				default:
					// The WAL part is lost; the bbolt part may be there.
					require.Equal(t, post.snapIdx, st.Snapshot.GetIndex(), "step %d mode %d", step, mode)
					want := m.clone()
					want.snapIdx, want.snapTerm = post.snapIdx, post.snapTerm
					if want.last < want.snapIdx || m.log[want.snapIdx] != want.snapTerm && want.snapIdx > m.snapIdx {
						clear(want.log)
						want.last = want.snapIdx
						if want.hs != nil && want.hs.GetCommit() > want.snapIdx {
							want.hs.Commit = new(want.snapIdx)
						}
					}
					require.Equal(t, want.above(), got, "step %d mode %d torn %v write %v", step, mode, torn, w)
					require.Equal(t, want.hs.GetTerm(), st.HardState.GetTerm(), "step %d", step)
					require.Equal(t, want.hs.GetCommit(), st.HardState.GetCommit(), "step %d", step)
					m = want
					term = max(term, m.hs.GetTerm(), m.snapTerm)
				}
				commit = max(m.hs.GetCommit(), m.snapIdx)
			}
		})
	}
}

// recordsEnd returns where the WAL segment at path ends without the zeros
// after its last record (and its last record's trailing zero bytes).
func recordsEnd(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return walHeaderSize + int64(nonZeroLen(data[walHeaderSize:]))
}

// tearAt makes the bytes [cut, end) of the segment at path unwritten, as a
// crash during their write may leave them: zeros where the segment was
// preallocated past end, cut off otherwise.
func tearAt(t *testing.T, path string, cut, end int64) {
	t.Helper()
	if fileSize(t, path) == end {
		require.NoError(t, os.Truncate(path, cut))
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, end-cut), cut)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
