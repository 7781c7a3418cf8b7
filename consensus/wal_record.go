package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// WAL record format (integers little-endian, uvarints as encoding/binary):
//
//	0:4    length    uint32, bytes of payload (the header and padding excluded)
//	4:8    crc32c    Castagnoli checksum, seeded with the segment's salt, of
//	                 bytes 8:16 and the payload
//	8      type      record type (recBatch); 0 never occurs in a record
//	9:16   reserved  zero
//	16:    payload   length bytes
//	       padding   zero bytes up to the next multiple of 8
//
// An all-zero header marks the end of the data (a preallocated or torn
// tail). Every record starts at a multiple of 8 from the start of the
// segment, so a scan for valid records after a bad one only tries aligned
// offsets. The salt is random per segment and never leaves the disk, so
// bytes inside an entry (client data) cannot pass for a record of that
// segment except by a 2^-32 accident.
//
// recBatch payload: one Storage.Write's WAL part, all or nothing:
//
//	flags          byte: batchHardState | batchReset | batchTruncate
//	reset index    uvarint  } batchReset: drop every entry, the log goes on
//	reset term     uvarint  } after (index, term), a snapshot's position
//	truncate from  uvarint    batchTruncate: drop entries >= this index
//	hard state     uvarint length + proto-marshalled raftpb.HardState
//	count          uvarint number of entries, then per entry:
//	entry          uvarint length + proto-marshalled raftpb.Entry
//
// The entries are contiguous and follow the logical log's last index (after
// the reset or truncation of the same record).
const (
	recHeaderSize = 16
	recAlign      = 8
	// maxRecordSize bounds one record: a length above it is corruption
	// (it also bounds what a garbage length field makes the reader allocate).
	maxRecordSize = 1 << 30

	recBatch byte = 1

	batchHardState byte = 1 << 0
	batchReset     byte = 1 << 1
	batchTruncate  byte = 1 << 2
	batchKnown          = batchHardState | batchReset | batchTruncate
)

// walPos is a position in the raft log: an index and its term.
type walPos struct{ index, term uint64 }

// walBatch is the decoded payload of one recBatch record.
type walBatch struct {
	reset        *walPos // drop all entries; the log continues after it
	truncateFrom uint64  // if > 0: drop entries >= truncateFrom
	hardState    *pb.HardState
	entries      []*pb.Entry
}

// Errors of decodeRecord. errRecordEnd and errRecordShort can be a torn
// tail; errRecordBad is a record whose bytes do not verify. errRecordTorn
// is not decodeRecord's: the torn-tail check (tornCause) names with it an
// errRecordBad record that ends as a torn write leaves it.
var (
	errRecordEnd   = errors.New("end of records (zero header)")
	errRecordShort = errors.New("record extends past the end of the data")
	errRecordBad   = errors.New("bad record")
	errRecordTorn  = errors.New("record ends in unwritten sectors: a torn write")
)

func recPadded(n int) int { return (n + recAlign - 1) &^ (recAlign - 1) }

// appendRecord appends one framed record of type typ holding payload (which
// the caller has appended at buf[start+recHeaderSize:]) and fills in its
// header. buf[start:start+recHeaderSize] must be reserved by the caller.
func sealRecord(buf []byte, start int, typ byte, salt uint32) []byte {
	n := len(buf) - start - recHeaderSize
	hdr := buf[start : start+recHeaderSize]
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(n))
	hdr[8] = typ
	clear(hdr[9:16])
	crc := crc32.Update(salt, crc32c, hdr[8:16])
	crc = crc32.Update(crc, crc32c, buf[start+recHeaderSize:])
	binary.LittleEndian.PutUint32(hdr[4:8], crc)
	for pad := recPadded(len(buf)-start) - (len(buf) - start); pad > 0; pad-- {
		buf = append(buf, 0)
	}
	return buf
}

