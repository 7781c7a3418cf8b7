package gozk

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// pipelined is one request of a pipelining test and what its reply must be.
type pipelined struct {
	xid     int32
	op      int32
	req     jute.Record
	path    string
	wantErr int32
	wantVer int32  // setData, getData, exists: the node's version
	data    string // getData: the node's data
}

// TestPipelining sends 200 interleaved create/setData/getData/exists
// requests back to back in one write, then reads the replies: they come in
// the order sent, zxids never decrease, and every read sees every earlier
// write of the session.
func TestPipelining(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r := dial(t, s)
		p := "/" + prefixName(t)
		c, _ := s.Connect(t)
		deleteTree(t, c, p)
		rawCreate(t, r, p, nil, jute.FlagPersistent)
		const nodes = 5
		version := make([]int32, nodes)
		data := make([]string, nodes)
		for i := range nodes {
			rawCreate(t, r, fmt.Sprintf("%s/n%d", p, i), nil, jute.FlagPersistent)
		}

		rng := rand.New(rand.NewPCG(1, 2))
		var reqs []pipelined
		for i := range 200 {
			n := rng.IntN(nodes)
			path := fmt.Sprintf("%s/n%d", p, n)
			q := pipelined{xid: int32(1000 + i), path: path}
			switch k := rng.IntN(10); {
			case k < 3:
				version[n]++
				data[n] = fmt.Sprintf("d%d", i)
				q.op, q.req = jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte(data[n]), Version: version[n] - 1}
			case k < 6:
				q.op, q.req = jute.OpGetData, &jute.PathWatchRequest{Path: path}
				q.data = data[n]
			case k < 8:
				q.op, q.req = jute.OpExists, &jute.PathWatchRequest{Path: path}
			case k < 9:
				q.path = fmt.Sprintf("%s/c%d", path, i)
				q.op, q.req = jute.OpCreate, &jute.CreateRequest{Path: q.path, ACL: juteOpen}
			default: // a stale version: fails without disturbing the order
				q.op, q.req = jute.OpSetData, &jute.SetDataRequest{Path: path, Version: version[n] + 7}
				q.wantErr = jute.ErrBadVersion
			}
			q.wantVer = version[n]
			reqs = append(reqs, q)
		}
		e := jute.NewEncoder(nil)
		for _, q := range reqs {
			start := e.StartFrame()
			e.WriteRecord(&jute.RequestHeader{Xid: q.xid, Type: q.op})
			e.WriteRecord(q.req)
			e.EndFrame(start)
		}
		noErr(t, r.WriteRaw(e.Bytes()), "write 200 requests")

		var lastZxid int64
		for _, q := range reqs {
			hdr, body, err := r.Recv()
			noErr(t, err, "reply to xid %d", q.xid)
			eq(t, hdr.Xid, q.xid, "reply xid (replies in request order)")
			eq(t, hdr.Err, q.wantErr, "err of xid %d (op %d on %s)", q.xid, q.op, q.path)
			isTrue(t, hdr.Zxid >= lastZxid, "reply zxid %#x does not go back (was %#x)", hdr.Zxid, lastZxid)
			lastZxid = hdr.Zxid
			if q.wantErr != 0 {
				continue
			}
			switch q.op {
			case jute.OpSetData, jute.OpExists:
				var sr jute.StatResponse
				noErr(t, jute.Unmarshal(body, &sr), "stat of xid %d", q.xid)
				checkVersion(t, q, sr.Stat.Version)
				if q.op == jute.OpSetData {
					eq(t, sr.Stat.Mzxid, hdr.Zxid, "setData mzxid = reply zxid")
				}
			case jute.OpGetData:
				var gd jute.GetDataResponse
				noErr(t, jute.Unmarshal(body, &gd), "getData of xid %d", q.xid)
				checkVersion(t, q, gd.Stat.Version)
				eq(t, string(gd.Data), q.data, "data seen by getData xid %d on %s", q.xid, q.path)
			case jute.OpCreate:
				var cr jute.CreateResponse
				noErr(t, jute.Unmarshal(body, &cr), "create of xid %d", q.xid)
				eq(t, cr.Path, q.path, "created path")
			}
		}
	})
}

// checkVersion checks the version a pipelined request saw. A session's
// requests take effect one after the other in the order sent, so a read
// sees exactly the writes the session sent before it: none of its later
// ones (nobody else writes these nodes).
func checkVersion(t *testing.T, q pipelined, got int32) {
	t.Helper()
	switch {
	case got < q.wantVer:
		t.Fatalf("xid %d (op %d on %s) saw version %d: it missed an earlier write of the session (want %d)", q.xid, q.op, q.path, got, q.wantVer)
	case got > q.wantVer:
		t.Fatalf("xid %d (op %d on %s) saw version %d: it saw a write the session sent after it (want %d)", q.xid, q.op, q.path, got, q.wantVer)
	}
}

