package consensus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// diskStore is the durable half of the raft log: hard state, conf state,
// snapshot metadata and log entries in bbolt, snapshot payloads in files.
// It implements Storage. It is written by the node's loop goroutine (and
// Start before the loop runs) and by the snapshotter, which only records
// snapshot metadata and deletes entries below it. Every write is one bbolt Update, which fsyncs
// before returning; bbolt serializes them.
type diskStore struct {
	db      *bolt.DB
	snapDir string
}

// Storage is the durable half of a member's raft state: hard state, conf
// state, snapshot metadata and log entries (Write, Load), and snapshot
// payloads (the *Snapshot* methods). The production implementation is
// bbolt plus snapshot files (diskStore, opened by Start); the deterministic
// simulator (internal/sim) implements it with a simulated disk.
//
// Contract, on which the Core's durability invariant rests:
//   - Write applies the whole batch atomically and returns only once it is
//     durable (a crash after Write returned loses none of it; a crash during
//     Write may lose it, but never leaves a later field applied without an
//     earlier one except as raft tolerates).
//   - SaveSnapshot returns only once the payload is durable, and a crash
//     never leaves a recorded snapshot (WriteBatch.Snapshot) without its
//     payload, because the Core records a snapshot only after saving it.
//   - Write, SaveSnapshot, DeleteSnapshot and PruneSnapshots may be called
//     from the Core's goroutine and from the goroutine running a
//     SnapshotJob at the same time; implementations serialize them.
type Storage interface {
	// Load reads everything needed for a restart.
	Load() (LoadedState, error)
	// Write applies w in one atomic, durable step.
	Write(w *WriteBatch) error
	// SaveSnapshot durably stores the payload of the snapshot at (term, index).
	SaveSnapshot(term, index uint64, data []byte) error
	// LoadSnapshot reads and verifies the payload of the snapshot at (term, index).
	LoadSnapshot(term, index uint64) ([]byte, error)
	// DeleteSnapshot removes the payload at (term, index), which was never recorded.
	DeleteSnapshot(term, index uint64) error
	// PruneSnapshots keeps only the newest two snapshot payloads.
	PruneSnapshots() error
	// CleanSnapshots runs once at start: it removes payloads newer than the
	// recorded snapshot (saved before a crash that came before Write recorded
	// them) and leftovers of interrupted saves, and names what it removed.
	CleanSnapshots(recordedIndex uint64) ([]string, error)
	// Close releases the storage.
	Close() error
}

// LoadedState is what a restart needs to rebuild raft's in-memory storage.
type LoadedState struct {
	HardState *pb.HardState        // nil if never written
	ConfState *pb.ConfState        // latest applied conf state, nil if never written
	Snapshot  *pb.SnapshotMetadata // latest recorded snapshot, nil if none
	Entries   []*pb.Entry          // contiguous, all with index > snapshot index
}

func (l LoadedState) empty() bool {
	return l.HardState == nil && l.Snapshot == nil && len(l.Entries) == 0
}

// WriteBatch is one atomic, durable write (one bbolt transaction). Fields
// are applied in declaration order; zero fields are skipped.
type WriteBatch struct {
	Snapshot       *pb.SnapshotMetadata // record as the current snapshot
	DropAllEntries bool                 // a snapshot from the leader replaces the whole log
	CompactBelow   uint64               // delete entries with index < CompactBelow
	HardState      *pb.HardState
	ConfState      *pb.ConfState
	Entries        []*pb.Entry // replaces any stored entries at or after Entries[0].Index
}

// Empty reports whether w writes nothing.
func (w *WriteBatch) Empty() bool {
	return w.Snapshot == nil && !w.DropAllEntries && w.CompactBelow == 0 &&
		w.HardState == nil && w.ConfState == nil && len(w.Entries) == 0
}

func openDiskStore(dataDir string) (*diskStore, error) {
	snapDir := filepath.Join(dataDir, snapDirName)
	if err := os.MkdirAll(snapDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dataDir, dbFileName)
	// NB: NoSync stays false: durability of every Update is the invariant
	// this package is built on.
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: 2 * time.Second,
		// As etcd does: the freelist is rebuilt on open instead of being
		// written (and synced) on every commit, which saves page writes on
		// the path every acknowledged write takes. Durability is unchanged:
		// every commit still syncs its data and meta pages.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		// Map the first 64 MiB up front so a growing log does not remap
		// the file (remaps block commits) while it is small.
		InitialMmapSize: 64 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketEntries); err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		v := meta.Get(keySchemaVersion)
		if v == nil {
			return meta.Put(keySchemaVersion, u64Bytes(schemaVersion))
		}
		if got, err := keyIndex(v); err != nil || got != schemaVersion {
			return fmt.Errorf("unsupported schema version %x (want %d)", v, schemaVersion)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	return &diskStore{db: db, snapDir: snapDir}, nil
}

var _ Storage = (*diskStore)(nil)

// Close closes bbolt.
func (s *diskStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close raft db: %w", err)
	}
	return nil
}