// decodeRecord reads the record at the start of b. n is the number of
// bytes it occupies, padding included. It never panics on any input.
func decodeRecord(b []byte, salt uint32) (typ byte, payload []byte, n int, err error) {
	if len(b) < recHeaderSize {
		if allZero(b) {
			return 0, nil, 0, errRecordEnd
		}
		return 0, nil, 0, errRecordShort
	}
	hdr := b[:recHeaderSize]
	if allZero(hdr) {
		return 0, nil, 0, errRecordEnd
	}
	length, ok := plausibleHeader(hdr)
	if !ok {
		return 0, nil, 0, fmt.Errorf("%w: header type %d, length %d", errRecordBad, hdr[8], binary.LittleEndian.Uint32(hdr[0:4]))
	}
	typ = hdr[8]
	total := recPadded(recHeaderSize + length)
	if total > len(b) {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes needed, %d left", errRecordShort, total, len(b))
	}
	payload = b[recHeaderSize : recHeaderSize+length]
	crc := crc32.Update(salt, crc32c, hdr[8:16])
	crc = crc32.Update(crc, crc32c, payload)
	if want := binary.LittleEndian.Uint32(hdr[4:8]); crc != want {
		return 0, nil, 0, fmt.Errorf("%w: crc32c %08x, header says %08x", errRecordBad, crc, want)
	}
	if !allZero(b[recHeaderSize+length : total]) {
		return 0, nil, 0, fmt.Errorf("%w: non-zero padding", errRecordBad)
	}
	return typ, payload, total, nil
}

// plausibleHeader returns the payload length the record header hdr
// claims, and whether the header could be a record's: a known type,
// reserved bytes zero, a length within maxRecordSize. The checksum is not
// checked.
func plausibleHeader(hdr []byte) (length int, ok bool) {
	n := binary.LittleEndian.Uint32(hdr[0:4])
	if hdr[8] != recBatch || !allZero(hdr[9:16]) || n > maxRecordSize {
		return 0, false
	}
	return int(n), true
}

