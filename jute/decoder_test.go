package jute

import (
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"unsafe"
)

func TestDecoderPrimitives(t *testing.T) {
	b := unhex(t, `
		7f                # byte
		00 01 02          # bools: false, true, true (any non-zero is true)
		fffffff6          # int -10
		8000000000000000  # long min
		ffffffff          # buffer null
		00000000          # buffer empty
		00000002 0102     # buffer
		ffffffff          # string null
		00000003 c3a9ff   # string, not valid UTF-8 at the end
		ffffffff          # strings null
		00000000          # strings empty
		00000001 00000000 # strings [""]`)
	d := NewDecoder(b, 0)
	if v, err := d.ReadByte(); v != 0x7f || err != nil {
		t.Fatalf("ReadByte = %x, %v", v, err)
	}
	if d.ReadBool() || !d.ReadBool() || !d.ReadBool() {
		t.Fatal("ReadBool mismatch")
	}
	if v := d.ReadInt(); v != -10 {
		t.Fatalf("ReadInt = %d", v)
	}
	if v := d.ReadLong(); v != -1<<63 {
		t.Fatalf("ReadLong = %d", v)
	}
	if v := d.ReadBuffer(); v != nil {
		t.Fatalf("null buffer = %#v; want nil", v)
	}
	if v := d.ReadBuffer(); v == nil || len(v) != 0 {
		t.Fatalf("empty buffer = %#v; want non-nil empty", v)
	}
	off := d.Offset()
	buf := d.ReadBuffer()
	if string(buf) != "\x01\x02" {
		t.Fatalf("buffer = %x", buf)
	}
	buf[0] = 0xee
	if b[off+4] != 0x01 {
		t.Fatal("ReadBuffer result aliases the input")
	}
	if v := d.ReadString(); v != "" {
		t.Fatalf("null string = %q", v)
	}
	if v := d.ReadString(); v != "\xc3\xa9\xff" {
		t.Fatalf("string = %q", v)
	}
	if v := d.ReadStrings(); v != nil {
		t.Fatalf("null strings = %#v", v)
	}
	if v := d.ReadStrings(); v == nil || len(v) != 0 {
		t.Fatalf("empty strings = %#v", v)
	}
	if v := d.ReadStrings(); len(v) != 1 || v[0] != "" {
		t.Fatalf("strings = %#v", v)
	}
	if d.Err() != nil || d.Remaining() != 0 || d.Offset() != len(b) {
		t.Fatalf("end: err %v, remaining %d, offset %d of %d", d.Err(), d.Remaining(), d.Offset(), len(b))
	}
	if _, err := d.ReadByte(); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("ReadByte past end = %v; want ErrShortBuffer", err)
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		read func(d *Decoder)
		want error
	}{
		{"short int", "000000", 0, func(d *Decoder) { d.ReadInt() }, ErrShortBuffer},
		{"short long", "00000000000000", 0, func(d *Decoder) { d.ReadLong() }, ErrShortBuffer},
		{"short bool", "", 0, func(d *Decoder) { d.ReadBool() }, ErrShortBuffer},
		{"short length", "0000", 0, func(d *Decoder) { d.ReadBuffer() }, ErrShortBuffer},
		{"negative buffer length", "fffffffe", 0, func(d *Decoder) { d.ReadBuffer() }, ErrTooLong},
		{"min int buffer length", "80000000", 0, func(d *Decoder) { d.ReadBuffer() }, ErrTooLong},
		{"buffer longer than input", "00000003 0102", 0, func(d *Decoder) { d.ReadBuffer() }, ErrTooLong},
		{"huge buffer length", "7fffffff", 0, func(d *Decoder) { d.ReadBuffer() }, ErrTooLong},
		{"buffer above maxLength", "00000003 010203", 2, func(d *Decoder) { d.ReadBuffer() }, ErrTooLong},
		{"string above maxLength", "00000003 616263", 2, func(d *Decoder) { d.ReadString() }, ErrTooLong},
		{"negative string length", "fffffff0", 0, func(d *Decoder) { d.ReadString() }, ErrTooLong},
		{"negative vector count", "fffffffe", 0, func(d *Decoder) { d.ReadStrings() }, ErrTooLong},
		{"huge vector count", "7fffffff 00000000", 0, func(d *Decoder) { d.ReadStrings() }, ErrTooLong},
		// 2 strings need at least 8 bytes; only 7 remain.
		{"vector count above input", "00000002 00000000 000000", 0, func(d *Decoder) { d.ReadStrings() }, ErrTooLong},
		{"vector element short", "00000002 00000000 00000001", 0, func(d *Decoder) { d.ReadStrings() }, ErrTooLong},
		// 2 ACLs need at least 24 bytes.
		{"acl count above input", "00000002" + "00000000 00000000 00000000" + "00000000 00000000 0000", 0,
			func(d *Decoder) { readRecords[ACL](d, minACLSize, "vector<ACL>") }, ErrTooLong},
		{"unknown multi op", "00000007 00 ffffffff", 0, func(d *Decoder) { _ = d.ReadRecord(&MultiRequest{}) }, ErrUnknownMultiOp},
		{"error type without done", "ffffffff 00 ffffffff", 0, func(d *Decoder) { _ = d.ReadRecord(&MultiRequest{}) }, ErrUnknownMultiOp},
		{"multi without terminator", "00000002 00 ffffffff 00000000 ffffffff", 0, func(d *Decoder) { _ = d.ReadRecord(&MultiRequest{}) }, ErrShortBuffer},
		{"unknown multi result", "00000003 00 00000000", 0, func(d *Decoder) { _ = d.ReadRecord(&MultiResponse{}) }, ErrUnknownMultiOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(unhex(t, tt.in), tt.max)
			tt.read(d)
			if !errors.Is(d.Err(), tt.want) {
				t.Fatalf("Err() = %v; want %v", d.Err(), tt.want)
			}
		})
	}
}

