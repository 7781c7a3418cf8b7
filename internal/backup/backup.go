// Package backup is the file format of zkraft's backups (zkraft snapshot
// save, restore and inspect): the server's state snapshot as of one applied
// raft index, with the facts needed to make a data directory from it and a
// checksum over everything.
//
// Format (integers big-endian):
//
//	magic     8 bytes  "ZKRBAK01"
//	version   uint32   1
//	index     uint64   raft index the state was frozen at
//	term      uint64   raft term of that index
//	zxid      uint64   last zxid in the state (<= index)
//	created   int64    ms since the epoch, when the state was frozen
//	voters    uint32 count, then uint64 ids (the source's conf state; informational)
//	learners  uint32 count, then uint64 ids
//	length    uint64   payload length
//	payload   length bytes: the server's state snapshot (server.stateMachine.Snapshot)
//	sha256    32 bytes over every byte before it
//
// A writer streams it (Write) once it knows the payload; a reader (Read)
// refuses a file with another magic or version, a truncated file, trailing
// bytes and a checksum mismatch, with an error saying which.
package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Magic starts every backup file.
const Magic = "ZKRBAK01"

// Version is the format version this package writes and reads.
const Version uint32 = 1

// maxMembers bounds the member lists a reader accepts.
const maxMembers = 1 << 16

// ErrCorrupt wraps every reason Read refuses a file.
var ErrCorrupt = errors.New("corrupt backup")

// Header is what a backup says about its payload.
type Header struct {
	Index, Term   uint64
	Zxid          uint64
	CreatedMs     int64
	Voters        []uint64
	Learners      []uint64
	PayloadLength uint64
}

// Write writes a whole backup of payload to w.
func Write(w io.Writer, h Header, payload []byte) error {
	h.PayloadLength = uint64(len(payload))
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	if _, err := bw.Write(encodeHeader(h)); err != nil {
		return fmt.Errorf("write backup header: %w", err)
	}
	if _, err := bw.Write(payload); err != nil {
		return fmt.Errorf("write backup payload: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("write backup checksum: %w", err)
	}
	return nil
}

func encodeHeader(h Header) []byte {
	b := make([]byte, 0, 64+8*(len(h.Voters)+len(h.Learners)))
	b = append(b, Magic...)
	b = binary.BigEndian.AppendUint32(b, Version)
	b = binary.BigEndian.AppendUint64(b, h.Index)
	b = binary.BigEndian.AppendUint64(b, h.Term)
	b = binary.BigEndian.AppendUint64(b, h.Zxid)
	b = binary.BigEndian.AppendUint64(b, uint64(h.CreatedMs))
	for _, ids := range [][]uint64{h.Voters, h.Learners} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
		for _, id := range ids {
			b = binary.BigEndian.AppendUint64(b, id)
		}
	}
	return binary.BigEndian.AppendUint64(b, h.PayloadLength)
}

// Read reads and verifies a whole backup. size is the number of bytes r
// holds (a file's size), used to refuse a header that promises more than
// is there before allocating it; -1 if unknown.
func Read(r io.Reader, size int64) (Header, []byte, error) {
	sum := sha256.New()
	tr := io.TeeReader(r, sum)
	h, err := readHeader(tr)
	if err != nil {
		return Header{}, nil, err
	}
	if size >= 0 {
		hdrLen := int64(len(encodeHeader(h)))
		if h.PayloadLength > uint64(size) {
			return h, nil, fmt.Errorf("%w: truncated: header says %d payload bytes, the file has %d bytes", ErrCorrupt, h.PayloadLength, size)
		}
		if want := hdrLen + int64(h.PayloadLength) + sha256.Size; want > size {
			return h, nil, fmt.Errorf("%w: truncated: header says %d payload bytes, so %d bytes in all, the file has %d", ErrCorrupt, h.PayloadLength, want, size)
		} else if want < size {
			return h, nil, fmt.Errorf("%w: %d bytes after the checksum (header says %d payload bytes)", ErrCorrupt, size-want, h.PayloadLength)
		}
	}
	payload, err := readPayload(tr, h.PayloadLength)
	if err != nil {
		return h, nil, err
	}
	return h, payload, checkSum(r, sum)
}

func readPayload(r io.Reader, n uint64) ([]byte, error) {
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, int64(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: truncated: payload of %d bytes, only %d present", ErrCorrupt, n, got)
		}
		return nil, fmt.Errorf("read backup payload: %w", err)
	}
	return buf.Bytes(), nil
}

func checkSum(r io.Reader, sum hash.Hash) error {
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, want); err != nil {
		return fmt.Errorf("%w: truncated: checksum missing", ErrCorrupt)
	}
	if got := sum.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("%w: sha256 mismatch: file says %x, content is %x", ErrCorrupt, want, got)
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return fmt.Errorf("%w: bytes after the checksum", ErrCorrupt)
	}
	return nil
}

func readHeader(r io.Reader) (Header, error) {
	var h Header
	fixed := make([]byte, len(Magic)+4+8*4)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	if string(fixed[:len(Magic)]) != Magic {
		return h, fmt.Errorf("%w: not a zkraft backup (magic %q)", ErrCorrupt, fixed[:len(Magic)])
	}
	b := fixed[len(Magic):]
	if v := binary.BigEndian.Uint32(b); v != Version {
		return h, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, v, Version)
	}
	b = b[4:]
	h.Index = binary.BigEndian.Uint64(b)
	h.Term = binary.BigEndian.Uint64(b[8:])
	h.Zxid = binary.BigEndian.Uint64(b[16:])
	h.CreatedMs = int64(binary.BigEndian.Uint64(b[24:]))
	for _, ids := range []*[]uint64{&h.Voters, &h.Learners} {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
		}
		count := binary.BigEndian.Uint32(n[:])
		if count > maxMembers {
			return h, fmt.Errorf("%w: %d members", ErrCorrupt, count)
		}
		list := make([]byte, 8*int(count))
		if _, err := io.ReadFull(r, list); err != nil {
			return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
		}
		for i := 0; i < int(count); i++ {
			*ids = append(*ids, binary.BigEndian.Uint64(list[8*i:]))
		}
	}
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	h.PayloadLength = binary.BigEndian.Uint64(n[:])
	if h.Zxid > h.Index || h.Index == 0 || h.Term == 0 {
		return h, fmt.Errorf("%w: index %d, term %d, zxid %d", ErrCorrupt, h.Index, h.Term, h.Zxid)
	}
	return h, nil
}

// Size is the length of the backup Write writes for h and a payload of n bytes.
func Size(h Header, n int) int64 {
	return int64(len(encodeHeader(h))) + int64(n) + sha256.Size
}
