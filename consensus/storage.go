package consensus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// diskStore is the durable half of the raft log (it implements Storage):
// entries and hard states in the write-ahead log (wal.go), snapshot
// metadata and the conf state in bbolt, snapshot payloads in files. It is
// written by the node's loop goroutine (and Start before the loop runs), by
// the goroutine Core.HandleReady runs ReadyWrite.Write on, and by the snapshotter; mu
// serializes them, except step 3's segment removals, which run after mu
// is released, one Write's at a time and in order (delMu).
//
// A Write takes up to three steps, in this order, each durable before the
// next:
//
//  1. bbolt (one Update, if the batch has Snapshot or ConfState): the
//     snapshot metadata and the conf state.
//  2. WAL (one record, one write, one fdatasync, if the batch has
//     DropAllEntries, HardState or Entries): a reset of the log to the
//     snapshot's position for DropAllEntries, the hard state, the entries
//     (the record truncates the log first if they overwrite entries).
//  3. Segment deletion (DropAllEntries: every segment before the reset;
//     CompactBelow: segments holding only entries below it). The last
//     hard state is first written again if its segment is deleted. A
//     crash before the deletion after a reset is finished is completed
//     by the next open (reconcile).
//
// Invariants, and why a crash between any two steps leaves a state raft
// accepts:
//   - The log on disk is the snapshot (bbolt) followed by the WAL's
//     entries above its index. Load returns WAL entries above the snapshot
//     index only if the WAL agrees with the snapshot: it holds the entry
//     at the snapshot's index with the snapshot's term, or it was reset to
//     exactly that position. A log ending exactly at the snapshot's index
//     with another term (or with a term not on disk) holds nothing above
//     it but disagrees with it all the same: it is divergent too.
//     Otherwise (a leader's snapshot recorded in step 1 by a Write that
//     crashed before its reset reached the WAL: raft installs a leader's
//     snapshot only when its log does not hold that entry) the entries
//     above are a divergent suffix and are dropped, the hard state's
//     commit index is lowered to the snapshot index, and the state is
//     the snapshot with an empty log: the Write's own hard state
//     and entries are lost, which is allowed because it never returned.
//     Open (reconcile) then appends the reset that Write did not write, so
//     entries appended later continue after the snapshot, not after the
//     stale suffix.
//   - A local snapshot (SnapshotJob) is at an applied, hence durable and
//     committed, index, so the WAL holds its entry: WAL segments are
//     deleted (step 3) only after bbolt recorded the snapshot, only below
//     CompactBelow <= the snapshot index, and never the segment holding
//     the snapshot's entry.
//   - The conf state in bbolt is informational (Start takes the conf state
//     from the snapshot and replays conf changes from the log); writing it
//     before the hard state of the same batch is therefore harmless.
//   - A hard state is only in the WAL, in the same record as the entries
//     it was written with (or copied unchanged into a later record before
//     the segment holding it is deleted), so its commit index never
//     exceeds the durable log except in the case above, where Load lowers
//     it, and a vote is never lost to compaction.
//   - Open syncs bbolt before reading it, and the WAL's last segment and
//     directory after replaying them: what a crashed process left only in
//     the page cache is durable before raft or reconcile relies on it.
//   - Load returns an error (ErrCorruptLog) for a WAL that cannot be read
//     completely, except a torn tail of the last segment, cut on open.
type diskStore struct {
	mu sync.Mutex
	// delMu serializes the WAL segment removals of step 3, which run
	// without mu (their directory fsyncs need not hold up other Writes),
	// and keeps replays from reading a segment being removed. It is taken
	// with mu held, never the other way round (lock order mu, delMu), so
	// removals run in the order their Writes detached the segments.
	delMu   sync.Mutex
	db      *bolt.DB
	wal     *wal
	walDir  string
	snapDir string
	// crash, set by tests, stands for a crash at the named point of Write
	// or of the upgrade in openDiskStore when it returns an error.
	crash func(point string) error
	// opened is the replay open did, handed to the first Load so that a
	// start reads the WAL once; nil once used or stale (reconcile wrote).
	opened *walReplay
}

