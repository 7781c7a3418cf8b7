package zkdisk

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"

	"github.com/zkraft/zkraft/jute"
)

// ZooKeeper's txn op codes (ZooDefs.OpCode) that appear in logs.
const (
	OpError           = -1
	OpCreate          = 1
	OpDelete          = 2
	OpSetData         = 5
	OpSetACL          = 7
	OpCheck           = 13
	OpMulti           = 14
	OpCreate2         = 15
	OpReconfig        = 16
	OpCreateContainer = 19
	OpDeleteContainer = 20
	OpCreateTTL       = 21
	OpCreateSession   = -10
	OpCloseSession    = -11
)

// LogRecords splits a txn log file into the bytes of its transactions, as
// FileTxnLog's iterator reads them. It verifies the header and every
// record's Adler-32. A record cut short (the file ends inside it, or its
// end-of-record byte is not 'B', as after a crash mid-write) ends the file
// the way it ends ZooKeeper's reading of it: the records before it are
// returned and torn is true. A zero length (preallocated space) ends the
// file normally. A checksum mismatch on a whole record is an error, as in
// ZooKeeper.
func LogRecords(b []byte) (recs [][]byte, torn bool, err error) {
	if len(b) < 16 {
		return nil, false, fmt.Errorf("%w: txn log: %d bytes, shorter than its header", ErrCorrupt, len(b))
	}
	magic, version := int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))
	if magic != LogMagic {
		return nil, false, fmt.Errorf("%w: txn log: magic %#x, want %#x (ZKLG): not a ZooKeeper txn log", ErrCorrupt, uint32(magic), LogMagic)
	}
	if version != FileVersion {
		return nil, false, fmt.Errorf("%w: txn log: format version %d, only %d is known", ErrCorrupt, version, FileVersion)
	}
	off := 16
	for {
		if len(b)-off < 12 {
			// Nothing, or not even a checksum and a length: the end, or a
			// record torn before its length.
			return recs, !allZero(b[off:]), nil
		}
		crc := int64(binary.BigEndian.Uint64(b[off:]))
		n := int32(binary.BigEndian.Uint32(b[off+8:]))
		at := off
		off += 12
		switch {
		case n == 0 || n == -1:
			// Preallocated zeros (or a null buffer): the end of this file.
			return recs, false, nil
		case n < 0:
			return nil, false, fmt.Errorf("%w: txn log: record at offset %d has length %d", ErrCorrupt, at, n)
		case int(n) >= len(b)-off:
			// The data or its end-of-record byte is missing.
			return recs, true, nil
		}
		rec := b[off : off+int(n)]
		off += int(n)
		if b[off] != 'B' {
			return recs, true, nil // "Last transaction was partial."
		}
		off++
		if sum := adler32.Checksum(rec); crc != int64(sum) {
			return nil, false, fmt.Errorf("%w: txn log: record at offset %d: checksum mismatch (stored %#x, computed %#x)", ErrCorrupt, at, crc, sum)
		}
		recs = append(recs, rec)
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// TxnHeader starts every txn.
type TxnHeader struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     int32
}

// Op is one decoded txn record (or one op of a multi). Which fields are set
// depends on Type.
type Op struct {
	Type           int32
	Path           string
	Data           []byte
	ACL            []jute.ACL
	Ephemeral      bool
	ParentCVersion int32 // -1: compute from the parent (V0 create)
	TTL            int64
	Version        int32
	Err            int32    // OpError
	TimeoutMs      int32    // OpCreateSession
	Paths          []string // OpCloseSession: the ephemerals to delete
	HasPaths       bool     // OpCloseSession: the txn listed them (3.6+)
	Ops            []Op     // OpMulti
}

// Txn is one decoded transaction.
type Txn struct {
	Header TxnHeader
	Op     Op
}

