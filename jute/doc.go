// Package jute implements ZooKeeper's binary record format ("jute") and every
// record of the ZooKeeper 3.8 client protocol.
//
// Encoding rules (all integers big-endian, records have no tags or length):
//   - int 4 bytes, long 8 bytes, boolean 1 byte, byte 1 byte;
//   - buffer: int length then bytes, length -1 = null (a nil []byte);
//   - ustring: int length then UTF-8 bytes, length -1 = null (decoded as "");
//   - vector: int count then elements, count -1 = null (a nil slice).
//
// Every record type implements Record (Encode appends to an Encoder, Decode
// reads from a Decoder). Frames (a 4-byte length, then the body) are read
// with ReadFrame and written with Encoder.StartFrame/EndFrame. Multi
// requests and responses are a list of MultiHeader + record pairs ended by
// the header {-1, true, -1}; MultiRequest.Decode rejects op types it does
// not know with ErrUnknownMultiOp.
//
// Invariants:
//   - Decoding never panics and never allocates more than the input can back:
//     every length is checked against the bytes that remain and against the
//     Decoder's maxLength before anything is allocated; a vector count is
//     checked against the smallest size its elements can have.
//   - The first decoding error is sticky and wraps ErrShortBuffer (which wraps
//     io.ErrUnexpectedEOF), ErrTooLong or ErrUnknownMultiOp.
//   - Decoded values never alias the input, unless the Decoder was told to
//     borrow (Decoder.ResetBorrowing): then its buffers, and with BorrowAll
//     its strings, share the input's memory, and are otherwise equal to
//     what a Decoder that copies returns.
//   - decode(encode(r)) == r for every record (nil and empty buffers and
//     vectors are kept apart). The optional trailing readOnly byte of the
//     handshake records is written only when HasReadOnly is set.
//   - Encoding into an Encoder whose buffer is large enough does not allocate.
//
// The package depends on the standard library only. It is safe for concurrent
// use as long as an Encoder or Decoder is not shared between goroutines.
package jute
