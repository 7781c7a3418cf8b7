package consensus

// The bbolt-only raft log store as it was before the WAL (schema version 1:
// entries and hard state in bbolt), kept verbatim for the tests: it writes
// the data directories the upgrade test opens, and it is the A side of the
// storage benchmark.

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// legacyStore is the old diskStore.
type legacyStore struct {
	db      *bolt.DB
	snapDir string
}

// legacySchemaVersion is the schema version the old store wrote.
const legacySchemaVersion uint64 = 1

func openLegacyStore(dataDir string) (*legacyStore, error) {
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
			return meta.Put(keySchemaVersion, u64Bytes(legacySchemaVersion))
		}
		if got, err := keyIndex(v); err != nil || got != legacySchemaVersion {
			return fmt.Errorf("unsupported schema version %x (want %d)", v, legacySchemaVersion)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	return &legacyStore{db: db, snapDir: snapDir}, nil
}

// Close closes bbolt.
func (s *legacyStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close raft db: %w", err)
	}
	return nil
}

// Load reads everything needed for a restart.
func (s *legacyStore) Load() (LoadedState, error) {
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
func (s *legacyStore) Write(w *WriteBatch) error {
	if w.Empty() {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if w.Snapshot != nil {
			if err := legacyPutProto(meta, keySnapshot, w.Snapshot); err != nil {
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
			if err := legacyDeleteRange(ents, 0, w.CompactBelow); err != nil {
				return err
			}
		}
		if w.HardState != nil {
			if err := legacyPutProto(meta, keyHardState, w.HardState); err != nil {
				return err
			}
		}
		if w.ConfState != nil {
			if err := legacyPutProto(meta, keyConfState, w.ConfState); err != nil {
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
					if err := legacyDeleteRange(ents, first, last+1); err != nil {
						return err
					}
				}
			}
			for _, e := range w.Entries {
				if err := legacyPutProto(ents, indexKey(e.GetIndex()), e); err != nil {
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

// deleteRange deletes entry keys in [lo, hi).
func legacyDeleteRange(b *bolt.Bucket, lo, hi uint64) error {
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

func legacyPutProto(b *bolt.Bucket, key []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshal %T: %w", m, err)
	}
	return b.Put(key, v)
}
