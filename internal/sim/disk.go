package sim

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/consensus"
)

// disk is a member's simulated disk: consensus.Storage for the real
// consensus.Core. Like the bbolt store, a Write is synced before it returns
// (a crash after it loses none of it) and a snapshot payload is synced
// before the Core records it. It survives the member's crashes; only what
// was synced is on it. A torn write (the fault armed with tear) is the
// crash in the middle of the next Write or SaveSnapshot: of a Write
// carrying entries a prefix of the entries reaches the disk and the rest of
// the batch (hard state included) does not; any other Write, and a
// snapshot payload, is lost whole (bbolt's transaction, the payload's
// temporary file). The call fails with errCrashed, so the Core stops before
// anything else of that Ready (sending, applying) or snapshot happens.
type disk struct {
	w    *world
	id   uint64
	tear bool // crash in the middle of the next Write or SaveSnapshot

	hardState *pb.HardState
	confState *pb.ConfState
	snapshot  *pb.SnapshotMetadata
	entries   []*pb.Entry // ascending, contiguous
	payloads  map[[2]uint64][]byte
}

// errCrashed is what a Write returns when the member crashed during it.
var errCrashed = errors.New("sim: member crashed during a disk write")

var _ consensus.Storage = (*disk)(nil)

func newDisk(w *world, id uint64) *disk {
	return &disk{w: w, id: id, payloads: map[[2]uint64][]byte{}}
}

func (d *disk) Load() (consensus.LoadedState, error) {
	st := consensus.LoadedState{}
	if d.hardState != nil {
		st.HardState = proto.Clone(d.hardState).(*pb.HardState)
	}
	if d.confState != nil {
		st.ConfState = proto.Clone(d.confState).(*pb.ConfState)
	}
	if d.snapshot != nil {
		st.Snapshot = proto.Clone(d.snapshot).(*pb.SnapshotMetadata)
	}
	want := d.snapshot.GetIndex() + 1
	for _, e := range d.entries {
		if e.GetIndex() < want {
			continue
		}
		if e.GetIndex() != want {
			return consensus.LoadedState{}, fmt.Errorf("sim disk: expected entry %d, found %d", want, e.GetIndex())
		}
		st.Entries = append(st.Entries, e)
		want++
	}
	return st, nil
}

func (d *disk) Write(w *consensus.WriteBatch) error {
	if d.tear && !w.Empty() {
		d.tear = false
		if len(w.Entries) == 0 {
			d.w.tracef("member %d crashed during a disk write (lost)", d.id)
			return errCrashed
		}
		keep := d.w.rng.IntN(len(w.Entries))
		d.putEntries(w.Entries[:keep])
		d.w.tracef("member %d crashed writing %d entries (%d reached the disk)", d.id, len(w.Entries), keep)
		return errCrashed
	}
	if w.Snapshot != nil {
		d.snapshot = proto.Clone(w.Snapshot).(*pb.SnapshotMetadata)
	}
	if w.DropAllEntries {
		d.entries = nil
	}
	if w.CompactBelow > 0 {
		d.entries = slices.DeleteFunc(d.entries, func(e *pb.Entry) bool { return e.GetIndex() < w.CompactBelow })
	}
	if w.HardState != nil {
		d.hardState = proto.Clone(w.HardState).(*pb.HardState)
	}
	if w.ConfState != nil {
		d.confState = proto.Clone(w.ConfState).(*pb.ConfState)
	}
	d.putEntries(w.Entries)
	return nil
}

// crashDuring is a crash while the Core's write of b runs (a
// consensus.ReadyWrite the member started, not yet complete): as a torn
// write, a prefix of its entries may have reached the disk, and nothing
// else (hard state, snapshot record); or it is lost whole.
func (d *disk) crashDuring(b *consensus.WriteBatch) {
	if len(b.Entries) == 0 || b.Snapshot != nil || d.w.chance(0.5) {
		d.w.tracef("member %d crashed during a disk write (lost)", d.id)
		return
	}
	keep := d.w.rng.IntN(len(b.Entries))
	d.putEntries(b.Entries[:keep])
	d.w.tracef("member %d crashed writing %d entries (%d reached the disk)", d.id, len(b.Entries), keep)
}

// putEntries replaces the stored entries at or after ents[0] with ents.
func (d *disk) putEntries(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	d.entries = slices.DeleteFunc(d.entries, func(e *pb.Entry) bool { return e.GetIndex() >= first })
	d.entries = append(d.entries, ents...)
}

// holds reports whether entry (index, term) is on the disk: in the log, or
// covered by the recorded snapshot.
func (d *disk) holds(index, term uint64) bool {
	if index <= d.snapshot.GetIndex() {
		return true
	}
	i, ok := slices.BinarySearchFunc(d.entries, index, func(e *pb.Entry, idx uint64) int { return cmp.Compare(e.GetIndex(), idx) })
	return ok && d.entries[i].GetTerm() == term
}

func (d *disk) SaveSnapshot(term, index uint64, data []byte) error {
	if d.tear {
		d.tear = false
		d.w.tracef("member %d crashed saving the snapshot at index %d (lost)", d.id, index)
		return errCrashed
	}
	d.payloads[[2]uint64{term, index}] = data
	return nil
}

// SaveSnapshotFrom buffers the payload, then saves it as SaveSnapshot (a
// torn save loses it).
func (d *disk) SaveSnapshotFrom(term, index uint64, write func(io.Writer) error) (int64, error) {
	data, err := consensus.Collect(write)
	if err != nil {
		return 0, err
	}
	return int64(len(data)), d.SaveSnapshot(term, index, data)
}

func (d *disk) LoadSnapshot(term, index uint64) ([]byte, error) {
	data, ok := d.payloads[[2]uint64{term, index}]
	if !ok {
		return nil, fmt.Errorf("sim disk: no snapshot payload at term %d index %d", term, index)
	}
	return data, nil
}

func (d *disk) DeleteSnapshot(term, index uint64) error {
	delete(d.payloads, [2]uint64{term, index})
	return nil
}

// sortedPayloads returns the payload keys, oldest (lowest index) first.
func (d *disk) sortedPayloads() [][2]uint64 {
	keys := make([][2]uint64, 0, len(d.payloads))
	for k := range d.payloads {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uint64) int {
		if a[1] != b[1] {
			return cmp.Compare(a[1], b[1])
		}
		return cmp.Compare(a[0], b[0])
	})
	return keys
}

func (d *disk) PruneSnapshots() error {
	keys := d.sortedPayloads()
	for len(keys) > 2 {
		delete(d.payloads, keys[0])
		keys = keys[1:]
	}
	return nil
}

func (d *disk) CleanSnapshots(recordedIndex uint64) ([]string, error) {
	var removed []string
	for _, k := range d.sortedPayloads() {
		if k[1] > recordedIndex {
			delete(d.payloads, k)
			removed = append(removed, fmt.Sprintf("%d-%d", k[0], k[1]))
		}
	}
	return removed, nil
}

func (d *disk) Close() error { return nil }
