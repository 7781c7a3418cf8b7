// Package zkdisk decodes Apache ZooKeeper 3.5–3.8's on-disk files: snapshots
// (FileSnap: snapshot.<zxid>) and transaction logs (FileTxnLog: log.<zxid>).
//
// It only reads bytes; it applies nothing. Every decoder works on a byte
// slice, never reads past it, never panics and bounds every allocation by
// the input's length, so it is safe on corrupt or hostile files (see the
// fuzz tests).
//
// Formats (jute binary: big-endian ints and longs, length-prefixed buffers
// and strings, -1 = null):
//
//	snapshot: FileHeader{int magic "ZKSN", int version 2, long dbid}
//	          int sessions, per session {long id, int timeout}
//	          ACL cache: int entries, per entry {long ref, vector<ACL>}
//	          nodes, parents first: {ustring path ("" is the root), buffer data,
//	            long aclRef, StatPersisted} until the path "/"
//	          seal: long Adler-32 of every byte before it, ustring "/"
//	          optional digest {long zxid, int version, long digest} + seal (3.6+)
//	          optional long lastProcessedZxid + seal (3.9+)
//	txn log:  FileHeader{int magic "ZKLG", int version 2, long dbid}
//	          per record: long Adler-32 of the txn bytes, buffer txn, byte 'B'
//	          the file may be preallocated with zeros: a zero length ends it
//	txn:      TxnHeader{long clientId, int cxid, long zxid, long time, int type}
//	          the type's record (zookeeper.jute, module txn), optional TxnDigest
package zkdisk
