package jute

import "testing"

func benchEncode(b *testing.B, rec Record) {
	b.Helper()
	e := NewEncoder(make([]byte, 0, 4096))
	hdr := ReplyHeader{Xid: 1, Zxid: 2}
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		start := e.StartFrame()
		hdr.Encode(e) // a method call on a concrete record does not escape
		e.WriteRecord(rec)
		e.EndFrame(start)
	}
	b.SetBytes(int64(e.Len()))
}

func benchDecode(b *testing.B, rec Record) {
	b.Helper()
	enc := Marshal(rec)
	out := newLike(rec)
	var d Decoder
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(enc, DefaultMaxBuffer)
		if err := d.ReadRecord(out); err != nil {
			b.Fatal(err)
		}
	}
}

var (
	benchGetData = &GetDataResponse{Data: make([]byte, 1024), Stat: testStat}
	benchCreate  = &CreateRequest{Path: "/app/locks/lock-0000000001", Data: []byte("owner=host-1"), ACL: worldACL, Flags: FlagEphemeralSequential}
)

func BenchmarkEncodeGetDataResponse(b *testing.B) { benchEncode(b, benchGetData) }
func BenchmarkDecodeGetDataResponse(b *testing.B) { benchDecode(b, benchGetData) }
func BenchmarkEncodeCreateRequest(b *testing.B)   { benchEncode(b, benchCreate) }
func BenchmarkDecodeCreateRequest(b *testing.B)   { benchDecode(b, benchCreate) }
