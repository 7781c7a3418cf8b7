package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// Decoding errors. Decoder errors wrap one of these with the offset and the
// offending value; test with errors.Is.
var (
	// ErrShortBuffer means the input ended inside a field. It wraps
	// io.ErrUnexpectedEOF.
	ErrShortBuffer = fmt.Errorf("jute: short buffer: %w", io.ErrUnexpectedEOF)
	// ErrTooLong means a buffer, string or vector length is negative (other
	// than -1, null), above the Decoder's maxLength, or larger than the bytes
	// that remain.
	ErrTooLong = errors.New("jute: length out of range")
	// ErrUnknownMultiOp means a multi request or response holds an op or
	// result type that the record does not know.
	ErrUnknownMultiOp = errors.New("jute: unknown multi op type")
)

// Decoder reads jute values from a byte slice. It never reads past the slice,
// never panics and never allocates more than the remaining input can back.
// The first error is sticky: every later read returns a zero value, and Err
// reports that first error.
type Decoder struct {
	b         []byte
	off       int
	maxLength int
	err       error
	borrow    Borrow
}

// Borrow says which decoded values may share memory with a Decoder's input
// instead of being copies of it. Borrowing saves an allocation and a copy
// per value; it is for a caller that knows how long the input stays
// unchanged, and that no value it keeps outlives that.
type Borrow uint8

const (
	// BorrowNone: every buffer and string is a copy (NewDecoder, Reset).
	BorrowNone Borrow = iota
	// BorrowBuffers: every buffer ([]byte) aliases the input, with its
	// capacity cut to its length, so an append copies instead of writing
	// into the input; strings are copies. The buffers are valid while the
	// input is not modified.
	BorrowBuffers
	// BorrowAll: buffers and strings alias the input. A string that
	// aliases memory which later changes breaks Go's immutable strings
	// (a map keyed by it corrupts): only for values dropped before the
	// input is modified or reused, such as a check that decodes a request
	// and keeps nothing.
	BorrowAll
)

// NewDecoder returns a Decoder over b. maxLength bounds every buffer, string
// and vector length (use jute.maxbuffer); maxLength <= 0 means
// DefaultMaxBuffer. The Decoder does not modify b, and values it returns do
// not alias b.
func NewDecoder(b []byte, maxLength int) *Decoder {
	d := &Decoder{}
	d.Reset(b, maxLength)
	return d
}

// Reset makes d read b from the start with a new maxLength and clears its
// error, so that one Decoder can be reused for many frames.
func (d *Decoder) Reset(b []byte, maxLength int) {
	d.ResetBorrowing(b, maxLength, BorrowNone)
}