// DecodeTxn decodes one txn's bytes (a record of LogRecords), as
// SerializeUtils.deserializeTxn does; a trailing TxnDigest is ignored.
func DecodeTxn(b []byte) (Txn, error) {
	d := jute.NewDecoder(b, maxField)
	var t Txn
	h := &t.Header
	h.ClientID, h.Cxid, h.Zxid, h.Time, h.Type = d.ReadLong(), d.ReadInt(), d.ReadLong(), d.ReadLong(), d.ReadInt()
	if d.Err() != nil {
		return t, fmt.Errorf("%w: txn header: %v", ErrCorrupt, d.Err())
	}
	op, err := decodeOp(h.Type, d, true)
	if err != nil && h.Type == OpCreate && errors.Is(err, jute.ErrShortBuffer) {
		// A V0 create (no parentCVersion): ZooKeeper fixes it up from the parent.
		d = jute.NewDecoder(b, maxField)
		d.ReadLong()
		d.ReadInt()
		d.ReadLong()
		d.ReadLong()
		d.ReadInt()
		var aclErr error
		op = Op{Type: OpCreate, Path: d.ReadString(), Data: d.ReadBuffer(), ACL: readACLs(d, &aclErr), Ephemeral: d.ReadBool(), ParentCVersion: -1}
		err = cmp.Or(d.Err(), aclErr)
	}
	if err != nil {
		return t, fmt.Errorf("%w: txn %#x of type %d: %v", ErrCorrupt, h.Zxid, h.Type, err)
	}
	t.Op = op
	return t, nil
}

// readACLs reads a vector<ACL>; a bad count is reported through *err.
func readACLs(d *jute.Decoder, err *error) []jute.ACL {
	n := d.ReadInt()
	if n == -1 || d.Err() != nil {
		return nil
	}
	if n < 0 || int(n) > d.Remaining()/12 {
		if *err == nil {
			*err = fmt.Errorf("ACL count %d", n)
		}
		return nil
	}
	acl := make([]jute.ACL, 0, n)
	for range n {
		var a jute.ACL
		if d.ReadRecord(&a) != nil {
			return nil
		}
		acl = append(acl, a)
	}
	return acl
}

// decodeOp decodes the record of a txn of type typ. top is false inside a
// multi, whose ops have no create2, session or nested multi records.
func decodeOp(typ int32, d *jute.Decoder, top bool) (Op, error) {
	op := Op{Type: typ}
	var aclErr error
	switch typ {
	case OpCreate, OpCreate2:
		op.Path, op.Data, op.ACL = d.ReadString(), d.ReadBuffer(), readACLs(d, &aclErr)
		op.Ephemeral, op.ParentCVersion = d.ReadBool(), d.ReadInt()
	case OpCreateContainer:
		op.Path, op.Data, op.ACL = d.ReadString(), d.ReadBuffer(), readACLs(d, &aclErr)
		op.ParentCVersion = d.ReadInt()
	case OpCreateTTL:
		op.Path, op.Data, op.ACL = d.ReadString(), d.ReadBuffer(), readACLs(d, &aclErr)
		op.ParentCVersion, op.TTL = d.ReadInt(), d.ReadLong()
	case OpDelete, OpDeleteContainer:
		op.Path = d.ReadString()
	case OpSetData, OpReconfig:
		op.Path, op.Data, op.Version = d.ReadString(), d.ReadBuffer(), d.ReadInt()
	case OpSetACL:
		op.Path, op.ACL, op.Version = d.ReadString(), readACLs(d, &aclErr), d.ReadInt()
	case OpCheck:
		op.Path, op.Version = d.ReadString(), d.ReadInt()
	case OpError:
		op.Err = d.ReadInt()
	case OpCreateSession:
		if !top {
			return op, fmt.Errorf("createSession inside a multi")
		}
		op.TimeoutMs = d.ReadInt()
	case OpCloseSession:
		if !top {
			return op, fmt.Errorf("closeSession inside a multi")
		}
		if d.Remaining() == 0 {
			return op, nil // before CloseSessionTxn (3.5), or disabled
		}
		n := d.ReadInt()
		if n != -1 && d.Err() == nil {
			if n < 0 || int(n) > d.Remaining()/4 {
				return op, fmt.Errorf("closeSession path count %d", n)
			}
			op.HasPaths = true
			op.Paths = make([]string, 0, n)
			for range n {
				op.Paths = append(op.Paths, d.ReadString())
			}
		}
	case OpMulti:
		if !top {
			return op, fmt.Errorf("multi inside a multi")
		}
		n := d.ReadInt()
		if d.Err() == nil && n != -1 {
			if n < 0 || int(n) > d.Remaining()/8 {
				return op, fmt.Errorf("multi op count %d", n)
			}
			for i := range n {
				st, body := d.ReadInt(), d.ReadBuffer()
				if d.Err() != nil {
					break
				}
				sub, err := decodeOp(st, jute.NewDecoder(body, maxField), false)
				if err != nil {
					return op, fmt.Errorf("multi op %d: %w", i, err)
				}
				op.Ops = append(op.Ops, sub)
			}
		}
	default:
		return op, fmt.Errorf("unknown txn type %d", typ)
	}
	if d.Err() != nil {
		return op, d.Err()
	}
	return op, aclErr
}
