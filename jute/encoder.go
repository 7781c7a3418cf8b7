package jute

import "encoding/binary"

// Encoder appends jute-encoded values to a byte slice. The zero value is
// ready to use. Writes never fail: the buffer grows as needed.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf. Pass buf[:0] to reuse
// the memory of an earlier buffer.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes. The slice aliases the Encoder's buffer
// and is valid until the next write or Reset.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of encoded bytes.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the Encoder and keeps its capacity.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// WriteByte appends one byte. It always returns nil; the error result only
// satisfies io.ByteWriter.
func (e *Encoder) WriteByte(b byte) error {
	e.buf = append(e.buf, b)
	return nil
}

// WriteBool appends a boolean as one byte, 0 or 1.
func (e *Encoder) WriteBool(v bool) {
	var b byte
	if v {
		b = 1
	}
	e.buf = append(e.buf, b)
}

// WriteInt appends a 4-byte big-endian int.
func (e *Encoder) WriteInt(v int32) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v))
}

// WriteLong appends an 8-byte big-endian long.
func (e *Encoder) WriteLong(v int64) {
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
}

// WriteBuffer appends a length-prefixed buffer; nil is written as length -1
// (null) and a non-nil empty slice as length 0.
func (e *Encoder) WriteBuffer(b []byte) {
	if b == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// WriteString appends a length-prefixed ustring. Go strings cannot be null,
// so the empty string is written as length 0.
func (e *Encoder) WriteString(s string) {
	e.WriteInt(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// WriteStrings appends a vector<ustring>; nil is written as count -1.
func (e *Encoder) WriteStrings(v []string) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for _, s := range v {
		e.WriteString(s)
	}
}

// WriteRecord appends r's fields. Passing a pointer to a local record
// through the Record interface makes it escape to the heap; on hot paths
// call the concrete record's Encode method instead.
func (e *Encoder) WriteRecord(r Record) { r.Encode(e) }

// StartFrame reserves a 4-byte frame length and returns its offset, to be
// passed to EndFrame once the frame body has been written.
func (e *Encoder) StartFrame() int {
	start := len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	return start
}

// EndFrame patches the length reserved by StartFrame at offset start with the
// number of bytes written after the 4 length bytes.
func (e *Encoder) EndFrame(start int) {
	n := len(e.buf) - start - 4
	binary.BigEndian.PutUint32(e.buf[start:start+4], uint32(int32(n)))
}