// Load reads everything needed for a restart.
func (s *diskStore) Load() (LoadedState, error) {
	var st LoadedState
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyHardState); v != nil {
			st.HardState = &pb.HardState{}
			if err := proto.Unmarshal(v, st.HardState); err != nil {
				return fmt.Errorf("decode hard state: %w", err)
			}
		}
		if v := meta.Get(keyConfState); v != nil {
			st.ConfState = &pb.ConfState{}
			if err := proto.Unmarshal(v, st.ConfState); err != nil {
				return fmt.Errorf("decode conf state: %w", err)
			}
		}
		if v := meta.Get(keySnapshot); v != nil {
			st.Snapshot = &pb.SnapshotMetadata{}
			if err := proto.Unmarshal(v, st.Snapshot); err != nil {
				return fmt.Errorf("decode snapshot metadata: %w", err)
			}
		}
		after := st.Snapshot.GetIndex()
		c := tx.Bucket(bucketEntries).Cursor()
		want := after + 1
		for k, v := c.Seek(indexKey(want)); k != nil; k, v = c.Next() {
			i, err := keyIndex(k)
			if err != nil {
				return err
			}
			e := &pb.Entry{}
			if err := proto.Unmarshal(v, e); err != nil {
				return fmt.Errorf("%w: entry %d: %w", ErrCorruptLog, i, err)
			}
			if i != want || e.GetIndex() != i {
				return fmt.Errorf("%w: expected entry %d, found key %d holding entry %d", ErrCorruptLog, want, i, e.GetIndex())
			}
			st.Entries = append(st.Entries, e)
			want++
		}
		return nil
	})
	if err != nil {
		return LoadedState{}, fmt.Errorf("load raft state: %w", err)
	}
	return st, nil
}

// Write applies w in one bbolt transaction (one fsync).
func (s *diskStore) Write(w *WriteBatch) error {
	if w.Empty() {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if w.Snapshot != nil {
			if err := putProto(meta, keySnapshot, w.Snapshot); err != nil {
				return err
			}
		}
		if w.DropAllEntries {
			if err := tx.DeleteBucket(bucketEntries); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bucketEntries); err != nil {
				return err
			}
		}
		ents := tx.Bucket(bucketEntries)
		if w.CompactBelow > 0 {
			if err := deleteRange(ents, 0, w.CompactBelow); err != nil {
				return err
			}
		}
		if w.HardState != nil {
			if err := putProto(meta, keyHardState, w.HardState); err != nil {
				return err
			}
		}
		if w.ConfState != nil {
			if err := putProto(meta, keyConfState, w.ConfState); err != nil {
				return err
			}
		}
		if len(w.Entries) > 0 {
			// Raft's contract: writing entry i discards stored entries >= i.
			first := w.Entries[0].GetIndex()
			if k, _ := ents.Cursor().Last(); k != nil {
				if last, err := keyIndex(k); err != nil {
					return err
				} else if last >= first {
					if err := deleteRange(ents, first, last+1); err != nil {
						return err
					}
				}
			}
			for _, e := range w.Entries {
				if err := putProto(ents, indexKey(e.GetIndex()), e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("persist raft state: %w", err)
	}
	return nil
}

// SaveSnapshot writes the snapshot file (fsync'd, file and directory).
func (s *diskStore) SaveSnapshot(term, index uint64, data []byte) error {
	return writeSnapFile(s.snapDir, term, index, data)
}

// LoadSnapshot reads and verifies a snapshot file.
func (s *diskStore) LoadSnapshot(term, index uint64) ([]byte, error) {
	return readSnapFile(s.snapDir, term, index)
}

// DeleteSnapshot removes a snapshot file.
func (s *diskStore) DeleteSnapshot(term, index uint64) error {
	err := os.Remove(filepath.Join(s.snapDir, snapFileName(term, index)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove snapshot file: %w", err)
	}
	return nil
}

// PruneSnapshots keeps the newest snapFilesKept snapshot files.
func (s *diskStore) PruneSnapshots() error { return pruneSnapFiles(s.snapDir) }

// CleanSnapshots removes stray snapshot files (see cleanSnapDir).
func (s *diskStore) CleanSnapshots(recordedIndex uint64) ([]string, error) {
	return cleanSnapDir(s.snapDir, recordedIndex)
}

// entryCount returns how many log entries bbolt holds.
func (s *diskStore) entryCount() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketEntries).Stats().KeyN
		return nil
	})
	return n, err
}

// deleteRange deletes entry keys in [lo, hi).
func deleteRange(b *bolt.Bucket, lo, hi uint64) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(indexKey(lo)); k != nil; k, _ = c.Next() {
		i, err := keyIndex(k)
		if err != nil {
			return err
		}
		if i >= hi {
			break
		}
		keys = append(keys, k)
	}
	// NB: deleting while iterating with a bbolt cursor skips keys, so the
	// keys are collected first. bbolt keys are only valid for the life of the
	// transaction, which is still open.
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func putProto(b *bolt.Bucket, key []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshal %T: %w", m, err)
	}
	return b.Put(key, v)
}
