package server

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestEntryRoundTrip(t *testing.T) {
	in := entry{Proposer: 3, ReqID: 1<<40 | 7, Time: 1700000000123, SessionID: 0x100000001230000, Cxid: 42,
		Type: jute.OpCreate, Auth: []jute.Id{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "bob:x"}},
		Body: []byte{1, 2, 3}}
	enc := jute.NewEncoder(nil)
	in.Encode(enc)
	var out entry
	require.NoError(t, out.Decode(jute.NewDecoder(enc.Bytes(), 0)))
	require.Equal(t, in, out)

	// Every truncation fails cleanly.
	b := enc.Bytes()
	for i := 0; i < len(b); i++ {
		var e entry
		require.Error(t, e.Decode(jute.NewDecoder(b[:i], 0)), "prefix %d", i)
	}
}

func TestEntryRejectsUnknownVersion(t *testing.T) {
	enc := jute.NewEncoder(nil)
	(&entry{}).Encode(enc)
	b := enc.Bytes()
	b[3] = 99
	var e entry
	require.ErrorContains(t, e.Decode(jute.NewDecoder(b, 0)), "version")
}

func TestDecodeWrite(t *testing.T) {
	create := jute.Marshal(&jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: []jute.ACL{{Perms: 31, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})
	mixed := jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/a"}},
		{Type: jute.OpGetData, Read: &jute.PathWatchRequest{Path: "/a"}},
	}})
	tests := []struct {
		name  string
		op    int32
		body  []byte
		wcode int32
	}{
		{"create", jute.OpCreate, create, 0},
		{"create2", jute.OpCreate2, create, 0},
		{"truncated create", jute.OpCreate, create[:5], jute.ErrMarshallingError},
		{"delete", jute.OpDelete, jute.Marshal(&jute.DeleteRequest{Path: "/a", Version: -1}), 0},
		{"multi mixing reads and writes", jute.OpMulti, mixed, jute.ErrMarshallingError},
		{"not a write", jute.OpGetData, nil, jute.ErrUnimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, code := decodeWrite(tt.op, tt.body, jute.DefaultMaxBuffer)
			require.Equal(t, tt.wcode, code)
			if code == 0 {
				require.Equal(t, tt.op, w.Type)
			}
		})
	}
}

// TestEntryDataExactSize: data allocates the encoding's exact length, so
// encoding a write never grows its buffer.
func TestEntryDataExactSize(t *testing.T) {
	tests := []struct {
		name string
		e    entry
	}{
		{"empty", entry{}},
		{"create with two ids", entry{Proposer: 1, ReqID: 2, Type: jute.OpCreate, Body: make([]byte, 150),
			Auth: []jute.Id{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "bob:x"}}, Opts: optTTL}},
		{"session entry", entry{Type: entryCreateSession, Body: CreateSessionBody(7, 30000, make([]byte, 16))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := jute.NewEncoder(nil)
			tt.e.Encode(enc)
			d := tt.e.data()
			require.Equal(t, enc.Bytes(), d)
			require.Equal(t, len(d), cap(d))
		})
	}
}

// TestEntryDecodeIntoScratch: Apply decodes every entry into one reused
// entry (reset, then Decode with a decoder borrowing buffers); each entry
// must come out as a fresh decode of it, with nothing left from the one
// before (more auth ids, options, a body).
func TestEntryDecodeIntoScratch(t *testing.T) {
	entries := []entry{
		{Proposer: 1, ReqID: 2, Type: jute.OpCreate, Body: []byte("body"), ConnID: 9, Seq: 3,
			Auth: []jute.Id{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "bob:x"}}, Opts: optTTL | optX509},
		{Proposer: 1, ReqID: 3, Type: jute.OpSetData, Body: []byte("b"), Auth: []jute.Id{{Scheme: "ip", ID: "10.0.0.1"}}},
		{Type: entryCloseSession, SessionID: 5},
		{Type: entryCreateSession, Body: CreateSessionBody(7, 30000, make([]byte, 16)),
			Auth: []jute.Id{{Scheme: "x509", ID: "CN=a"}, {Scheme: "sasl", ID: "u"}, {Scheme: "ip", ID: "::1"}}},
	}
	var scratch entry
	var d jute.Decoder
	for i := range entries {
		data := entries[i].data()
		var fresh entry
		require.NoError(t, fresh.Decode(jute.NewDecoder(data, len(data))))
		scratch.reset()
		d.ResetBorrowing(data, len(data), jute.BorrowBuffers)
		require.NoError(t, scratch.Decode(&d))
		require.True(t, slices.Equal(fresh.Auth, scratch.Auth), "entry %d: auth %v, want %v", i, scratch.Auth, fresh.Auth)
		got, want := scratch, fresh
		got.Auth, want.Auth = nil, nil
		require.Equal(t, want, got, "entry %d", i)
	}
}
