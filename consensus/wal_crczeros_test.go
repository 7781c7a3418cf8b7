package consensus

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCRC32CZeros checks crc32cZeros against crc32.Update over real zero
// bytes, for lengths around the powers of two it composes and random
// seeds (0 and ^0 included: the register inversions).
func TestCRC32CZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 511, 512, 4095, 4096, 4097, 65535, 1<<20 + 3, 3<<20 - 1}
	for range 20 {
		lengths = append(lengths, rng.IntN(1<<16))
	}
	zeros := make([]byte, 3<<20)
	for _, n := range lengths {
		for _, seed := range []uint32{0, ^uint32(0), 0x12345678, rng.Uint32(), rng.Uint32()} {
			t.Run(fmt.Sprintf("%d/%08x", n, seed), func(t *testing.T) {
				require.Equal(t, crc32.Update(seed, crc32c, zeros[:n]), crc32cZeros(seed, n))
			})
		}
	}
	// After non-zero data: the state the scan extends.
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, n := range []int{1, 100, 4096, 1 << 20} {
		want := crc32.Update(0, crc32c, append(append([]byte(nil), data...), zeros[:n]...))
		require.Equal(t, want, crc32cZeros(crc32.Update(0, crc32c, data), n), "%d zeros", n)
	}
	// Lengths too large for a buffer: n zeros then m zeros are n+m zeros.
	for _, n := range []int{1 << 30, 1<<30 + 12345, 1<<40 + 7} {
		seed := rng.Uint32()
		require.Equal(t, crc32cZeros(crc32cZeros(seed, n), 3<<20-1), crc32cZeros(seed, n+3<<20-1), "%d zeros", n)
	}
}
