// Package jute implements ZooKeeper's binary record format ("jute") and every
// record of the ZooKeeper 3.8 client protocol.
//
// Encoding rules (all integers big-endian, records have no tags or length):
//   - int 4 bytes, long 8 bytes, boolean 1 byte, byte 1 byte;
//   - buffer: int length then bytes, length -1 = null (a nil []byte);
//   - ustring: int length then UTF-8 bytes, length -1 = null (decoded as "");
//   - vector: int count then elements, count -1 = null (a nil slice).
//
// Invariants:
//   - Decoding never panics and never allocates more than the input can back:
//     every length is checked against the bytes that remain and against the
//     Decoder's MaxLength before anything is allocated.
//   - decode(encode(r)) == r for every record (nil and empty buffers and
//     vectors are kept apart).
//
// The package depends on the standard library only. It is safe for concurrent
// use as long as an Encoder or Decoder is not shared between goroutines.
package jute
