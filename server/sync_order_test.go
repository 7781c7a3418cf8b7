package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestRepliesBeforeWritesKeepZxidOrder pipelines, on one connection,
// requests whose reply zxid is read when the reply is written (a sync, a
// write refused before it is proposed) each followed by writes. A write
// sent after such a request is applied after it was answered, as in
// ZooKeeper, where a session's requests go through in order: reply zxids
// never go backwards on a connection (the Java client takes each reply's
// zxid as its last seen zxid), and a write's zxid is above the earlier
// reply's. Found by FuzzRequestSequence: writes overtook a sync's read
// barrier, and a refused setACL's reply, and were answered with lower
// zxids than the reply before them.
func TestRepliesBeforeWritesKeepZxidOrder(t *testing.T) {
	world := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		name    string
		first   func(xid int32) []byte // the request before the writes
		wantErr int32                  // its reply's error code
	}{
		{"sync", func(xid int32) []byte {
			return frame(append(header(xid, jute.OpSync), jute.Marshal(&jute.PathRequest{Path: "/"})...))
		}, 0},
		{"write refused before proposing", func(xid int32) []byte {
			return frame(append(header(xid, jute.OpSetData), 0xff, 0xff, 0xff, 0x7f))
		}, jute.ErrMarshallingError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, nil)
			c := dial(t, s)
			c.SetTimeout(10 * time.Second)
			const rounds, writes = 20, 3
			var raw []byte
			for r := range rounds {
				xid := int32(r * 10)
				raw = append(raw, tt.first(xid)...)
				for i := 1; i <= writes; i++ {
					raw = append(raw, frame(append(header(xid+int32(i), jute.OpCreate), jute.Marshal(&jute.CreateRequest{
						Path: fmt.Sprintf("/n%d-%d", r, i), ACL: world})...))...)
				}
			}
			require.NoError(t, c.WriteRaw(raw))
			var last int64
			for r := range rounds {
				for i := 0; i <= writes; i++ {
					xid := int32(r*10 + i)
					hdr, _, err := c.Recv()
					require.NoError(t, err)
					require.Equal(t, xid, hdr.Xid, "replies in request order")
					if i == 0 {
						require.Equal(t, tt.wantErr, hdr.Err)
					} else {
						require.Zero(t, hdr.Err)
					}
					require.GreaterOrEqual(t, hdr.Zxid, last, "reply to xid %d has zxid %#x after %#x", xid, hdr.Zxid, last)
					if i == 1 {
						require.Greater(t, hdr.Zxid, last, "write xid %d applied at or before the zxid of the reply before it", xid)
					}
					last = hdr.Zxid
				}
			}
		})
	}
}
