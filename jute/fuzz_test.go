package jute

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"unsafe"
)

// recordTypes returns one zero record of every sampled record type.
func recordTypes() []Record {
	seen := map[reflect.Type]bool{}
	var out []Record
	for _, s := range samples() {
		typ := reflect.TypeOf(s.rec)
		if !seen[typ] {
			seen[typ] = true
			out = append(out, newLike(s.rec))
		}
	}
	return out
}

// FuzzDecodeRecords decodes arbitrary bytes as every record type. Decoding
// must never panic, and a value that decodes must survive encode/decode
// unchanged and re-encode to the same bytes.
func FuzzDecodeRecords(f *testing.F) {
	for _, s := range samples() {
		f.Add(Marshal(s.rec))
	}
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xfe})
	types := recordTypes()
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, typ := range types {
			got := newLike(typ)
			err := Unmarshal(in, got)
			checkBorrowing(t, in, got, err)
			if err != nil {
				continue
			}
			enc := Marshal(got)
			again := newLike(typ)
			if err := Unmarshal(enc, again); err != nil {
				t.Fatalf("%T: re-encoding %x of %#v does not decode: %v", got, enc, got, err)
			}
			if !reflect.DeepEqual(got, again) {
				t.Fatalf("%T: decode(encode(x)) = %#v; want %#v", got, again, got)
			}
			if enc2 := Marshal(again); !bytes.Equal(enc, enc2) {
				t.Fatalf("%T: encoding not stable: %x then %x", got, enc, enc2)
			}
			// Every field re-encodes at the width it was read with (a null
			// string becomes "" of the same 4 bytes), so nothing can grow.
			if len(enc) > len(in) {
				t.Fatalf("%T: re-encoding grew from %d to %d bytes", got, len(in), len(enc))
			}
		}
	})
}

// FuzzReadFrame reads frames from arbitrary input. It must never panic,
// never return a body above the limit, fail only with the documented errors,
// and every frame it returns must be exactly the bytes the input held.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0xab, 0xcd, 0, 0, 0, 0}, uint16(10))
	f.Add([]byte{0x72, 0x75, 0x6f, 0x6b}, uint16(0xffff))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(1))
	f.Add([]byte{0, 0, 0, 5, 1}, uint16(100))
	f.Fuzz(func(t *testing.T, in []byte, maxFrame uint16) {
		r := bytes.NewReader(in)
		var buf []byte
		for {
			off := len(in) - r.Len()
			body, err := ReadFrame(r, buf, int(maxFrame))
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, io.EOF) && off != len(in) {
					t.Fatalf("io.EOF with %d bytes left", len(in)-off)
				}
				return
			}
			if len(body) > int(maxFrame) {
				t.Fatalf("body of %d bytes above max %d", len(body), maxFrame)
			}
			e := NewEncoder(nil)
			start := e.StartFrame()
			e.buf = append(e.buf, body...)
			e.EndFrame(start)
			if !bytes.Equal(e.Bytes(), in[off:off+4+len(body)]) {
				t.Fatalf("frame %x does not match input %x", e.Bytes(), in[off:])
			}
			buf = body
		}
	})
}

// checkBorrowing decodes in as want's type with each Borrow mode and fails t
// unless the outcome is the copying Decoder's: the same error (wantErr) and,
// without one, equal values, of which only borrowed ones may share in's
// memory.
func checkBorrowing(t *testing.T, in []byte, want Record, wantErr error) {
	t.Helper()
	for _, mode := range []Borrow{BorrowNone, BorrowBuffers, BorrowAll} {
		got := newLike(want)
		var d Decoder
		d.ResetBorrowing(in, DefaultMaxBuffer, mode)
		err := d.ReadRecord(got)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != errors.Unwrap(wantErr).Error()) {
			t.Fatalf("%T, borrow %d: error %v; copying decoder's %v", got, mode, err, wantErr)
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%T, borrow %d: decoded %#v; copying decoder's %#v", got, mode, got, want)
		}
		checkAliasing(t, reflect.ValueOf(got), in, mode)
	}
}

// checkAliasing fails t if a buffer or string inside v shares in's memory
// where mode does not allow it, or a borrowed buffer's capacity reaches
// past its length.
func checkAliasing(t *testing.T, v reflect.Value, in []byte, mode Borrow) {
	t.Helper()
	within := func(p unsafe.Pointer) bool {
		if len(in) == 0 {
			return false
		}
		start := uintptr(unsafe.Pointer(&in[0]))
		return uintptr(p) >= start && uintptr(p) < start+uintptr(len(in))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkAliasing(t, v.Elem(), in, mode)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			checkAliasing(t, v.Field(i), in, mode)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 && within(v.UnsafePointer()) {
				if mode == BorrowNone {
					t.Fatalf("a buffer aliases the input without borrowing")
				}
				if v.Cap() != v.Len() {
					t.Fatalf("a borrowed buffer of %d bytes has capacity %d", v.Len(), v.Cap())
				}
			}
			return
		}
		for i := range v.Len() {
			checkAliasing(t, v.Index(i), in, mode)
		}
	case reflect.String:
		if s := v.String(); len(s) > 0 && within(unsafe.Pointer(unsafe.StringData(s))) && mode != BorrowAll {
			t.Fatalf("string %q aliases the input with borrow %d", s, mode)
		}
	}
}
