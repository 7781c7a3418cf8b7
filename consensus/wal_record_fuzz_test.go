package consensus

import (
	"bytes"
	"encoding/binary"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzAppendRaftpbMatchesMarshal: the hand encoders write proto.Marshal's
// bytes for every field combination, and a batch of them decodes back.
func FuzzAppendRaftpbMatchesMarshal(f *testing.F) {
	f.Add(uint8(0xff), uint64(0), uint64(0), uint64(0), int32(0), []byte(nil), false)
	f.Add(uint8(0x00), uint64(1<<63), uint64(127), uint64(128), int32(-1), []byte{}, true)
	f.Add(uint8(0x55), ^uint64(0), uint64(1<<14), uint64(1<<21), int32(-2147483648), []byte("abc"), true)
	f.Fuzz(func(t *testing.T, mask uint8, a, b, c uint64, typ int32, data []byte, dataNonNil bool) {
		opt := func(bit uint8, v uint64) *uint64 {
			if mask&bit == 0 {
				return nil
			}
			return proto.Uint64(v)
		}
		if data == nil && dataNonNil {
			data = []byte{}
		}
		if !dataNonNil && len(data) == 0 {
			data = nil
		}
		hs := &pb.HardState{Term: opt(1, a), Vote: opt(2, b), Commit: opt(4, c)}
		e := &pb.Entry{Term: opt(8, a), Index: opt(16, b), Data: data}
		if mask&32 != 0 {
			e.Type = pb.EntryType(typ).Enum()
		}
		for _, m := range []proto.Message{hs, e} {
			want, err := appendProto([]byte{7}, m)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			switch m := m.(type) {
			case *pb.HardState:
				got, err = appendHardState([]byte{7}, m)
			case *pb.Entry:
				got, err = appendEntry([]byte{7}, m)
			}
			if err != nil || !bytes.Equal(want, got) {
				t.Fatalf("%v: hand %x, proto %x (%v)", m, got, want, err)
			}
		}
		rec, err := appendBatchRecord(nil, 1, &walBatch{hardState: hs, entries: []*pb.Entry{e}})
		if err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint32(rec[0:4]))
		back, err := decodeBatch(rec[recHeaderSize : recHeaderSize+n])
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(back.hardState, hs) || len(back.entries) != 1 || !proto.Equal(back.entries[0], e) {
			t.Fatalf("read back %v %v, wrote %v %v", back.hardState, back.entries, hs, e)
		}
	})
}