// walSegmentSize is the size at which the WAL starts a new segment; tests
// lower it.
var walSegmentSize int64 = walSegmentBytes

// Storage is the durable half of a member's raft state: hard state, conf
// state, snapshot metadata and log entries (Write, Load), and snapshot
// payloads (the *Snapshot* methods). The production implementation is a
// WAL, bbolt and snapshot files (diskStore, opened by Start); the deterministic
// simulator (internal/sim) implements it with a simulated disk.
//
// Contract, on which the Core's durability invariant rests:
//   - Write applies the whole batch atomically and returns only once it is
//     durable (a crash after Write returned loses none of it; a crash during
//     Write may lose it, but never leaves a later field applied without an
//     earlier one except as raft tolerates).
//   - SaveSnapshot(From) returns only once the payload is durable, and a crash
//     never leaves a recorded snapshot (WriteBatch.Snapshot) without its
//     payload, because the Core records a snapshot only after saving it.
//   - Write, SaveSnapshot(From), DeleteSnapshot and PruneSnapshots may be called
//     from the Core's goroutine and from the goroutine running a
//     SnapshotJob at the same time; implementations serialize them.
type Storage interface {
	// Load reads everything needed for a restart.
	Load() (LoadedState, error)
	// Write applies w in one atomic, durable step.
	Write(w *WriteBatch) error
	// SaveSnapshot durably stores the payload of the snapshot at (term, index).
	SaveSnapshot(term, index uint64, data []byte) error
	// SaveSnapshotFrom is SaveSnapshot of what write writes, called exactly
	// once, also when the storage fails before it could take a byte (write
	// then gets a writer that fails), so that write can release what it
	// holds (an implementation may stream it to disk rather than hold it in
	// memory), and returns the payload's length. If write or the storage
	// fails, its error is returned and no payload is left at (term, index).
	SaveSnapshotFrom(term, index uint64, write func(io.Writer) error) (int64, error)
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

// WriteBatch is one durable write (for diskStore: a bbolt Update for the
// snapshot metadata and conf state, then one WAL record; see diskStore for
// what a crash between them leaves). Fields are applied in declaration
// order, as far as the Storage contract requires; zero fields are skipped.
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
	return openDiskStoreHook(dataDir, nil)
}