// zeroChunk is compared against in allZero and nonZeroLen: bytes.Equal
// compares many bytes per instruction, so checking a preallocated
// segment's megabytes of zeros takes milliseconds.
var zeroChunk [4096]byte

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroChunk))
		if !bytes.Equal(b[:n], zeroChunk[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// nonZeroLen returns the length of b without its trailing zero bytes.
func nonZeroLen(b []byte) int {
	for len(b) > 0 {
		n := min(len(b), len(zeroChunk))
		if !bytes.Equal(b[len(b)-n:], zeroChunk[:n]) {
			i := len(b) - 1
			for b[i] == 0 {
				i--
			}
			return i + 1
		}
		b = b[:len(b)-n]
	}
	return 0
}

// appendBatchRecord appends b as one framed recBatch record to buf.
func appendBatchRecord(buf []byte, salt uint32, b *walBatch) ([]byte, error) {
	start := len(buf)
	buf = append(buf, make([]byte, recHeaderSize)...)
	var flags byte
	if b.hardState != nil {
		flags |= batchHardState
	}
	if b.reset != nil {
		flags |= batchReset
	}
	if b.truncateFrom > 0 {
		flags |= batchTruncate
	}
	buf = append(buf, flags)
	if b.reset != nil {
		buf = binary.AppendUvarint(buf, b.reset.index)
		buf = binary.AppendUvarint(buf, b.reset.term)
	}
	if b.truncateFrom > 0 {
		buf = binary.AppendUvarint(buf, b.truncateFrom)
	}
	var err error
	if b.hardState != nil {
		if buf, err = appendHardState(buf, b.hardState); err != nil {
			return nil, err
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.entries)))
	for _, e := range b.entries {
		if buf, err = appendEntry(buf, e); err != nil {
			return nil, err
		}
	}
	if len(buf)-start-recHeaderSize > maxRecordSize {
		return nil, fmt.Errorf("raft log record of %d bytes exceeds %d", len(buf)-start-recHeaderSize, maxRecordSize)
	}
	return sealRecord(buf, start, recBatch, salt), nil
}

var marshalAppend = proto.MarshalOptions{}

// Protocol buffer tags (field number << 3 | wire type) of the raftpb fields
// appendHardState and appendEntry write.
const (
	wireVarint         = 0
	wireBytes          = 2 // length-delimited
	tagHardStateTerm   = 1<<3 + wireVarint
	tagHardStateVote   = 2<<3 + wireVarint
	tagHardStateCommit = 3<<3 + wireVarint
	tagEntryType       = 1<<3 + wireVarint
	tagEntryTerm       = 2<<3 + wireVarint
	tagEntryIndex      = 3<<3 + wireVarint
	tagEntryData       = 4<<3 + wireBytes
)

// appendHardState is appendProto of hs, encoded by hand: the bytes
// proto.Marshal writes (fields set, in field-number order), without its
// reflection, which took 2-3% of the server's CPU in the lock workload
// (TestAppendRaftpbMatchesMarshal). A message with unknown fields goes
// through proto.Marshal.
func appendHardState(buf []byte, hs *pb.HardState) ([]byte, error) {
	if len(hs.ProtoReflect().GetUnknown()) > 0 {
		return appendProto(buf, hs)
	}
	n := optVarintSize(hs.Term) + optVarintSize(hs.Vote) + optVarintSize(hs.Commit)
	buf = binary.AppendUvarint(buf, uint64(n))
	buf = appendOptVarint(buf, tagHardStateTerm, hs.Term)
	buf = appendOptVarint(buf, tagHardStateVote, hs.Vote)
	buf = appendOptVarint(buf, tagHardStateCommit, hs.Commit)
	return buf, nil
}

// appendEntry is appendProto of e, encoded by hand as appendHardState.
func appendEntry(buf []byte, e *pb.Entry) ([]byte, error) {
	if len(e.ProtoReflect().GetUnknown()) > 0 {
		return appendProto(buf, e)
	}
	var typ *uint64
	var t uint64
	if e.Type != nil {
		t = uint64(int64(*e.Type)) // an enum is an int32 varint, sign-extended
		typ = &t
	}
	n := optVarintSize(typ) + optVarintSize(e.Term) + optVarintSize(e.Index)
	if e.Data != nil { // a proto2 bytes field is present when not nil
		n += 1 + uvarintSize(uint64(len(e.Data))) + len(e.Data)
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	buf = appendOptVarint(buf, tagEntryType, typ)
	buf = appendOptVarint(buf, tagEntryTerm, e.Term)
	buf = appendOptVarint(buf, tagEntryIndex, e.Index)
	if e.Data != nil {
		buf = append(buf, tagEntryData)
		buf = binary.AppendUvarint(buf, uint64(len(e.Data)))
		buf = append(buf, e.Data...)
	}
	return buf, nil
}

// uvarintSize is the length of v as a uvarint.
func uvarintSize(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// optVarintSize is the encoded size of an optional varint field (one-byte
// tag): 0 when v is nil.
func optVarintSize(v *uint64) int {
	if v == nil {
		return 0
	}
	return 1 + uvarintSize(*v)
}

// appendOptVarint appends an optional varint field, if set.
func appendOptVarint(buf []byte, tag byte, v *uint64) []byte {
	if v == nil {
		return buf
	}
	return binary.AppendUvarint(append(buf, tag), *v)
}

func appendProto(buf []byte, m proto.Message) ([]byte, error) {
	buf = binary.AppendUvarint(buf, uint64(marshalAppend.Size(m)))
	out, err := marshalAppend.MarshalAppend(buf, m)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", m, err)
	}
	return out, nil
}

// decodeBatch decodes a recBatch payload. It never panics on any input.
func decodeBatch(p []byte) (*walBatch, error) {
	d := decoder{b: p}
	flags := d.byte()
	if flags&^batchKnown != 0 {
		return nil, fmt.Errorf("unknown batch flags %02x", flags)
	}
	var b walBatch
	if flags&batchReset != 0 {
		b.reset = &walPos{index: d.uvarint(), term: d.uvarint()}
	}
	if flags&batchTruncate != 0 {
		if b.truncateFrom = d.uvarint(); b.truncateFrom == 0 && d.err == nil {
			return nil, errors.New("truncation from index 0")
		}
	}
	if flags&batchHardState != 0 {
		b.hardState = &pb.HardState{}
		if err := proto.Unmarshal(d.bytes(), b.hardState); err != nil && d.err == nil {
			return nil, fmt.Errorf("decode hard state: %w", err)
		}
	}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(p)) {
		return nil, fmt.Errorf("%d entries in a %d-byte record", n, len(p))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		e := &pb.Entry{}
		if err := proto.Unmarshal(d.bytes(), e); err != nil && d.err == nil {
			return nil, fmt.Errorf("decode entry %d of the batch: %w", i, err)
		}
		if len(b.entries) > 0 && e.GetIndex() != b.entries[len(b.entries)-1].GetIndex()+1 {
			return nil, fmt.Errorf("entry %d follows entry %d in one batch", e.GetIndex(), b.entries[len(b.entries)-1].GetIndex())
		}
		b.entries = append(b.entries, e)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes in batch", len(d.b))
	}
	return &b, nil
}

// decoder reads uvarints and length-prefixed byte strings; the first
// failure sticks in err and later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errors.New("batch truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad uvarint in batch")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("field of %d bytes, %d left in batch", n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
