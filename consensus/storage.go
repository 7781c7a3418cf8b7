package consensus

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// diskStore is the durable half of the raft log: hard state, conf state,
// snapshot metadata and log entries in bbolt, snapshot payloads in files.
// It is written by the node's loop goroutine (and Start before the loop
// runs) and by the snapshotter, which only records snapshot metadata and
// deletes entries below it. Every write is one bbolt Update, which fsyncs
// before returning; bbolt serializes them.
type diskStore struct {
	db      *bolt.DB
	snapDir string
}

// loadedState is what Start needs to rebuild raft's in-memory storage.
type loadedState struct {
	hardState *pb.HardState        // nil if never written
	confState *pb.ConfState        // latest applied conf state, nil if never written
	snapshot  *pb.SnapshotMetadata // latest recorded snapshot, nil if none
	entries   []*pb.Entry          // contiguous, all with index > snapshot index
}

func (l loadedState) empty() bool {
	return l.hardState == nil && l.snapshot == nil && len(l.entries) == 0
}

// writeBatch is one atomic, durable bbolt transaction. Fields are applied in
// declaration order; zero fields are skipped.
type writeBatch struct {
	snapshot       *pb.SnapshotMetadata // record as the current snapshot
	dropAllEntries bool                 // a snapshot from the leader replaces the whole log
	compactBelow   uint64               // delete entries with index < compactBelow
	hardState      *pb.HardState
	confState      *pb.ConfState
	entries        []*pb.Entry // replaces any stored entries at or after entries[0].Index
}

func (w *writeBatch) empty() bool {
	return w.snapshot == nil && !w.dropAllEntries && w.compactBelow == 0 &&
		w.hardState == nil && w.confState == nil && len(w.entries) == 0
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

func (s *diskStore) close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close raft db: %w", err)
	}
	return nil
}

// load reads everything needed for a restart.
func (s *diskStore) load() (loadedState, error) {
	var st loadedState
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyHardState); v != nil {
			st.hardState = &pb.HardState{}
			if err := proto.Unmarshal(v, st.hardState); err != nil {
				return fmt.Errorf("decode hard state: %w", err)
			}
		}
		if v := meta.Get(keyConfState); v != nil {
			st.confState = &pb.ConfState{}
			if err := proto.Unmarshal(v, st.confState); err != nil {
				return fmt.Errorf("decode conf state: %w", err)
			}
		}
		if v := meta.Get(keySnapshot); v != nil {
			st.snapshot = &pb.SnapshotMetadata{}
			if err := proto.Unmarshal(v, st.snapshot); err != nil {
				return fmt.Errorf("decode snapshot metadata: %w", err)
			}
		}
		after := st.snapshot.GetIndex()
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
			st.entries = append(st.entries, e)
			want++
		}
		return nil
	})
	if err != nil {
		return loadedState{}, fmt.Errorf("load raft state: %w", err)
	}
	return st, nil
}

// write applies w in one bbolt transaction (one fsync).
func (s *diskStore) write(w *writeBatch) error {
	if w.empty() {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if w.snapshot != nil {
			if err := putProto(meta, keySnapshot, w.snapshot); err != nil {
				return err
			}
		}
		if w.dropAllEntries {
			if err := tx.DeleteBucket(bucketEntries); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bucketEntries); err != nil {
				return err
			}
		}
		ents := tx.Bucket(bucketEntries)
		if w.compactBelow > 0 {
			if err := deleteRange(ents, 0, w.compactBelow); err != nil {
				return err
			}
		}
		if w.hardState != nil {
			if err := putProto(meta, keyHardState, w.hardState); err != nil {
				return err
			}
		}
		if w.confState != nil {
			if err := putProto(meta, keyConfState, w.confState); err != nil {
				return err
			}
		}
		if len(w.entries) > 0 {
			// Raft's contract: writing entry i discards stored entries >= i.
			first := w.entries[0].GetIndex()
			if k, _ := ents.Cursor().Last(); k != nil {
				if last, err := keyIndex(k); err != nil {
					return err
				} else if last >= first {
					if err := deleteRange(ents, first, last+1); err != nil {
						return err
					}
				}
			}
			for _, e := range w.entries {
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