// ResetBorrowing is Reset with the values d decodes from now on sharing the
// memory of b as borrow allows (Borrow). Errors, lengths and offsets are
// those of Reset's decoding of the same input, and so are the values.
func (d *Decoder) ResetBorrowing(b []byte, maxLength int, borrow Borrow) {
	if maxLength <= 0 {
		maxLength = DefaultMaxBuffer
	}
	*d = Decoder{b: b, maxLength: maxLength, borrow: borrow}
}

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset returns how many bytes have been consumed.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns how many bytes are left to read.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// fail records err unless an earlier error is already recorded.
func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// next consumes n bytes and returns them (aliasing the input), or nil and
// records ErrShortBuffer if fewer than n remain.
func (d *Decoder) next(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > d.Remaining() {
		d.fail(fmt.Errorf("%w: %s at offset %d needs %d bytes, %d remain",
			ErrShortBuffer, what, d.off, n, d.Remaining()))
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// ReadByte reads one byte. It satisfies io.ByteReader; the error is the
// Decoder's sticky error.
func (d *Decoder) ReadByte() (byte, error) {
	p := d.next(1, "byte")
	if p == nil {
		return 0, d.err
	}
	return p[0], nil
}

// ReadBool reads a boolean byte; like Java, any non-zero byte is true.
func (d *Decoder) ReadBool() bool {
	p := d.next(1, "boolean")
	return p != nil && p[0] != 0
}

// ReadInt reads a 4-byte big-endian int.
func (d *Decoder) ReadInt() int32 {
	p := d.next(4, "int")
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

// ReadLong reads an 8-byte big-endian long.
func (d *Decoder) ReadLong() int64 {
	p := d.next(8, "long")
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// readLength reads a buffer or string length prefix. It returns -1 for null
// and -2 after an error; otherwise a length that is within maxLength and
// within the remaining input.
func (d *Decoder) readLength(what string) int {
	at := d.off
	n := d.ReadInt()
	if d.err != nil {
		return -2
	}
	switch {
	case n == -1:
		return -1
	case n < 0 || int(n) > d.maxLength || int(n) > d.Remaining():
		d.fail(fmt.Errorf("%w: %s length %d at offset %d (max %d, %d bytes remain)",
			ErrTooLong, what, n, at, d.maxLength, d.Remaining()))
		return -2
	}
	return int(n)
}

// readCount reads a vector count. Every element takes at least minSize
// bytes, so a count the remaining input cannot back is rejected before
// anything is allocated. It returns -1 for null and -2 after an error.
func (d *Decoder) readCount(minSize int, what string) int {
	at := d.off
	n := d.ReadInt()
	if d.err != nil {
		return -2
	}
	switch {
	case n == -1:
		return -1
	case n < 0 || int(n) > d.maxLength || int(n) > d.Remaining()/minSize:
		d.fail(fmt.Errorf("%w: %s count %d at offset %d (max %d, %d bytes remain)",
			ErrTooLong, what, n, at, d.maxLength, d.Remaining()))
		return -2
	}
	return int(n)
}

// ReadBuffer reads a length-prefixed buffer. Length -1 (null) gives nil and
// length 0 a non-nil empty slice. The result is a copy of the input, or
// aliases it when the Decoder borrows buffers (Borrow).
func (d *Decoder) ReadBuffer() []byte {
	n := d.readLength("buffer")
	if n < 0 {
		return nil
	}
	p := d.next(n, "buffer")
	if p == nil {
		return nil
	}
	if d.borrow != BorrowNone {
		return p[:n:n]
	}
	out := make([]byte, n)
	copy(out, p)
	return out
}

// ReadString reads a length-prefixed ustring. Null (-1) gives "". The bytes
// are not checked for UTF-8 validity: Java clients send CESU-8 for
// characters outside the BMP. The result is a copy of the input, or aliases
// it when the Decoder borrows strings (BorrowAll).
func (d *Decoder) ReadString() string { return d.readCommonString(nil) }

// readCommonString is ReadString that returns common's constant, allocating
// nothing, when common (if not nil) knows the bytes read (an interned string
// is the same value as a copy).
func (d *Decoder) readCommonString(common func([]byte) (string, bool)) string {
	n := d.readLength("string")
	if n <= 0 {
		return ""
	}
	p := d.next(n, "string")
	if p == nil {
		return ""
	}
	if d.borrow == BorrowAll {
		return unsafe.String(&p[0], n)
	}
	if common != nil {
		if s, ok := common(p); ok {
			return s
		}
	}
	return string(p)
}

// ReadStringLike is ReadString that returns prev itself, allocating
// nothing, when the string read has prev's bytes: for a caller that decodes
// the same strings again and again into a reused record.
func (d *Decoder) ReadStringLike(prev string) string {
	n := d.readLength("string")
	if n <= 0 {
		return ""
	}
	p := d.next(n, "string")
	if p == nil {
		return ""
	}
	if string(p) == prev {
		return prev
	}
	if d.borrow == BorrowAll {
		return unsafe.String(&p[0], n)
	}
	return string(p)
}

// ReadStrings reads a vector<ustring>. Count -1 (null) gives nil and count 0
// a non-nil empty slice.
func (d *Decoder) ReadStrings() []string {
	n := d.readCount(4, "vector<ustring>")
	if n < 0 {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = d.ReadString()
	}
	if d.err != nil {
		return nil
	}
	return v
}

// ReadRecord decodes r from the input and returns the first error, if any.
func (d *Decoder) ReadRecord(r Record) error {
	if d.err != nil {
		return d.err
	}
	r.Decode(d)
	return d.err
}
