package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge means a frame length is negative or above the limit. The
// server closes the connection when it sees one.
var ErrFrameTooLarge = errors.New("jute: frame length out of range")

// ReadFrame reads one frame (a 4-byte big-endian length N, then N bytes)
// from r and returns its body, which aliases buf or a buffer that replaced
// it. Pass the previous body back as buf to reuse its memory. When buf is too
// small, the body grows as bytes arrive, at most 64 KiB ahead of them, so a
// peer that announces a large frame and stalls pins little memory.
//
// A clean end of input before the length gives io.EOF (unwrapped); an end
// inside the length or the body gives an error wrapping io.ErrUnexpectedEOF.
// A length below 0 or above maxFrame gives an error wrapping ErrFrameTooLarge
// and reads nothing more.
func ReadFrame(r io.Reader, buf []byte, maxFrame int) ([]byte, error) {
	if cap(buf) < 4 {
		buf = make([]byte, 4, 512)
	}
	hdr := buf[:4]
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err // io.EOF or io.ErrUnexpectedEOF from ReadFull, or a read error
	}
	n := int32(binary.BigEndian.Uint32(hdr))
	if n < 0 || int64(n) > int64(maxFrame) {
		return nil, fmt.Errorf("%w: length %d (max %d)", ErrFrameTooLarge, n, maxFrame)
	}
	body, err := readBody(r, buf[:0], int(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("jute: reading %d-byte frame body after %d bytes: %w", n, len(body), err)
	}
	return body, nil
}

// growStep bounds how far ReadFrame grows its buffer ahead of the bytes that
// have arrived.
const growStep = 64 << 10

// readBody appends n bytes from r to body (which must be empty), growing it
// at most growStep beyond the data received so far. It returns what it read.
func readBody(r io.Reader, body []byte, n int) ([]byte, error) {
	for len(body) < n {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(n, max(2*cap(body), growStep)))
			copy(grown, body)
			body = grown
		}
		k, err := io.ReadFull(r, body[len(body):min(cap(body), n)])
		body = body[:len(body)+k]
		if err != nil {
			return body, err
		}
	}
	return body, nil
}

// Marshal returns r's encoding, without a frame length.
func Marshal(r Record) []byte {
	e := NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

// Unmarshal decodes r from b with DefaultMaxBuffer as the length limit.
// Bytes after the record are ignored.
func Unmarshal(b []byte, r Record) error {
	if err := NewDecoder(b, DefaultMaxBuffer).ReadRecord(r); err != nil {
		return fmt.Errorf("jute: decoding %T: %w", r, err)
	}
	return nil
}