// openDiskStoreHook opens the store with the crash hook set from the start
// (the upgrade runs in open).
func openDiskStoreHook(dataDir string, crash func(string) error) (*diskStore, error) {
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
		// written (and synced) on every commit. Durability is unchanged:
		// every commit still syncs its data and meta pages.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// A commit a crashed process left only in the page cache (written,
	// not yet fdatasync'd) reads like a durable one: make it durable
	// before upgrade and reconcile act on it (reconcile would otherwise
	// make a WAL reset durable that follows a snapshot an OS crash could
	// still take away).
	if err := openSync.db(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sync %s: %w", path, err)
	}
	s := &diskStore{db: db, walDir: filepath.Join(dataDir, walDirName), snapDir: snapDir, crash: crash}
	if err := s.upgrade(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	var r *walReplay
	if s.wal, r, err = openWAL(s.walDir, walSegmentSize); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	if err := s.reconcile(r); err != nil {
		_ = s.wal.close()
		_ = db.Close()
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	return s, nil
}

// upgrade brings raft.db to schemaVersion. A new file and a version-1 file
// (log entries and hard state in bbolt) get a WAL holding the hard state
// and the entries above the snapshot, created complete (initWALDir) before
// bbolt deletes them and records version 2, each step durable.
//
// Below version 2, raft.db is authoritative and any wal/ beside it is
// stale: a crash after the WAL was built but before bbolt changed leaves a
// version-1 file beside a complete WAL, and an older binary may have run on
// that file since (a rollback), acknowledging entries and votes the WAL does
// not hold. The WAL is therefore always removed and rebuilt from raft.db.
// A new file (version 0) beside a wal/ is accepted only if that WAL holds
// nothing (what an interrupted first open leaves); a WAL holding a log
// beside a new raft.db (raft.db lost or replaced) is an error, never wiped.
func (s *diskStore) upgrade() error {
	var version uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySchemaVersion); v != nil {
			if version, err = keyIndex(v); err != nil {
				return fmt.Errorf("schema version %x: %w", v, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch version {
	case schemaVersion:
		return nil
	case 0:
		if err := requireEmptyWAL(s.walDir); err != nil {
			return err
		}
	case 1:
	default:
		return fmt.Errorf("unsupported schema version %d (want %d)", version, schemaVersion)
	}
	if err := os.RemoveAll(s.walDir); err != nil {
		return fmt.Errorf("remove stale wal dir: %w", err)
	}
	base, first, err := s.legacyLog()
	if err != nil {
		return err
	}
	if err := initWALDir(s.walDir, base, first, min(walSegmentSize, walFirstSegmentBytes)); err != nil {
		return fmt.Errorf("move raft log into %s: %w", s.walDir, err)
	}
	if s.crash != nil {
		if err := s.crash("upgrade-wal-written"); err != nil {
			return err
		}
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketEntries) != nil {
			if err := tx.DeleteBucket(bucketEntries); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(keyHardState); err != nil {
			return err
		}
		return meta.Put(keySchemaVersion, u64Bytes(schemaVersion))
	})
}

// requireEmptyWAL returns nil if dir does not exist or holds no log (no
// file, or segments holding no entry and no hard state after index 0),
// and an error otherwise.
func requireEmptyWAL(dir string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(des) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read wal dir: %w", err)
	}
	r, err := replayWAL(dir, false)
	if err != nil {
		return fmt.Errorf("%s exists beside a new %s and cannot be read: %w", dir, dbFileName, err)
	}
	if len(r.entries) > 0 || r.hardState != nil || r.base != (walPos{}) {
		return fmt.Errorf("%w: %s holds a raft log (last entry %d) but %s is new: refusing to discard it",
			ErrCorruptLog, dir, r.last().index, dbFileName)
	}
	return nil
}

// legacyLog reads a version-1 raft.db's log: the snapshot position the log
// continues after, and the hard state and the entries above the snapshot
// as one WAL batch (nil if there are none).
func (s *diskStore) legacyLog() (walPos, *walBatch, error) {
	var base walPos
	var b walBatch
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyHardState); v != nil {
			b.hardState = &pb.HardState{}
			if err := proto.Unmarshal(v, b.hardState); err != nil {
				return fmt.Errorf("decode hard state: %w", err)
			}
		}
		if v := meta.Get(keySnapshot); v != nil {
			md := &pb.SnapshotMetadata{}
			if err := proto.Unmarshal(v, md); err != nil {
				return fmt.Errorf("decode snapshot metadata: %w", err)
			}
			base = walPos{md.GetIndex(), md.GetTerm()}
		}
		ents := tx.Bucket(bucketEntries)
		if ents == nil {
			return nil
		}
		c := ents.Cursor()
		want := base.index + 1
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
			b.entries = append(b.entries, e)
			want++
		}
		return nil
	})
	if err != nil {
		return walPos{}, nil, fmt.Errorf("read version-1 raft log: %w", err)
	}
	if b.hardState == nil && len(b.entries) == 0 {
		return base, nil, nil
	}
	return base, &b, nil
}

var _ Storage = (*diskStore)(nil)

// Close closes the WAL and bbolt.
func (s *diskStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delMu.Lock() // no removal in flight
	defer s.delMu.Unlock()
	werr := s.wal.close()
	if err := s.db.Close(); err != nil {
		return errors.Join(werr, fmt.Errorf("close raft db: %w", err))
	}
	return werr
}

