package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Snapshot format, version 1 (all integers big-endian):
//
//	magic     4 bytes "ZKSS"
//	version   uint32  1
//	count     uint32  number of sessions
//	count times, ids strictly increasing:
//	  id         int64
//	  timeoutMs  int32
//	  pwLen      uint32 (<= MaxPasswordLen)
//	  password   pwLen bytes
//	crc       uint32  CRC-32C (Castagnoli) of every byte before it
//
// The encoding of a Table is unique (sorted ids, no optional parts), so equal
// tables give equal bytes and ReadSnapshot accepts only canonical input. The
// format is self-delimiting: ReadSnapshot reads exactly the snapshot's bytes
// and nothing after them, so it can be embedded in a larger stream.

const (
	snapshotMagic   = "ZKSS"
	snapshotVersion = 1
	headerLen       = 12 // magic, version, count
	recordFixedLen  = 16 // id, timeoutMs, pwLen
	// MaxPasswordLen bounds a password read from a snapshot, so corrupt input
	// cannot make ReadSnapshot allocate much. Real passwords are PasswordLen.
	MaxPasswordLen = 256
)

// ErrCorruptSnapshot is wrapped by every error ReadSnapshot returns for bad
// input (truncated input also wraps io.ErrUnexpectedEOF).
var ErrCorruptSnapshot = errors.New("session: corrupt snapshot")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the table to w in the format above. The output
// depends only on the table's contents.
func (t *Table) WriteSnapshot(w io.Writer) error {
	all := t.All()
	crc := crc32.New(crcTable)
	mw := io.MultiWriter(w, crc)

	buf := make([]byte, 0, headerLen+len(all)*(recordFixedLen+PasswordLen))
	buf = append(buf, snapshotMagic...)
	buf = binary.BigEndian.AppendUint32(buf, snapshotVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(all)))
	for _, s := range all {
		if len(s.Password) > MaxPasswordLen {
			return fmt.Errorf("session: write snapshot: session %#x: password of %d bytes exceeds %d", s.ID, len(s.Password), MaxPasswordLen)
		}
		buf = binary.BigEndian.AppendUint64(buf, uint64(s.ID))
		buf = binary.BigEndian.AppendUint32(buf, uint32(s.TimeoutMs))
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s.Password)))
		buf = append(buf, s.Password...)
	}
	if _, err := mw.Write(buf); err != nil {
		return fmt.Errorf("session: write snapshot: %w", err)
	}
	if _, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return fmt.Errorf("session: write snapshot checksum: %w", err)
	}
	return nil
}

// ReadSnapshot reads a table written by WriteSnapshot. It never panics and
// allocates in proportion to the input actually read (the session count is
// not trusted for preallocation and passwords are capped at MaxPasswordLen).
// Errors for bad input wrap ErrCorruptSnapshot; errors from r are wrapped
// as they are, except that a short read wraps io.ErrUnexpectedEOF.
func ReadSnapshot(r io.Reader) (*Table, error) {
	sr := snapReader{r: r, crc: crc32.New(crcTable), part: "header"}

	var hdr [headerLen]byte
	if err := sr.read(hdr[:], "magic, version and count"); err != nil {
		return nil, err
	}
	if string(hdr[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorruptSnapshot, hdr[:4])
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrCorruptSnapshot, v)
	}
	count := binary.BigEndian.Uint32(hdr[8:12])
	sr.part, sr.count = "", count

	t := NewTable()
	var lastID int64
	var rec [recordFixedLen]byte
	for i := range count {
		sr.index = i
		if err := sr.read(rec[:], "record"); err != nil {
			return nil, err
		}
		s := Session{
			ID:        int64(binary.BigEndian.Uint64(rec[0:8])),
			TimeoutMs: int32(binary.BigEndian.Uint32(rec[8:12])),
		}
		pwLen := binary.BigEndian.Uint32(rec[12:16])
		if pwLen > MaxPasswordLen {
			return nil, fmt.Errorf("%w: session %d of %d: password length %d exceeds %d", ErrCorruptSnapshot, i, count, pwLen, MaxPasswordLen)
		}
		if pwLen > 0 {
			s.Password = make([]byte, pwLen)
			if err := sr.read(s.Password, "password"); err != nil {
				return nil, err
			}
		}
		if i > 0 && s.ID <= lastID {
			return nil, fmt.Errorf("%w: session %d of %d: id %#x not above previous id %#x", ErrCorruptSnapshot, i, count, s.ID, lastID)
		}
		lastID = s.ID
		t.sessions[s.ID] = s
	}

	sr.part = "trailer"
	want := sr.crc.Sum32()
	var sum [4]byte
	if err := sr.read(sum[:], "checksum"); err != nil {
		return nil, err
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("%w: checksum %#08x, computed %#08x", ErrCorruptSnapshot, got, want)
	}
	return t, nil
}

// snapReader reads exact-length pieces and feeds them to the checksum.
type snapReader struct {
	r   io.Reader
	crc hash.Hash32
	// Where in the snapshot we are, for errors: part, or if it is empty,
	// session index of count.
	part         string
	index, count uint32
}

func (sr *snapReader) where() string {
	if sr.part != "" {
		return sr.part
	}
	return fmt.Sprintf("session %d of %d", sr.index, sr.count)
}

func (sr *snapReader) read(p []byte, what string) error {
	if _, err := io.ReadFull(sr.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %s: %s: %w", ErrCorruptSnapshot, sr.where(), what, io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("session: read snapshot: %s: %s: %w", sr.where(), what, err)
	}
	sr.crc.Write(p)
	return nil
}
