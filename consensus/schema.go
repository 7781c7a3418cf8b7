package consensus

import (
	"encoding/binary"
	"fmt"
)

// The on-disk layout of <DataDir>/raft.db. Every bucket and key lives here so
// the format can be reviewed in one place.
//
//	raft_entries/<8-byte big-endian index> -> proto-marshalled raftpb.Entry
//	raft_meta/hard_state                   -> proto-marshalled raftpb.HardState
//	raft_meta/conf_state                   -> proto-marshalled raftpb.ConfState (latest applied)
//	raft_meta/snapshot                     -> proto-marshalled raftpb.SnapshotMetadata (latest durable snapshot)
//	raft_meta/schema_version               -> 8-byte big-endian schemaVersion
//
// Big-endian keys make cursor order equal log order. Snapshot payloads do
// not live in bbolt: they are files <DataDir>/snap/<term>-<index>.snap (see
// snapfile.go) and raft_meta/snapshot names the one to load.
var (
	bucketEntries = []byte("raft_entries")
	bucketMeta    = []byte("raft_meta")

	keyHardState     = []byte("hard_state")
	keyConfState     = []byte("conf_state")
	keySnapshot      = []byte("snapshot")
	keySchemaVersion = []byte("schema_version")
)

// schemaVersion is written when the file is created and checked on open.
const schemaVersion uint64 = 1

// File names inside DataDir.
const (
	dbFileName  = "raft.db"
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
