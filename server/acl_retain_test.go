package server

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestWriteDecoderDropsLargeACLArray: one create with a huge ACL must not
// leave its decoded array held by the connection's decoder for its life.
func TestWriteDecoderDropsLargeACLArray(t *testing.T) {
	// Within the default jute.maxbuffer: 12 bytes an entry on the wire,
	// 40 in the decoded array.
	acl := make([]jute.ACL, (jute.DefaultMaxBuffer-64)/12)
	body := jute.Marshal(&jute.CreateRequest{Path: "/x", ACL: acl})
	var wd writeDecoder
	require.Zero(t, wd.check(jute.OpCreate, body, jute.DefaultMaxBuffer))
	// Any later write of the connection (here a delete) keeps it too.
	require.Zero(t, wd.check(jute.OpDelete, jute.Marshal(&jute.DeleteRequest{Path: "/x", Version: -1}), jute.DefaultMaxBuffer))
	held := cap(wd.create.ACL) * int(unsafe.Sizeof(jute.ACL{}))
	require.Less(t, held, 64<<10, "a %d-byte request leaves %d bytes held", len(body), held)

	// Apply's decoder never clears: the next create drops the huge array.
	var apply writeDecoder
	_, code := apply.decode(jute.OpCreate, body, len(body), jute.BorrowBuffers)
	require.Zero(t, code)
	small := jute.Marshal(&jute.CreateRequest{Path: "/y", ACL: acl[:1]})
	_, code = apply.decode(jute.OpCreate, small, len(small), jute.BorrowBuffers)
	require.Zero(t, code)
	held = cap(apply.create.ACL) * int(unsafe.Sizeof(jute.ACL{}))
	require.Less(t, held, 64<<10, "apply's decoder holds %d bytes after a small create", held)
}
