package consensus

import "hash/crc32"

// crc32cZeros returns crc32.Update(crc, crc32c, make([]byte, n)) without
// reading n bytes: in O(log n) operations on 32-bit words. The torn-tail
// scan (nextValidRecord) uses it for the part of a candidate record that
// lies in the zeros after the last non-zero byte of a segment, so that a
// fake header claiming megabytes of a preallocated segment's zeros costs
// only its non-zero bytes.
//
// Why it works: crc32.Update(c, tab, p) is ^raw(^c, p), where raw runs the
// bare (reflected) CRC register over p. Each input bit is xor'd into the
// register's low bit, then the register shifts right by one and, if the
// bit shifted out was 1, is xor'd with the polynomial. For a zero input
// bit that step is a linear map Z of the register over GF(2) (no input
// enters it), so n zero bytes map the register r to Z^(8n) r. Z^(8·2^k)
// for every k is precomputed (crc32cZeroOps) by squaring; Z^(8n) is the
// product of those for the set bits of n, in any order (powers of one
// map commute).
func crc32cZeros(crc uint32, n int) uint32 {
	if n < 0 {
		panic("crc32cZeros: negative length")
	}
	r := ^crc
	for k := 0; n > 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			r = crc32cZeroOps[k].apply(r)
		}
	}
	return ^r
}

// gf2Op is a linear map of 32-bit words over GF(2) (a 32x32 bit matrix):
// op[i] is the image of the word with only bit i set.
type gf2Op [32]uint32

// apply returns the image of v: the xor of the images of its set bits.
func (op *gf2Op) apply(v uint32) uint32 {
	var r uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			r ^= op[i]
		}
	}
	return r
}

// then returns the map that applies op and then next.
func (op *gf2Op) then(next *gf2Op) gf2Op {
	var out gf2Op
	for i, v := range op {
		out[i] = next.apply(v)
	}
	return out
}

// crc32cZeroOps[k] maps the bare CRC32C register before 2^k zero bytes to
// the register after them.
var crc32cZeroOps = func() (ops [63]gf2Op) {
	// One zero bit: bit 0 shifts out and brings in the polynomial (the
	// reflected Castagnoli polynomial, which hash/crc32 uses), every other
	// bit moves down by one.
	var op gf2Op
	op[0] = crc32.Castagnoli
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	for range 3 { // 2, 4, 8 bits: one byte
		op = op.then(&op)
	}
	for k := range ops {
		ops[k] = op
		op = op.then(&op)
	}
	return ops
}()
