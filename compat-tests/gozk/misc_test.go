package gozk

import (
	"encoding/binary"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestPing checks that a ping is answered with xid -2 whatever xid it
// carried, the server's last zxid, and no body.
func TestPing(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r := dial(t, s)
		cr := rawCreate(t, r, "/"+prefixName(t)+"-", nil, jute.FlagEphemeralSequential)
		for _, xid := range []int32{jute.XidPing, 55} {
			noErr(t, r.Send(xid, jute.OpPing, nil), "send ping")
			hdr, body, err := r.Recv()
			noErr(t, err, "ping reply")
			eq(t, hdr.Xid, jute.XidPing, "ping reply xid (ping sent with xid %d)", xid)
			eq(t, hdr.Err, 0, "ping err")
			isTrue(t, hdr.Zxid >= cr.Stat.Czxid, "ping reply zxid %#x is the last zxid (>= %#x)", hdr.Zxid, cr.Stat.Czxid)
			eq(t, len(body), 0, "ping reply body")
		}
		// Reads carry the server's last zxid too.
		hdr, err := r.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
		noErr(t, err, "exists")
		isTrue(t, hdr.Zxid >= cr.Stat.Czxid, "read reply zxid %#x >= the session's last write %#x", hdr.Zxid, cr.Stat.Czxid)
	})
}

// TestMalformedRequests checks the handling of bad input after the
// handshake: an undecodable body gets -5 and the connection stays open; a
// frame length above jute.maxbuffer or negative closes the connection.
func TestMalformedRequests(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r := dial(t, s)
		// getData with no body at all.
		hdr, err := r.Call(jute.OpGetData, nil, nil)
		noErr(t, err, "getData without a body")
		eq(t, hdr.Err, jute.ErrMarshallingError, "err of a truncated request")
		// create whose path length runs past the frame.
		bad := []byte{0, 0, 0, 12, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0x10, 0}
		noErr(t, r.WriteRaw(bad), "write a truncated create")
		hdr, _, err = r.Recv()
		noErr(t, err, "reply to a truncated create")
		eq(t, hdr.Xid, 7, "xid")
		eq(t, hdr.Err, jute.ErrMarshallingError, "err of a truncated create")
		// Still usable.
		callOK(t, r, jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})

		for _, length := range []int32{jute.DefaultMaxBuffer + 1, -5} {
			c := dial(t, s)
			frame := binary.BigEndian.AppendUint32(nil, uint32(length))
			noErr(t, c.WriteRaw(append(frame, 0, 0, 0, 1, 0, 0, 0, 4)), "write a bad frame length")
			noErr(t, c.ExpectClosed(eventTimeout), "connection after a frame of length %d", length)
		}
		// A frame of exactly jute.maxbuffer bytes is accepted: a setData whose
		// data fills it fails only because the node is missing.
		c := dial(t, s)
		path := "/" + prefixName(t) + "/missing"
		overhead := 8 + 4 + len(path) + 4 + 4 // header, path, data length, version
		data := make([]byte, jute.DefaultMaxBuffer-overhead)
		eq(t, call(t, c, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: data, Version: -1}, nil), jute.ErrNoNode, "setData in a frame of jute.maxbuffer bytes")
	})
}

// TestSASLWithoutSetup checks that a SASL packet on a server without SASL
// gets Ok and a null token.
func TestSASLWithoutSetup(t *testing.T) {
	onShared(t, func(t *testing.T, s *zktest.Server) {
		r := dial(t, s)
		resp := jute.BufferRecord{Token: []byte("not nil")}
		callOK(t, r, jute.OpSASL, &jute.BufferRecord{Token: []byte("hello")}, &resp)
		isTrue(t, resp.Token == nil, "null token (got %q)", resp.Token)
	})
}
