package consensus

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestAppendRaftpbMatchesMarshal: appendHardState and appendEntry write the
// bytes appendProto (proto.Marshal) writes, for unset, zero, small, large
// and maximal fields, nil, empty and long data, entry types outside the
// enum, and messages with unknown fields.
func TestAppendRaftpbMatchesMarshal(t *testing.T) {
	vals := []*uint64{nil, proto.Uint64(0), proto.Uint64(1), proto.Uint64(127), proto.Uint64(128),
		proto.Uint64(1 << 35), proto.Uint64(math.MaxUint64)}
	types := []*pb.EntryType{nil, pb.EntryType_EntryNormal.Enum(), pb.EntryType_EntryConfChange.Enum(),
		pb.EntryType_EntryConfChangeV2.Enum(), pb.EntryType(-1).Enum(), pb.EntryType(math.MaxInt32).Enum()}
	datas := [][]byte{nil, {}, []byte("x"), make([]byte, 127), make([]byte, 128), make([]byte, 70000)}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() *uint64 { return vals[rng.IntN(len(vals))] }
	check := func(m proto.Message, got []byte, err error) {
		t.Helper()
		require.NoError(t, err)
		want, werr := appendProto([]byte("prefix"), m)
		require.NoError(t, werr)
		require.Equal(t, want, got, "%v", m)
	}
	withUnknown := func(m proto.Message) {
		// Field 15, varint 5: a field this version does not know.
		m.ProtoReflect().SetUnknown(protoreflect.RawFields{15 << 3, 5})
	}
	for i := range 2000 {
		hs := &pb.HardState{Term: pick(), Vote: pick(), Commit: pick()}
		if i%50 == 0 {
			withUnknown(hs)
		}
		got, err := appendHardState([]byte("prefix"), hs)
		check(hs, got, err)

		e := &pb.Entry{Type: types[rng.IntN(len(types))], Term: pick(), Index: pick(), Data: datas[rng.IntN(len(datas))]}
		if i%50 == 1 {
			withUnknown(e)
		}
		got, err = appendEntry([]byte("prefix"), e)
		check(e, got, err)

		// What it wrote reads back as the message.
		n, k := binary.Uvarint(got[len("prefix"):])
		require.Equal(t, len(got)-len("prefix")-k, int(n), "length prefix")
		back := &pb.Entry{}
		require.NoError(t, proto.Unmarshal(got[len("prefix")+k:], back))
		require.True(t, proto.Equal(e, back), "%v read back as %v", e, back)
	}
}

// BenchmarkAppendEntry: a 200-byte entry encoded by hand and by
// proto.Marshal.
func BenchmarkAppendEntry(b *testing.B) {
	e := &pb.Entry{Type: pb.EntryType_EntryNormal.Enum(), Term: proto.Uint64(3), Index: proto.Uint64(123456), Data: make([]byte, 200)}
	hs := &pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(1), Commit: proto.Uint64(123450)}
	buf := make([]byte, 0, 4096)
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			out, _ := appendHardState(buf[:0], hs)
			_, _ = appendEntry(out, e)
		}
	})
	b.Run("proto", func(b *testing.B) {
		for b.Loop() {
			out, _ := appendProto(buf[:0], hs)
			_, _ = appendProto(out, e)
		}
	})
}

// BenchmarkAppendFreshHardState: a hard state raft has just made (its
// message state never set), as every Ready's is.
func BenchmarkAppendFreshHardState(b *testing.B) {
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		hs := &pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(1), Commit: proto.Uint64(123450)}
		_, _ = appendHardState(buf[:0], hs)
	}
}
