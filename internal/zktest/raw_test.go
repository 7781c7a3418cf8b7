package zktest

import (
	"testing"
	"time"

	"github.com/zkraft/zkraft/jute"
)

// TestRawConn drives the raw client through a handshake, a create2, a
// watched read, the notification it triggers and closeSession.
func TestRawConn(t *testing.T) {
	for _, target := range Targets() {
		t.Run(string(target), func(t *testing.T) {
			s := Start(t, target, Options{})
			c, resp := DialRaw(t, s.Addr, 0, nil, 6000, true)
			if resp.SessionID == 0 || resp.TimeOut != 6000 || len(resp.Passwd) != 16 || !resp.HasReadOnly {
				t.Fatalf("handshake = %+v", resp)
			}
			var cr jute.Create2Response
			hdr, err := c.Call(jute.OpCreate2, &jute.CreateRequest{Path: "/raw", Data: []byte("v"),
				ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, &cr)
			if err != nil || hdr.Err != 0 || cr.Path != "/raw" || cr.Stat.Czxid != hdr.Zxid {
				t.Fatalf("create2 = %+v %+v, %v", hdr, cr, err)
			}
			var gd jute.GetDataResponse
			if hdr, err := c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/raw", Watch: true}, &gd); err != nil || hdr.Err != 0 || string(gd.Data) != "v" {
				t.Fatalf("getData = %+v %+v, %v", hdr, gd, err)
			}
			if hdr, err := c.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/raw", Data: []byte("w"), Version: -1}, &jute.StatResponse{}); err != nil || hdr.Err != 0 {
				t.Fatalf("setData = %+v, %v", hdr, err)
			}
			ev, err := c.WaitEvent(5 * time.Second)
			if err != nil || ev != (jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/raw"}) {
				t.Fatalf("event = %+v, %v", ev, err)
			}
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
			if hdr, err := c.CloseSession(); err != nil || hdr.Err != 0 {
				t.Fatalf("closeSession = %+v, %v", hdr, err)
			}
			_, again := DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, 6000, false)
			if again.SessionID != 0 || again.TimeOut != 0 || again.HasReadOnly {
				t.Fatalf("reconnect to a closed session = %+v", again)
			}
		})
	}
}
