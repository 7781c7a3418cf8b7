package jute

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string // bodies, in hex
		wantErr error    // error after the bodies
	}{
		{"empty input", "", 10, nil, io.EOF},
		{"one frame", "00000002 abcd", 10, []string{"abcd"}, io.EOF},
		{"empty frame", "00000000", 10, []string{""}, io.EOF},
		{"two frames", "00000001 01 00000002 0203", 10, []string{"01", "0203"}, io.EOF},
		{"frame of exactly max", "00000003 010203", 3, []string{"010203"}, io.EOF},
		{"frame above max", "00000004 01020304", 3, nil, ErrFrameTooLarge},
		{"negative length", "ffffffff", 3, nil, ErrFrameTooLarge},
		{"ruok is too large", "72756f6b", 0xfffff, nil, ErrFrameTooLarge},
		{"short length", "0000", 10, nil, io.ErrUnexpectedEOF},
		{"short body", "00000004 0102", 10, nil, io.ErrUnexpectedEOF},
		{"missing body", "00000004", 10, nil, io.ErrUnexpectedEOF},
		{"second frame short", "00000001 01 000000", 10, []string{"01"}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader makes every short read path run.
			r := iotest.OneByteReader(bytes.NewReader(unhex(t, tt.in)))
			var buf []byte
			for i := 0; ; i++ {
				body, err := ReadFrame(r, buf, tt.max)
				if err != nil {
					if i != len(tt.want) {
						t.Fatalf("error %v after %d frames; want %d frames", err, i, len(tt.want))
					}
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("error = %v; want %v", err, tt.wantErr)
					}
					return
				}
				if i >= len(tt.want) {
					t.Fatalf("unexpected frame %x", body)
				}
				if want := unhex(t, tt.want[i]); !bytes.Equal(body, want) {
					t.Fatalf("frame %d = %x; want %x", i, body, want)
				}
				buf = body
			}
		})
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	e := NewEncoder(nil)
	for range 3 {
		start := e.StartFrame()
		e.WriteRecord(&ReplyHeader{Xid: 1})
		e.EndFrame(start)
	}
	r := bytes.NewReader(e.Bytes())
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(1, func() {
		r.Reset(e.Bytes())
		for range 3 {
			body, err := ReadFrame(r, buf, 64)
			if err != nil || len(body) != 16 {
				t.Fatalf("ReadFrame = %x, %v", body, err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations reading frames into a large enough buffer; want 0", allocs)
	}
}

func TestReadFrameErrorMentionsLength(t *testing.T) {
	_, err := ReadFrame(bytes.NewReader(unhex(t, "00100000")), nil, 0xfffff)
	if !errors.Is(err, ErrFrameTooLarge) || !bytes.Contains([]byte(err.Error()), []byte("1048576")) {
		t.Fatalf("error = %v; want ErrFrameTooLarge naming length 1048576", err)
	}
}

func TestUnmarshalIgnoresTrailingBytes(t *testing.T) {
	b := append(Marshal(&RequestHeader{Xid: 3, Type: OpGetData}), 0xff, 0xff)
	var h RequestHeader
	if err := Unmarshal(b, &h); err != nil || h.Xid != 3 || h.Type != OpGetData {
		t.Fatalf("Unmarshal = %+v, %v", h, err)
	}
}

func TestReadFrameLarge(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB
	e := NewEncoder(nil)
	start := e.StartFrame()
	e.buf = append(e.buf, payload...)
	e.EndFrame(start)
	body, err := ReadFrame(bytes.NewReader(e.Bytes()), make([]byte, 0, 16), DefaultMaxBuffer)
	if err != nil || !bytes.Equal(body, payload) {
		t.Fatalf("ReadFrame of 300 KiB: len %d, err %v", len(body), err)
	}
}

// TestReadFrameStalledPeer announces a maximal frame but sends only a few
// bytes: ReadFrame must fail without allocating the announced size.
func TestReadFrameStalledPeer(t *testing.T) {
	in := unhex(t, "000fffff 0102030405")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), nil, DefaultMaxBuffer)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error = %v; want io.ErrUnexpectedEOF", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 128<<10 {
		t.Fatalf("%d bytes allocated for a 5-byte partial body", n)
	}
}