// TestEventBeforeRead checks that a watching connection receives the event
// of a change before the reply of any read that shows the change: reads
// pipelined before and after another session's write all come back in
// order, and the notification precedes the first reply with the new data.
func TestEventBeforeRead(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		c, _ := s.Connect(t)
		p := prefix(t, c)
		n := p + "/w"
		mustCreate(t, c, n, []byte("old"), 0)
		w := dial(t, s)
		x := dial(t, s)
		rawGetData(t, w, n, true)

		const batch = 50
		send := func(from int32) {
			for i := range int32(batch) {
				noErr(t, w.Send(from+i, jute.OpGetData, &jute.PathWatchRequest{Path: n}), "send getData")
			}
		}
		send(100)
		callOK(t, x, jute.OpSetData, &jute.SetDataRequest{Path: n, Data: []byte("new"), Version: -1}, &jute.StatResponse{})
		send(200)

		seenEvent, seenNew := false, false
		for replies := 0; replies < 2*batch; {
			hdr, body, err := w.Recv()
			noErr(t, err, "frame %d", replies)
			if hdr.Xid == jute.XidNotification {
				isTrue(t, !seenEvent, "a single notification")
				// 3.8 sends zxid -1 in notifications (3.9 sends the change's).
				eq(t, hdr, jute.ReplyHeader{Xid: -1, Zxid: -1, Err: 0}, "notification header")
				eq(t, w.Events()[0], ev(jute.EventNodeDataChanged, n), "notification")
				seenEvent = true
				continue
			}
			want := int32(100 + replies)
			if replies >= batch {
				want = int32(200 + replies - batch)
			}
			eq(t, hdr.Xid, want, "reply xid")
			var gd jute.GetDataResponse
			noErr(t, jute.Unmarshal(body, &gd), "getData")
			switch string(gd.Data) {
			case "new":
				isTrue(t, seenEvent, "notification before the first read showing the change (xid %d)", hdr.Xid)
				seenNew = true
			case "old":
				isTrue(t, !seenNew, "reads never go back to the old data (xid %d)", hdr.Xid)
				isTrue(t, replies < batch, "a read sent after the write acknowledged shows it (xid %d)", hdr.Xid)
			default:
				t.Fatalf("unexpected data %q", gd.Data)
			}
			replies++
		}
		isTrue(t, seenEvent && seenNew, "event and new data seen")
	})
}

// TestPipelinedHandshake sends the ConnectRequest and three requests in one
// write: the server answers the handshake first, then the requests in order.
func TestPipelinedHandshake(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
		noErr(t, err, "dial")
		defer conn.Close()
		noErr(t, conn.SetDeadline(time.Now().Add(eventTimeout)), "deadline")
		e := jute.NewEncoder(nil)
		frame := func(recs ...jute.Record) {
			start := e.StartFrame()
			for _, r := range recs {
				e.WriteRecord(r)
			}
			e.EndFrame(start)
		}
		frame(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
		frame(&jute.RequestHeader{Xid: 1, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/zookeeper"})
		frame(&jute.RequestHeader{Xid: 2, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/zookeeper/config"})
		frame(&jute.RequestHeader{Xid: 3, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/no/such/node"})
		_, err = conn.Write(e.Bytes())
		noErr(t, err, "write")

		br := bufio.NewReader(conn)
		body, err := jute.ReadFrame(br, nil, 1<<20)
		noErr(t, err, "ConnectResponse")
		var cr jute.ConnectResponse
		noErr(t, jute.Unmarshal(body, &cr), "decode ConnectResponse")
		isTrue(t, cr.SessionID != 0, "session granted")
		eq(t, len(body), 36, "ConnectResponse length without the readOnly byte")
		for i, wantErr := range []int32{0, 0, jute.ErrNoNode} {
			body, err := jute.ReadFrame(br, nil, 1<<20)
			noErr(t, err, "reply %d", i+1)
			var hdr jute.ReplyHeader
			noErr(t, jute.Unmarshal(body, &hdr), "reply header")
			eq(t, hdr.Xid, int32(i+1), "xid")
			eq(t, hdr.Err, wantErr, "err of xid %d", i+1)
			if wantErr != 0 {
				eq(t, len(body), 16, "an error reply has no body")
			}
		}
	})
}
