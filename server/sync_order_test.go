package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestSyncOrdersLaterWrites pipelines a sync and writes on one connection: a
// write sent after a sync is applied after the sync was answered, as in
// ZooKeeper, where a session's requests go through in order. Reply zxids
// therefore never go backwards on the connection (the Java client takes the
// zxid of each reply as its last seen zxid). Found by FuzzRequestSequence:
// a write overtook the sync's read barrier and got a zxid below the sync's.
func TestSyncOrdersLaterWrites(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s)
	c.SetTimeout(10 * time.Second)
	const writes = 50
	for round := range 5 {
		var raw []byte
		xid := int32(round * 1000)
		raw = append(raw, frame(append(header(xid, jute.OpSync), jute.Marshal(&jute.PathRequest{Path: "/"})...))...)
		for i := 1; i <= writes; i++ {
			raw = append(raw, frame(append(header(xid+int32(i), jute.OpCreate), jute.Marshal(&jute.CreateRequest{
				Path: fmt.Sprintf("/n%d-%d", round, i), ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})...))...)
		}
		require.NoError(t, c.WriteRaw(raw))
		var last int64
		for i := 0; i <= writes; i++ {
			hdr, _, err := c.Recv()
			require.NoError(t, err)
			require.Equal(t, xid+int32(i), hdr.Xid, "replies in request order")
			require.Zero(t, hdr.Err)
			require.GreaterOrEqual(t, hdr.Zxid, last, "round %d: reply to xid %d has zxid %#x after %#x", round, hdr.Xid, hdr.Zxid, last)
			if i > 0 {
				require.Greater(t, hdr.Zxid, last, "round %d: write xid %d applied at or before the sync's zxid", round, hdr.Xid)
			}
			last = hdr.Zxid
		}
	}
}