func TestShortBufferIsUnexpectedEOF(t *testing.T) {
	err := Unmarshal([]byte{0, 0}, &ReplyHeader{})
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("Unmarshal short = %v; want ErrShortBuffer wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestDecoderStickyError(t *testing.T) {
	d := NewDecoder(unhex(t, "fffffffe 00000001 00000002"), 0)
	_ = d.ReadBuffer()
	first := d.Err()
	if !errors.Is(first, ErrTooLong) {
		t.Fatalf("Err() = %v; want ErrTooLong", first)
	}
	// Later reads return zero values and do not replace the error, even
	// though the input has valid ints left.
	if v := d.ReadInt(); v != 0 {
		t.Errorf("ReadInt after error = %d; want 0", v)
	}
	if err := d.ReadRecord(&RequestHeader{}); err != first {
		t.Errorf("ReadRecord after error = %v; want the first error %v", err, first)
	}
	d.Reset([]byte{0, 0, 0, 9}, 0)
	if v := d.ReadInt(); v != 9 || d.Err() != nil {
		t.Errorf("after Reset: ReadInt = %d, err %v", v, d.Err())
	}
}

// TestHugeCountsDoNotAllocate decodes records whose vector counts claim far
// more elements than the input holds, and checks that decoding fails without
// allocating for them.
func TestHugeCountsDoNotAllocate(t *testing.T) {
	inputs := []struct {
		rec Record
		in  []byte
	}{
		{&GetChildrenResponse{}, unhex(t, "7fffffff")},
		{&WhoAmIResponse{}, unhex(t, "10000000 00000000 00000000")},
		{&CreateRequest{}, unhex(t, "00000000 ffffffff 7ffffff0 00000000")},
		{&GetDataResponse{}, unhex(t, "7ffffff0")},
	}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(20, func() {
			d := NewDecoder(in.in, 1<<30)
			if d.ReadRecord(in.rec) == nil {
				t.Fatalf("%T decoded without error", in.rec)
			}
		})
		// The error value itself costs a few small allocations.
		if allocs > 8 {
			t.Errorf("%T: %v allocations for a rejected count", in.rec, allocs)
		}
		// TotalAlloc counts every goroutine's allocations (a race build's
		// runtime allocates now and then): the fewest bytes of a few
		// decodes, each of which would allocate for the count if it did.
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_ = NewDecoder(in.in, 1<<30).ReadRecord(in.rec)
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if least > 4096 {
			t.Errorf("%T: %d bytes allocated for a rejected count", in.rec, least)
		}
	}
}

