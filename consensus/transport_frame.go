package consensus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TCP transport wire format: a stream of frames, each a 4-byte header (one
// byte of kind, then a 24-bit big-endian payload length) and its payload.
//
//   - frameMessage: the payload is one proto-marshalled raftpb.Message.
//   - frameLargeStart: a message larger than maxFrameSize (a snapshot,
//     typically) follows in chunks; the payload is its 8-byte big-endian
//     length, above maxFrameSize and at most maxMessageSize.
//   - frameChunk: the next part of that message, non-empty. Chunks follow
//     frameLargeStart back to back until their lengths add up to the
//     announced length; no other frame may come in between.
//
// Invariants on the receiving side: no frame payload is ever longer than
// maxFrameSize, so one frame allocates at most that much whatever its
// header says; a chunked message's buffer grows only as its chunks arrive.
// Anything else (unknown kind, oversize length, a chunk outside a chunked
// message, chunks overrunning the announced length) is a protocol error:
// the connection is closed. A message of up to 16 MiB-1 bytes is framed as
// the earlier format did (a 4-byte length whose first byte was 0).
const (
	frameHeaderSize = 4
	// maxFrameSize bounds one frame's payload: what the receiver allocates
	// for one frame.
	maxFrameSize = 4 << 20
	// chunkSize is the payload of each frameChunk but the last.
	chunkSize = 1 << 20
	// maxMessageSize bounds a chunked message (protobuf cannot encode more).
	maxMessageSize = 1<<31 - 1

	frameMessage    byte = 0
	frameLargeStart byte = 1
	frameChunk      byte = 2
)

// errFrame marks a protocol error on an inbound connection.
var errFrame = errors.New("consensus: bad transport frame")

// frameWriter writes messages to one connection, each frame with a fresh
// write deadline (conn nil: no deadlines, for tests). If deadline is set,
// it sets each frame's deadline instead (tcpPeer.setWriteDeadline: a
// stopped peer's writer must not push the deadline its stop set back out).
type frameWriter struct {
	conn     net.Conn
	w        *bufio.Writer
	deadline func() error
	// peerClosed: the peer closed or reset conn (tcpPeer.watchPeerClose),
	// with readErr, the read's error, written before it is set.
	peerClosed atomic.Bool
	readErr    error
	dialed     time.Time // when the sender dialled conn
}

func (fw *frameWriter) setDeadline() error {
	if fw.deadline != nil {
		return fw.deadline()
	}
	if fw.conn == nil {
		return nil
	}
	if err := fw.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	return nil
}

func newFrameWriter(c net.Conn) *frameWriter {
	return &frameWriter{conn: c, w: bufio.NewWriterSize(c, 64<<10)}
}

// write writes f: its message as one frame or in chunks, or, for the rest
// of a frame written in part (raw), its bytes as they are.
func (fw *frameWriter) write(f outFrame) error {
	if !f.raw {
		return fw.writeMessage(f.buf)
	}
	if err := fw.setDeadline(); err != nil {
		return err
	}
	if _, err := fw.w.Write(f.buf); err != nil {
		return fmt.Errorf("write rest of frame: %w", err)
	}
	return nil
}

// writeMessage writes b, a marshalled message, as one frame or in chunks.
func (fw *frameWriter) writeMessage(b []byte) error {
	if len(b) <= maxFrameSize {
		return fw.writeFrame(frameMessage, b)
	}
	if len(b) > maxMessageSize {
		return fmt.Errorf("message of %d bytes above the transport's limit of %d", len(b), maxMessageSize)
	}
	var total [8]byte
	binary.BigEndian.PutUint64(total[:], uint64(len(b)))
	if err := fw.writeFrame(frameLargeStart, total[:]); err != nil {
		return err
	}
	for len(b) > 0 {
		n := min(len(b), chunkSize)
		if err := fw.writeFrame(frameChunk, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (fw *frameWriter) writeFrame(kind byte, payload []byte) error {
	n := len(payload)
	hdr := [frameHeaderSize]byte{kind, byte(n >> 16), byte(n >> 8), byte(n)}
	if err := fw.setDeadline(); err != nil {
		return err
	}
	if _, err := fw.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("write frame header: %w", err)
	}
	if _, err := fw.w.Write(payload); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

func (fw *frameWriter) flush() error {
	if err := fw.setDeadline(); err != nil {
		return err
	}
	if err := fw.w.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// frameReader decodes messages from an inbound connection.
type frameReader struct {
	r   io.Reader
	buf []byte // one frame's payload, reused; never longer than maxFrameSize
}

func newFrameReader(r io.Reader) *frameReader { return &frameReader{r: r} }

// readFrame reads one frame; the payload is valid until the next call.
func (fr *frameReader) readFrame() (byte, []byte, error) {
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	kind := hdr[0]
	n := int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
	if kind > frameChunk {
		return 0, nil, fmt.Errorf("%w: unknown kind %d", errFrame, kind)
	}
	if n > maxFrameSize {
		return 0, nil, fmt.Errorf("%w: %d bytes, above the limit of %d", errFrame, n, maxFrameSize)
	}
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	payload := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		return 0, nil, fmt.Errorf("read frame of %d bytes: %w", n, err)
	}
	return kind, payload, nil
}

// next reads the next message, reassembling a chunked one.
func (fr *frameReader) next() (*pb.Message, error) {
	kind, payload, err := fr.readFrame()
	if err != nil {
		return nil, err
	}
	switch kind {
	case frameMessage:
		return unmarshalMessage(payload)
	case frameLargeStart:
		if len(payload) != 8 {
			return nil, fmt.Errorf("%w: chunked message header of %d bytes", errFrame, len(payload))
		}
		total := binary.BigEndian.Uint64(payload)
		if total <= maxFrameSize || total > maxMessageSize {
			return nil, fmt.Errorf("%w: chunked message of %d bytes", errFrame, total)
		}
		// Grows with the chunks actually received, not with the header.
		data := make([]byte, 0, chunkSize)
		for uint64(len(data)) < total {
			kind, payload, err := fr.readFrame()
			if err != nil {
				return nil, fmt.Errorf("chunked message at %d of %d bytes: %w", len(data), total, err)
			}
			if kind != frameChunk || len(payload) == 0 {
				return nil, fmt.Errorf("%w: frame kind %d (%d bytes) inside a chunked message", errFrame, kind, len(payload))
			}
			if uint64(len(data))+uint64(len(payload)) > total {
				return nil, fmt.Errorf("%w: chunks overrun the announced %d bytes", errFrame, total)
			}
			data = append(data, payload...)
		}
		return unmarshalMessage(data)
	default:
		return nil, fmt.Errorf("%w: chunk outside a chunked message", errFrame)
	}
}

func unmarshalMessage(b []byte) (*pb.Message, error) {
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %w", errFrame, err)
	}
	return m, nil
}
