package consensus

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func frame(kind byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{kind, byte(n >> 16), byte(n >> 8), byte(n)}, payload...)
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func marshalled(t testing.TB, m *pb.Message) []byte {
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestFrameReaderRejectsBadInput: every malformed stream is an errFrame
// (or a plain read error for a truncated one), never a panic, and the
// reader's buffer never exceeds the frame limit.
func TestFrameReaderRejectsBadInput(t *testing.T) {
	hb := marshalled(t, &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(2)), To: new(uint64(1))})
	cases := []struct {
		name    string
		stream  []byte
		errFrom error // errFrame, io.EOF or io.ErrUnexpectedEOF
	}{
		{"oversize frame", []byte{frameMessage, 0xff, 0xff, 0xff}, errFrame},
		{"just above the limit", []byte{frameMessage, byte((maxFrameSize + 1) >> 16), 0, 1}, errFrame},
		{"unknown kind", frame(3, hb), errFrame},
		{"old 1 GiB length", []byte{0x40, 0, 0, 0}, errFrame},
		{"chunk outside a chunked message", frame(frameChunk, []byte{1}), errFrame},
		{"short chunked header", frame(frameLargeStart, []byte{1, 2, 3}), errFrame},
		{"chunked message small enough for one frame", frame(frameLargeStart, u64(maxFrameSize)), errFrame},
		{"chunked message above the message limit", frame(frameLargeStart, u64(maxMessageSize+1)), errFrame},
		{"chunked message of 2^64-1 bytes", frame(frameLargeStart, u64(^uint64(0))), errFrame},
		{"message frame inside a chunked message",
			append(frame(frameLargeStart, u64(maxFrameSize+10)), frame(frameMessage, hb)...), errFrame},
		{"empty chunk", append(frame(frameLargeStart, u64(maxFrameSize+10)), frame(frameChunk, nil)...), errFrame},
		{"not a message", frame(frameMessage, []byte{0xff, 0xff, 0xff}), errFrame},
		{"truncated header", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"truncated payload", frame(frameMessage, hb)[:6], io.ErrUnexpectedEOF},
		{"chunked message cut short", append(frame(frameLargeStart, u64(1<<30)), frame(frameChunk, []byte{1, 2})...), io.EOF},
		{"empty stream", nil, io.EOF},
	}
	// Two chunks whose lengths exceed the announced total.
	over := frame(frameLargeStart, u64(maxFrameSize+1))
	over = append(over, frame(frameChunk, make([]byte, maxFrameSize))...)
	over = append(over, frame(frameChunk, make([]byte, 2))...)
	cases = append(cases, struct {
		name    string
		stream  []byte
		errFrom error
	}{"chunks overrun", over, errFrame})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr := newFrameReader(bytes.NewReader(tc.stream))
			m, err := fr.next()
			require.Nil(t, m)
			require.ErrorIs(t, err, tc.errFrom)
			require.LessOrEqual(t, cap(fr.buf), maxFrameSize)
		})
	}
}

// TestFrameReaderAllocatesWhatArrives: a header announcing a 1 GiB message
// followed by a few bytes allocates about what arrived, not 1 GiB.
func TestFrameReaderAllocatesWhatArrives(t *testing.T) {
	stream := append(frame(frameLargeStart, u64(1<<30)), frame(frameChunk, make([]byte, 100))...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := newFrameReader(bytes.NewReader(stream)).next()
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.EOF)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "allocated from the announced length")
}

// TestFrameRoundTrip: messages below, at and above the frame limit come
// back identical, in order, through one stream.
func TestFrameRoundTrip(t *testing.T) {
	var msgs []*pb.Message
	for _, size := range []int{0, 1, maxFrameSize - 64, maxFrameSize, maxFrameSize + 1, 2*chunkSize + 7, 3 * maxFrameSize} {
		data := make([]byte, size)
		_, _ = rand.NewChaCha8([32]byte{byte(size)}).Read(data)
		msgs = append(msgs, snapMsg(1, 2, data))
	}
	var buf bytes.Buffer
	for _, m := range msgs {
		b := marshalled(t, m)
		require.NoError(t, writeMessageTo(&buf, b))
	}
	fr := newFrameReader(&buf)
	for i, want := range msgs {
		got, err := fr.next()
		require.NoError(t, err, "message %d", i)
		require.True(t, proto.Equal(want, got), "message %d differs", i)
	}
	_, err := fr.next()
	require.ErrorIs(t, err, io.EOF)
}

// writeMessageTo frames b onto w as the transport does.
func writeMessageTo(w io.Writer, b []byte) error {
	fw := &frameWriter{w: bufio.NewWriter(w)}
	if err := fw.writeMessage(b); err != nil {
		return err
	}
	return fw.flush()
}

// FuzzFrameReader: arbitrary bytes never panic the reader nor make it
// hold a frame buffer above the limit.
func FuzzFrameReader(f *testing.F) {
	hb, _ := proto.Marshal(&pb.Message{Type: pb.MsgHeartbeat.Enum()})
	f.Add(frame(frameMessage, hb))
	f.Add([]byte{frameMessage, 0xff, 0xff, 0xff})
	f.Add(append(frame(frameLargeStart, u64(maxFrameSize+3)), frame(frameChunk, []byte{1, 2, 3})...))
	f.Add(frame(frameChunk, []byte{1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := newFrameReader(bytes.NewReader(b))
		for range 64 {
			_, err := fr.next()
			if cap(fr.buf) > maxFrameSize {
				t.Fatalf("frame buffer of %d bytes", cap(fr.buf))
			}
			if err != nil {
				if !errors.Is(err, errFrame) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
		}
	})
}