// TestDecoderBorrowing: which values of a decoded request share the
// input's memory under each Borrow mode, and that a Decoder borrowing
// everything decodes a request into reused records without allocating.
func TestDecoderBorrowing(t *testing.T) {
	in := Marshal(&SetDataRequest{Path: "/a/b", Data: []byte("some data"), Version: 3})
	within := func(p unsafe.Pointer) bool {
		start := uintptr(unsafe.Pointer(&in[0]))
		return uintptr(p) >= start && uintptr(p) < start+uintptr(len(in))
	}
	for _, tt := range []struct {
		mode                   Borrow
		dataShared, pathShared bool
	}{
		{BorrowNone, false, false},
		{BorrowBuffers, true, false},
		{BorrowAll, true, true},
	} {
		var d Decoder
		var r SetDataRequest
		d.ResetBorrowing(in, 0, tt.mode)
		if err := d.ReadRecord(&r); err != nil {
			t.Fatalf("borrow %d: %v", tt.mode, err)
		}
		if r.Path != "/a/b" || string(r.Data) != "some data" || r.Version != 3 {
			t.Fatalf("borrow %d: decoded %+v", tt.mode, r)
		}
		if got := within(unsafe.Pointer(&r.Data[0])); got != tt.dataShared {
			t.Errorf("borrow %d: data shares the input: %v, want %v", tt.mode, got, tt.dataShared)
		}
		if got := within(unsafe.Pointer(unsafe.StringData(r.Path))); got != tt.pathShared {
			t.Errorf("borrow %d: path shares the input: %v, want %v", tt.mode, got, tt.pathShared)
		}
		if cap(r.Data) != len(r.Data) && tt.dataShared {
			t.Errorf("borrow %d: borrowed data has capacity %d for %d bytes", tt.mode, cap(r.Data), len(r.Data))
		}
	}
	var d Decoder
	var r SetDataRequest
	if n := testing.AllocsPerRun(100, func() {
		d.ResetBorrowing(in, 0, BorrowAll)
		_ = d.ReadRecord(&r)
	}); n != 0 {
		t.Errorf("borrowing decode allocates %v times, want 0", n)
	}
}

// TestReadStringLike: ReadStringLike reads what ReadString reads (errors
// included), and returns prev itself, without allocating, when the bytes
// are prev's.
func TestReadStringLike(t *testing.T) {
	e := NewEncoder(nil)
	e.WriteString("127.0.0.1")
	e.WriteString("")
	e.WriteInt(-1)
	e.WriteString("other")
	in := e.Bytes()
	prev := string([]byte("127.0.0.1")) // not the literal: its own memory
	d := NewDecoder(in, 0)
	got := d.ReadStringLike(prev)
	if got != prev || unsafe.StringData(got) != unsafe.StringData(prev) {
		t.Fatalf("equal string: got %q at %p, want prev at %p", got, unsafe.StringData(got), unsafe.StringData(prev))
	}
	if s := d.ReadStringLike(prev); s != "" {
		t.Fatalf("empty string read as %q", s)
	}
	if s := d.ReadStringLike(prev); s != "" {
		t.Fatalf("null string read as %q", s)
	}
	if s := d.ReadStringLike(prev); s != "other" {
		t.Fatalf("different string read as %q", s)
	}
	if d.ReadStringLike(prev); d.Err() == nil || !errors.Is(d.Err(), ErrShortBuffer) {
		t.Fatalf("read past the end: error %v", d.Err())
	}
	short := NewDecoder(in[:6], 0)
	want := NewDecoder(in[:6], 0)
	_, _ = short.ReadStringLike(prev), want.ReadString()
	if short.Err() == nil || short.Err().Error() != want.Err().Error() {
		t.Fatalf("truncated string: error %v, ReadString's %v", short.Err(), want.Err())
	}
	if n := testing.AllocsPerRun(100, func() {
		d.Reset(in, 0)
		_ = d.ReadStringLike(prev)
	}); n != 0 {
		t.Errorf("reading prev's bytes allocates %v times", n)
	}
}
