package jute

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdDecodeCommonStringsAllocateNothing: the schemes and ids most ACLs
// carry decode to constants, other values to copies, and each decodes to
// its own text.
func TestIdDecodeCommonStringsAllocateNothing(t *testing.T) {
	for _, tc := range []struct {
		id     Id
		allocs float64
	}{
		{Id{Scheme: "world", ID: "anyone"}, 0},
		{Id{Scheme: "auth", ID: ""}, 0},
		{Id{Scheme: "ip", ID: "127.0.0.1"}, 1},
		{Id{Scheme: "digest", ID: "user:hash="}, 1},
		{Id{Scheme: "worlds", ID: "anyone2"}, 2},
	} {
		enc := NewEncoder(nil)
		enc.WriteRecord(&tc.id)
		b := enc.Bytes()
		var got Id
		var d Decoder
		allocs := testing.AllocsPerRun(100, func() {
			d.Reset(b, 1<<20)
			if err := got.Decode(&d); err != nil {
				t.Fatal(err)
			}
		})
		require.Equal(t, tc.id, got)
		require.Equal(t, tc.allocs, allocs, "allocations decoding %v", tc.id)
	}
}
