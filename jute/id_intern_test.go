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

// TestCreateDecodeReusingACL: DecodeReusing decodes what Decode does, into
// the ACL array it is given when it has room, and allocates it only then.
func TestCreateDecodeReusingACL(t *testing.T) {
	for _, want := range []CreateRequest{
		{Path: "/a/lock-", Data: []byte("x"), ACL: []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}, Flags: 3},
		{Path: "/b", ACL: []ACL{{Perms: 1, ID: Id{Scheme: "auth"}}, {Perms: 31, ID: Id{Scheme: "world", ID: "anyone"}}}},
		{Path: "/c", ACL: []ACL{}},
		{Path: "/d"}, // a null vector
	} {
		enc := NewEncoder(nil)
		enc.WriteRecord(&want)
		var plain CreateRequest
		require.NoError(t, Unmarshal(enc.Bytes(), &plain))
		var reused CreateRequest
		var d Decoder
		d.Reset(enc.Bytes(), 1<<20)
		require.NoError(t, reused.DecodeReusing(&d))
		require.Equal(t, plain, reused)
		if len(want.ACL) == 0 {
			continue
		}
		array := &reused.ACL[0]
		allocs := testing.AllocsPerRun(100, func() {
			// Borrowing: the path and data are views, so what is left
			// to allocate is the ACL vector.
			d.ResetBorrowing(enc.Bytes(), 1<<20, BorrowAll)
			if reused.DecodeReusing(&d) != nil {
				t.Fatal("decode failed")
			}
		})
		require.Equal(t, plain, reused)
		require.Same(t, array, &reused.ACL[0], "the ACL array is reused")
		require.Zero(t, allocs, "decoding %q again", want.Path)
	}
}
