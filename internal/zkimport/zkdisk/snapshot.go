package zkdisk

import (
	"errors"
	"fmt"
	"hash/adler32"

	"github.com/zkraft/zkraft/jute"
)

// Magic numbers of ZooKeeper's file headers.
const (
	SnapMagic   = 0x5a4b534e // "ZKSN"
	LogMagic    = 0x5a4b4c47 // "ZKLG"
	FileVersion = 2
)

// ErrCorrupt is wrapped by every error about a file's content.
var ErrCorrupt = errors.New("zkdisk: corrupt or unknown file")

// maxField bounds one buffer, string or vector read from a file. ZooKeeper
// refuses nodes above jute.maxbuffer (1 MiB by default, configurable), so
// this only stops absurd lengths; the decoder also never reads past the input.
const maxField = 1 << 30

// StatPersisted is a node's stored metadata. Cversion is ZooKeeper's stored
// child-create count (clients see 2*Cversion - numChildren). EphemeralOwner
// also encodes containers and TTL nodes (see Kind).
type StatPersisted struct {
	Czxid, Mzxid, Ctime, Mtime  int64
	Version, Cversion, Aversion int32
	EphemeralOwner, Pzxid       int64
}

func (s *StatPersisted) decode(d *jute.Decoder) {
	s.Czxid, s.Mzxid, s.Ctime, s.Mtime = d.ReadLong(), d.ReadLong(), d.ReadLong(), d.ReadLong()
	s.Version, s.Cversion, s.Aversion = d.ReadInt(), d.ReadInt(), d.ReadInt()
	s.EphemeralOwner, s.Pzxid = d.ReadLong(), d.ReadLong()
}

// Node is one serialized node. Path is ZooKeeper's: "" for the root.
type Node struct {
	Path   string
	Data   []byte
	ACLRef int64 // key into Snapshot.ACLs; -1 is world:anyone ALL
	Stat   StatPersisted
}

// OpenACLRef is the ACL reference ZooKeeper stores for OPEN_ACL_UNSAFE.
const OpenACLRef = -1

// Digest is a snapshot's optional tree digest (3.6+).
type Digest struct {
	Zxid    int64
	Version int32
	Value   int64
}

// Snapshot is a decoded ZooKeeper snapshot.
type Snapshot struct {
	DBID     int64
	Sessions map[int64]int32 // session id -> timeout ms
	ACLs     map[int64][]jute.ACL
	Nodes    []Node // in file order: every parent before its children
	Digest   *Digest
	LastZxid *int64 // serialized lastProcessedZxid (3.9+), if present
}

// ReadSnapshot decodes a whole (uncompressed) snapshot file and verifies its
// checksums. Trailing bytes after the last seal are refused.
func ReadSnapshot(b []byte) (*Snapshot, error) {
	d := jute.NewDecoder(b, maxField)
	fail := func(format string, args ...any) (*Snapshot, error) {
		return nil, fmt.Errorf("%w: snapshot: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	magic, version, dbid := d.ReadInt(), d.ReadInt(), d.ReadLong()
	if d.Err() != nil {
		return fail("header: %v", d.Err())
	}
	if magic != SnapMagic {
		return fail("magic %#x, want %#x (ZKSN): not a ZooKeeper snapshot", uint32(magic), SnapMagic)
	}
	if version != FileVersion {
		return fail("format version %d, only %d is known", version, FileVersion)
	}
	s := &Snapshot{DBID: dbid, Sessions: map[int64]int32{}, ACLs: map[int64][]jute.ACL{}}
	n := d.ReadInt()
	if n < 0 || int(n) > d.Remaining()/12 {
		return fail("session count %d", n)
	}
	for range n {
		id, to := d.ReadLong(), d.ReadInt()
		s.Sessions[id] = to
	}
	n = d.ReadInt()
	if d.Err() != nil || n < 0 || int(n) > d.Remaining()/12 {
		return fail("ACL cache count %d: %v", n, d.Err())
	}
	for range n {
		ref := d.ReadLong()
		cnt := d.ReadInt()
		if d.Err() != nil || cnt < 0 || int(cnt) > d.Remaining()/12 {
			return fail("ACL list %d: count %d: %v", ref, cnt, d.Err())
		}
		acl := make([]jute.ACL, 0, cnt)
		for range cnt {
			var a jute.ACL
			if err := d.ReadRecord(&a); err != nil {
				return fail("ACL list %d: %v", ref, err)
			}
			acl = append(acl, a)
		}
		if _, dup := s.ACLs[ref]; dup {
			return fail("ACL list %d twice", ref)
		}
		s.ACLs[ref] = acl
	}
	for {
		path := d.ReadString()
		if d.Err() != nil {
			return fail("node list: %v", d.Err())
		}
		if path == "/" {
			break
		}
		nd := Node{Path: path, Data: d.ReadBuffer(), ACLRef: d.ReadLong()}
		nd.Stat.decode(d)
		if d.Err() != nil {
			return fail("node %q: %v", path, d.Err())
		}
		s.Nodes = append(s.Nodes, nd)
	}
	if err := checkSeal(d, b); err != nil {
		return fail("%v", err)
	}
	if d.Remaining() > 0 {
		dg := &Digest{Zxid: d.ReadLong(), Version: d.ReadInt()}
		if dg.Version < 2 {
			// Digest versions before 2 stored the value as a hex string.
			d.ReadString()
		} else {
			dg.Value = d.ReadLong()
		}
		if d.Err() != nil {
			return fail("digest: %v", d.Err())
		}
		if err := checkSeal(d, b); err != nil {
			return fail("after digest: %v", err)
		}
		s.Digest = dg
	}
	if d.Remaining() > 0 {
		z := d.ReadLong()
		if d.Err() != nil {
			return fail("last processed zxid: %v", d.Err())
		}
		if err := checkSeal(d, b); err != nil {
			return fail("after last processed zxid: %v", err)
		}
		s.LastZxid = &z
	}
	if d.Remaining() > 0 {
		return fail("%d unexpected bytes after the last checksum", d.Remaining())
	}
	return s, nil
}

// checkSeal reads a seal (long Adler-32 of b before it, ustring "/").
func checkSeal(d *jute.Decoder, b []byte) error {
	at := d.Offset()
	sum := adler32.Checksum(b[:at])
	val := d.ReadLong()
	slash := d.ReadString()
	if d.Err() != nil {
		return fmt.Errorf("checksum at offset %d: %w", at, d.Err())
	}
	if val != int64(sum) {
		return fmt.Errorf("checksum mismatch at offset %d: stored %#x, computed %#x", at, val, sum)
	}
	if slash != "/" {
		return fmt.Errorf("checksum at offset %d not followed by \"/\"", at)
	}
	return nil
}

// LooksComplete is ZooKeeper's SnapStream.isValidSnapshot for an
// uncompressed snapshot: at least 10 bytes ending with a seal's ustring "/"
// (int 1, byte '/'). A snapshot that was being written when the server
// stopped fails it and is skipped, as ZooKeeper skips it.
func LooksComplete(b []byte) bool {
	if len(b) < 10 {
		return false
	}
	t := b[len(b)-5:]
	return t[0] == 0 && t[1] == 0 && t[2] == 0 && t[3] == 1 && t[4] == '/'
}
