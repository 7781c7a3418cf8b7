package jute

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestEncoderPrimitives(t *testing.T) {
	e := NewEncoder(nil)
	_ = e.WriteByte(0x7f)
	e.WriteBool(false)
	e.WriteBool(true)
	e.WriteInt(-10)
	e.WriteLong(-1 << 63)
	e.WriteBuffer(nil)
	e.WriteBuffer([]byte{})
	e.WriteBuffer([]byte{1, 2})
	e.WriteString("")
	e.WriteString("é")
	e.WriteStrings(nil)
	e.WriteStrings([]string{})
	e.WriteStrings([]string{""})
	want := unhex(t, `
		7f 00 01          # byte, false, true
		fffffff6          # int -10
		8000000000000000  # long min
		ffffffff          # buffer nil -> null
		00000000          # buffer empty
		00000002 0102     # buffer
		00000000          # string "" -> empty, never null
		00000002 c3a9     # string "é"
		ffffffff          # strings nil -> null
		00000000          # strings empty
		00000001 00000000 # strings [""]`)
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("Bytes() = %x\nwant      %x", e.Bytes(), want)
	}
	if e.Len() != len(want) {
		t.Fatalf("Len() = %d; want %d", e.Len(), len(want))
	}
}

func TestEncoderReuse(t *testing.T) {
	mem := make([]byte, 0, 64)
	e := NewEncoder(mem[:0])
	e.WriteLong(1)
	e.Reset()
	if e.Len() != 0 || cap(e.Bytes()) != 64 {
		t.Fatalf("after Reset: len %d cap %d; want 0, 64", e.Len(), cap(e.Bytes()))
	}
	e.WriteInt(7)
	if &e.Bytes()[0] != &mem[:1][0] {
		t.Fatal("Encoder did not reuse the buffer it was given")
	}
	var zero Encoder // the zero value works too
	zero.WriteInt(1)
	if zero.Len() != 4 {
		t.Fatalf("zero Encoder Len() = %d", zero.Len())
	}
}

func TestEncoderFrames(t *testing.T) {
	e := NewEncoder(nil)
	// Two frames back to back: a reply header + body, then an empty frame.
	start := e.StartFrame()
	e.WriteRecord(&ReplyHeader{Xid: 1, Zxid: 2, Err: 0})
	e.WriteRecord(&ErrorResponse{Err: 0})
	e.EndFrame(start)
	start = e.StartFrame()
	e.EndFrame(start)
	want := unhex(t, `
		00000014                                   # length 20
		00000001 0000000000000002 00000000 00000000 # header + ErrorResponse
		00000000                                   # empty frame`)
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("frames = %x\nwant     %x", e.Bytes(), want)
	}
	// The frames read back with ReadFrame.
	r := bytes.NewReader(e.Bytes())
	body, err := ReadFrame(r, nil, 100)
	if err != nil || binary.BigEndian.Uint32(body) != 1 || len(body) != 20 {
		t.Fatalf("ReadFrame = %x, %v", body, err)
	}
}

// TestEncodeZeroAllocs checks that encoding into a reused Encoder does not
// allocate once its buffer is large enough.
func TestEncodeZeroAllocs(t *testing.T) {
	recs := []Record{
		&GetDataResponse{Data: make([]byte, 100), Stat: testStat},
		&CreateRequest{Path: "/a/b", Data: []byte("x"), ACL: worldACL, Flags: 1},
		&MultiResponse{Results: []MultiResult{{Type: OpCreate, Path: "/a"}, {Type: OpError, Err: -101}}},
	}
	e := NewEncoder(make([]byte, 0, 1024))
	for _, rec := range recs {
		allocs := testing.AllocsPerRun(100, func() {
			e.Reset()
			start := e.StartFrame()
			e.WriteRecord(&ReplyHeader{Xid: 1})
			e.WriteRecord(rec)
			e.EndFrame(start)
		})
		if allocs != 0 {
			t.Errorf("%T: %v allocations per encode; want 0", rec, allocs)
		}
	}
}
