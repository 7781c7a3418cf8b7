package consensus

import (
	"encoding/binary"
	"fmt"
)

// The on-disk layout of a data directory. Every file, bucket and key is
// named here so the format can be reviewed in one place.
//
//	raft.db      bbolt: snapshot metadata, conf state, schema version
//	wal/         the raft log: entries and hard states (wal.go, wal_record.go)
//	snap/        snapshot payloads <term>-<index>.snap (snapfile.go)
//
// raft.db (schema version 2):
//
//	raft_meta/conf_state      -> proto-marshalled raftpb.ConfState (latest applied)
//	raft_meta/snapshot        -> proto-marshalled raftpb.SnapshotMetadata (latest durable snapshot)
//	raft_meta/schema_version  -> 8-byte big-endian schemaVersion
//
// Schema version 1 (before the WAL) also kept the log in raft.db:
//
//	raft_entries/<8-byte big-endian index> -> proto-marshalled raftpb.Entry
//	raft_meta/hard_state                   -> proto-marshalled raftpb.HardState
//
// Opening a version-1 file moves both into a new wal/ and then deletes them
// from raft.db (see openDiskStore). raft_meta/snapshot names the snapshot
// file to load.
var (
	bucketEntries = []byte("raft_entries") // version 1 only
	bucketMeta    = []byte("raft_meta")

	keyHardState     = []byte("hard_state") // version 1 only
	keyConfState     = []byte("conf_state")
	keySnapshot      = []byte("snapshot")
	keySchemaVersion = []byte("schema_version")
)

// schemaVersion is written when the file is created and checked on open.
const schemaVersion uint64 = 2

// File names inside DataDir.
const (
	dbFileName  = "raft.db"
	walDirName  = "wal"
	snapDirName = "snap"
)

// indexKey encodes a raft index as a bbolt key.
func indexKey(i uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], i)
	return k[:]
}

// keyIndex decodes a key written by indexKey.
func keyIndex(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("%w: entry key of %d bytes", ErrCorruptLog, len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

func u64Bytes(v uint64) []byte { return indexKey(v) }