// Load reads everything needed for a restart (see diskStore for how the
// WAL's entries are matched with the snapshot).
func (s *diskStore) Load() (LoadedState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st LoadedState
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
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
		return nil
	})
	if err != nil {
		return LoadedState{}, fmt.Errorf("load raft state: %w", err)
	}
	r := s.opened
	s.opened = nil
	if r == nil {
		s.delMu.Lock() // no removal in flight
		r, err = replayWAL(s.walDir, false)
		s.delMu.Unlock()
		if err != nil {
			return LoadedState{}, fmt.Errorf("load raft log: %w", err)
		}
	}
	st.HardState = r.hardState
	st.Entries, _, err = entriesAfterSnapshot(r, st.Snapshot, st.HardState)
	if err != nil {
		return LoadedState{}, fmt.Errorf("load raft log: %w", err)
	}
	return st, nil
}

// entriesAfterSnapshot returns the replayed entries above the snapshot if
// the log agrees with it, and none if it does not (divergent: hs's commit
// index is lowered to the snapshot's); see diskStore.
func entriesAfterSnapshot(r *walReplay, snap *pb.SnapshotMetadata, hs *pb.HardState) (kept []*pb.Entry, divergent bool, err error) {
	si, st := snap.GetIndex(), snap.GetTerm()
	last := r.last()
	switch {
	case last.index < si || (last.index == si && last.term == st && (r.baseKnown || len(r.entries) > 0)):
		// Nothing above the snapshot, and the log does not contradict it.
	case last.index == si:
		// The log ends at the snapshot's index with another term (or one
		// not on disk): a leader's snapshot whose reset did not reach the
		// WAL (a crash after step 1, or a torn reset record). It holds
		// nothing above the snapshot, but it is divergent all the same:
		// reconcile must write the reset, or later entries would follow
		// the stale entry and be dropped as divergent by the next Load.
		if hs != nil && hs.GetCommit() > si {
			hs.Commit = new(si)
		}
		return nil, true, nil
	case si < r.base.index:
		return nil, false, fmt.Errorf("%w: the log starts after entry %d, the snapshot is at %d: entries in between are missing",
			ErrCorruptLog, r.base.index, si)
	case si == r.base.index && !r.baseKnown:
		return nil, false, fmt.Errorf("%w: the term of entry %d, the snapshot's, is not on disk", ErrCorruptLog, si)
	case si == r.base.index && r.base.term == st:
		kept = r.entries
	case si > r.base.index && r.entries[si-r.base.index-1].GetTerm() == st:
		kept = r.entries[si-r.base.index:]
	default:
		// A divergent suffix: the snapshot came from the leader and the
		// reset of the same Write did not reach the WAL.
		if hs != nil && hs.GetCommit() > si {
			hs.Commit = new(si)
		}
		return nil, true, nil
	}
	top := si
	if len(kept) > 0 {
		top = last.index
	}
	if hs != nil && hs.GetCommit() > top {
		return nil, false, fmt.Errorf("%w: hard state commit index %d beyond the log's last entry %d", ErrCorruptLog, hs.GetCommit(), top)
	}
	return kept, false, nil
}

// reconcile runs on open: it deletes the segments before the WAL's last
// reset that a crash left (see Write's step 3), and if the WAL's log ends
// below the recorded
// snapshot or disagrees with it (a crash between the two steps of a Write
// recording a leader's snapshot), it appends the reset that Write did not
// write, with the hard state lowered as Load lowers it, and deletes the
// older segments. Entries appended later then continue after the snapshot
// instead of after a stale log.
func (s *diskStore) reconcile(r *walReplay) error {
	var snap *pb.SnapshotMetadata
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keySnapshot); v != nil {
			snap = &pb.SnapshotMetadata{}
			return proto.Unmarshal(v, snap)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load snapshot metadata: %w", err)
	}
	hs := r.hardState
	if hs != nil {
		hs = proto.Clone(hs).(*pb.HardState)
	}
	_, divergent, err := entriesAfterSnapshot(r, snap, hs)
	if err != nil {
		return err
	}
	if !divergent && r.last().index >= snap.GetIndex() {
		s.opened = r
		// A crash between a Write's reset (step 2) and its segment
		// deletion (step 3) leaves the segments before the reset, dead
		// but replayed on every open and kept by compaction until the
		// log passes their old end: finish the deletion.
		return s.wal.deleteBefore(0, true)
	}
	if err := s.wal.append(&walBatch{reset: &walPos{snap.GetIndex(), snap.GetTerm()}, hardState: hs}); err != nil {
		return err
	}
	return s.wal.deleteBefore(0, true)
}

