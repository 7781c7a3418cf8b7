package jute

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, tt := range samples() {
		t.Run(tt.name, func(t *testing.T) {
			enc := Marshal(tt.rec)
			got := newLike(tt.rec)
			d := NewDecoder(enc, DefaultMaxBuffer)
			if err := d.ReadRecord(got); err != nil {
				t.Fatalf("decode %x: %v", enc, err)
			}
			if d.Remaining() != 0 {
				t.Errorf("decode left %d of %d bytes", d.Remaining(), len(enc))
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("decode(encode(x)) = %#v; want %#v", got, tt.rec)
			}
			if again := Marshal(got); !bytes.Equal(again, enc) {
				t.Errorf("re-encoding = %x; want %x", again, enc)
			}
		})
	}
}

// TestEncodedSizes pins the body sizes clients check (the C client and
// ClickHouse check the handshake length).
func TestEncodedSizes(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want int
	}{
		{"ConnectRequest/readOnly", &ConnectRequest{Passwd: make([]byte, 16), HasReadOnly: true}, 45},
		{"ConnectRequest/noReadOnly", &ConnectRequest{Passwd: make([]byte, 16)}, 44},
		{"ConnectResponse/readOnly", &ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}, 37},
		{"ConnectResponse/noReadOnly", &ConnectResponse{Passwd: make([]byte, 16)}, 36},
		{"Stat", &Stat{}, 68},
		{"StatResponse", &StatResponse{}, 68},
		{"ReplyHeader", &ReplyHeader{}, 16},
		{"RequestHeader", &RequestHeader{}, 8},
		{"MultiHeader", &MultiHeader{}, 9},
		{"ErrorResponse", &ErrorResponse{}, 4},
		{"MultiRequest/empty", &MultiRequest{}, 9},
		{"GetDataResponse/nil", &GetDataResponse{}, 4 + 68},
	}
	for _, tt := range tests {
		if got := len(Marshal(tt.rec)); got != tt.want {
			t.Errorf("%s: len(Marshal) = %d; want %d", tt.name, got, tt.want)
		}
	}
}

// TestConnectOptionalReadOnly decodes handshakes with and without the
// trailing readOnly byte and checks HasReadOnly follows the input.
func TestConnectOptionalReadOnly(t *testing.T) {
	withRO := Marshal(&ConnectRequest{TimeOut: 1, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true})
	var req ConnectRequest
	if err := Unmarshal(withRO, &req); err != nil || !req.HasReadOnly || !req.ReadOnly {
		t.Fatalf("with byte: got %+v, %v; want HasReadOnly and ReadOnly", req, err)
	}
	// Decoding into a used record must clear the flags when the byte is missing.
	if err := Unmarshal(withRO[:len(withRO)-1], &req); err != nil || req.HasReadOnly || req.ReadOnly {
		t.Fatalf("without byte: got %+v, %v; want no readOnly", req, err)
	}

	resp := Marshal(&ConnectResponse{TimeOut: 1, Passwd: make([]byte, 16), HasReadOnly: true})
	var cr ConnectResponse
	if err := Unmarshal(resp, &cr); err != nil || !cr.HasReadOnly || cr.ReadOnly {
		t.Fatalf("response with byte: got %+v, %v", cr, err)
	}
	if err := Unmarshal(resp[:36], &cr); err != nil || cr.HasReadOnly {
		t.Fatalf("response without byte: got %+v, %v", cr, err)
	}
}

// TestTruncated checks that every strict prefix of a valid encoding fails to
// decode (and does not panic), except that the optional readOnly byte may be
// missing.
func TestTruncated(t *testing.T) {
	for _, tt := range samples() {
		t.Run(tt.name, func(t *testing.T) {
			enc := Marshal(tt.rec)
			for n := 0; n < len(enc); n++ {
				err := Unmarshal(enc[:n], newLike(tt.rec))
				optional := n >= len(enc)-tt.optionalTail
				if optional && err != nil {
					t.Errorf("prefix of %d/%d bytes: %v; want success (optional tail)", n, len(enc), err)
				}
				if !optional && err == nil {
					t.Errorf("prefix of %d/%d bytes decoded without error", n, len(enc))
				}
			}
		})
	}
}

// TestEveryRecordSampled parses records.go and fails if a record type has no
// sample, so a new record can't skip the round-trip and truncation tests.
func TestEveryRecordSampled(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "records.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sampled := map[string]bool{}
	for _, s := range samples() {
		sampled[reflect.TypeOf(s.rec).Elem().Name()] = true
	}
	// Parts of multi records that are not records on their own.
	notRecords := map[string]bool{"Record": true, "MultiOp": true, "MultiResult": true}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			name := spec.(*ast.TypeSpec).Name.Name
			if !notRecords[name] && !sampled[name] {
				t.Errorf("record type %s has no sample in samples_test.go", name)
			}
		}
	}
}

// TestMultiRequestEncodeNilOps checks that an op whose body pointer is nil
// is written as the zero record of its type, and that an unknown op type
// produces bytes Decode rejects.
func TestMultiRequestEncodeNilOps(t *testing.T) {
	types := []int32{OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck, OpGetData, OpGetChildren}
	for _, typ := range types {
		enc := Marshal(&MultiRequest{Ops: []MultiOp{{Type: typ}}})
		var got MultiRequest
		if err := Unmarshal(enc, &got); err != nil {
			t.Fatalf("type %d: %v", typ, err)
		}
		op := got.Ops[0]
		if op.Type != typ || op.record() == nil || len(Marshal(op.record())) != len(Marshal(newLike(op.record()))) {
			t.Errorf("type %d: decoded %#v", typ, op)
		}
	}
	enc := Marshal(&MultiRequest{Ops: []MultiOp{{Type: OpSync}}})
	if err := Unmarshal(enc, &MultiRequest{}); !errors.Is(err, ErrUnknownMultiOp) {
		t.Fatalf("unknown op type: %v; want ErrUnknownMultiOp", err)
	}
	enc = Marshal(&MultiResponse{Results: []MultiResult{{Type: OpSync}}})
	if err := Unmarshal(enc, &MultiResponse{}); !errors.Is(err, ErrUnknownMultiOp) {
		t.Fatalf("unknown result type: %v; want ErrUnknownMultiOp", err)
	}
}
