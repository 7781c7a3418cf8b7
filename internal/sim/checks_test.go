package sim

import (
	"strings"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

// TestFifoChecker feeds the fifo checker the replies of one connection, in
// order, and checks what it reports: a write whose zxid is not above every
// zxid an earlier reply of the connection carried or showed overtook that
// request (it was applied before the request was answered).
func TestFifoChecker(t *testing.T) {
	type reply struct {
		op    int32
		err   int32
		zxid  int64 // reply header
		mzxid int64 // stat shown (setData, getData, exists)
	}
	tests := []struct {
		name    string
		replies []reply
		want    string // part of the failure; "" none
	}{
		{name: "write after a read of an older state", replies: []reply{
			{op: jute.OpGetData, zxid: 5, mzxid: 3}, {op: jute.OpSetData, zxid: 6, mzxid: 6}}},
		{name: "write after a read that showed it: overtook the read", replies: []reply{
			{op: jute.OpGetData, zxid: 5, mzxid: 5}, {op: jute.OpSetData, zxid: 5, mzxid: 5}},
			want: "overtook"},
		{name: "write after a sync that carried its zxid: overtook the sync", replies: []reply{
			{op: jute.OpSync, zxid: 7}, {op: jute.OpCreate, zxid: 7}},
			want: "overtook"},
		{name: "write after an exists that showed a later change", replies: []reply{
			{op: jute.OpExists, zxid: 0, mzxid: 9}, {op: jute.OpDelete, zxid: 8}},
			want: "overtook"},
		{name: "writes in order", replies: []reply{
			{op: jute.OpSetData, zxid: 4, mzxid: 4}, {op: jute.OpSetData, zxid: 5, mzxid: 5}}},
		{name: "a refused write carries the applied zxid", replies: []reply{
			{op: jute.OpGetData, zxid: 5, mzxid: 5}, {op: jute.OpSetData, err: jute.ErrSessionExpired, zxid: 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{}
			w.chk = newChecks(w)
			c := &client{idx: 1, connID: 2, w: w}
			for i, r := range tt.replies {
				cl := &call{xid: uint64(i + 1), op: r.op, path: "/x"}
				w.chk.fifoReply(c, cl, &response{err: r.err, zxid: r.zxid, stat: jute.Stat{Mzxid: r.mzxid}})
			}
			var got string
			for _, f := range w.failed {
				got += f.String()
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("failures %q, want one with %q", got, tt.want)
			}
		})
	}
}