// Write applies w in up to three durable steps (see diskStore).
func (s *diskStore) Write(w *WriteBatch) error {
	if w.Empty() {
		return nil
	}
	if w.DropAllEntries && w.Snapshot == nil {
		return errors.New("persist raft state: DropAllEntries without a snapshot")
	}
	s.mu.Lock()
	paths, err := s.writeLocked(w)
	if err != nil || len(paths) == 0 {
		s.mu.Unlock()
		return err
	}
	// Step 3's removals run without mu (each waits for a directory
	// fsync), in order (delMu, taken before mu is released).
	s.delMu.Lock()
	s.mu.Unlock()
	defer s.delMu.Unlock()
	if err := removeWALSegments(s.walDir, paths); err != nil {
		return fmt.Errorf("compact raft log: %w", err)
	}
	return nil
}

// writeLocked runs steps 1 and 2 of w and detaches step 3's segments,
// whose paths it returns for removal; s.mu is held.
func (s *diskStore) writeLocked(w *WriteBatch) ([]string, error) {
	s.opened = nil
	if w.Snapshot != nil || w.ConfState != nil {
		err := s.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if w.Snapshot != nil {
				if err := putProto(meta, keySnapshot, w.Snapshot); err != nil {
					return err
				}
			}
			if w.ConfState != nil {
				if err := putProto(meta, keyConfState, w.ConfState); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("persist raft state: %w", err)
		}
	}
	if err := s.crashAt("after-bbolt"); err != nil {
		return nil, err
	}
	b := walBatch{hardState: w.HardState, entries: w.Entries}
	// A snapshot beyond the log's last entry (a leader's, or the one Seed
	// and CreateFromSnapshot record on empty storage) replaces the whole
	// log: the log continues after it.
	if w.DropAllEntries || (w.Snapshot != nil && w.Snapshot.GetIndex() > s.wal.last.index) {
		b.reset = &walPos{w.Snapshot.GetIndex(), w.Snapshot.GetTerm()}
	}
	if b.reset != nil || b.hardState != nil || len(b.entries) > 0 {
		if err := s.wal.append(&b); err != nil {
			return nil, fmt.Errorf("persist raft log: %w", err)
		}
	}
	if err := s.crashAt("after-wal"); err != nil {
		return nil, err
	}
	if b.reset != nil || w.CompactBelow > 0 {
		paths, err := s.wal.detachBefore(w.CompactBelow, b.reset != nil)
		if err != nil {
			return nil, fmt.Errorf("compact raft log: %w", err)
		}
		return paths, nil
	}
	return nil, nil
}

func (s *diskStore) crashAt(point string) error {
	if s.crash == nil {
		return nil
	}
	return s.crash(point)
}

// SaveSnapshot writes the snapshot file (fsync'd, file and directory).
func (s *diskStore) SaveSnapshot(term, index uint64, data []byte) error {
	return writeSnapFile(s.snapDir, term, index, data)
}

// SaveSnapshotFrom streams the snapshot file from write (see
// writeSnapFileFrom).
func (s *diskStore) SaveSnapshotFrom(term, index uint64, write func(io.Writer) error) (int64, error) {
	return writeSnapFileFrom(s.snapDir, term, index, write)
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

// entryCount returns how many entries the WAL's logical log holds.
func (s *diskStore) entryCount() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delMu.Lock()
	defer s.delMu.Unlock()
	r, err := replayWAL(s.walDir, false)
	if err != nil {
		return 0, err
	}
	return len(r.entries), nil
}

func putProto(b *bolt.Bucket, key []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshal %T: %w", m, err)
	}
	return b.Put(key, v)
}
