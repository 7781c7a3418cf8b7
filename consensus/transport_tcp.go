package consensus

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TCP transport wire format: a stream of frames, each a 4-byte big-endian
// length followed by that many bytes of a proto-marshalled raftpb.Message.
// Connections are one-way: a member dials each peer once and only writes;
// it only reads on the connections peers dialled to it.
const (
	frameHeaderSize = 4
	// maxFrameSize bounds one message (snapshots travel as one message).
	maxFrameSize = 1 << 30

	defaultQueueSize   = 4096
	defaultDialTimeout = time.Second
	writeTimeout       = 10 * time.Second
	backoffMin         = 20 * time.Millisecond
	backoffMax         = time.Second
)

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	ID         uint64       // this member's id; messages to it are never sent
	ListenAddr string       // host:port to listen on; ignored if Listener is set
	Listener   net.Listener // optional pre-opened listener (tests use 127.0.0.1:0)
	Peers      []Peer       // known peers; self is skipped
	QueueSize  int          // per-peer send queue in messages, default 4096
	Logger     zerolog.Logger
	// TLS, when set, secures every connection, inbound and outbound, with
	// this config (see transport_tls.go): it must carry this member's
	// certificate and, for mutual authentication, ClientAuth and ClientCAs.
	TLS *tls.Config
}

// TCPTransport is a Transport over plain TCP: one persistent outbound
// connection per peer, fed by a bounded queue. When a queue is full, or a
// peer cannot be reached, messages are dropped and raft is told the peer is
// unreachable; raft retransmits. Reconnects back off exponentially.
type TCPTransport struct {
	cfg TCPConfig
	lg  zerolog.Logger

	mu      sync.Mutex
	h       MessageHandler
	ln      net.Listener
	peers   map[uint64]*tcpPeer
	inbound map[net.Conn]struct{}
	stopped bool

	stopc chan struct{}
	wg    sync.WaitGroup
}

var (
	_ Transport   = (*TCPTransport)(nil)
	_ PeerUpdater = (*TCPTransport)(nil)
)

// NewTCPTransport returns a transport; it does nothing until Start.
func NewTCPTransport(cfg TCPConfig) *TCPTransport {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueSize
	}
	return &TCPTransport{
		cfg:     cfg,
		lg:      cfg.Logger.With().Str("component", "transport").Uint64("node_id", cfg.ID).Logger(),
		peers:   make(map[uint64]*tcpPeer),
		inbound: make(map[net.Conn]struct{}),
		stopc:   make(chan struct{}),
	}
}

// Addr returns the listening address (after Start, or of cfg.Listener).
func (t *TCPTransport) Addr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln != nil {
		return t.ln.Addr()
	}
	if t.cfg.Listener != nil {
		return t.cfg.Listener.Addr()
	}
	return nil
}

// Start listens and starts one sender per known peer.
func (t *TCPTransport) Start(h MessageHandler) error {
	ln := t.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", t.cfg.ListenAddr); err != nil {
			return fmt.Errorf("listen %s: %w", t.cfg.ListenAddr, err)
		}
	}
	ln = t.wrapListener(ln)
	t.mu.Lock()
	t.h, t.ln = h, ln
	t.mu.Unlock()
	for _, p := range t.cfg.Peers {
		t.AddPeer(p)
	}
	t.wg.Go(t.acceptLoop)
	return nil
}

// Stop closes the listener and all connections and waits for goroutines.
func (t *TCPTransport) Stop() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	close(t.stopc)
	if t.ln != nil {
		_ = t.ln.Close()
	}
	for c := range t.inbound {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// AddPeer starts sending to p (idempotent; an address change restarts the
// sender).
func (t *TCPTransport) AddPeer(p Peer) {
	if p.ID == t.cfg.ID || p.Addr == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if old, ok := t.peers[p.ID]; ok {
		if old.addr == p.Addr {
			return
		}
		close(old.stopc)
	}
	tp := &tcpPeer{
		t:     t,
		id:    p.ID,
		addr:  p.Addr,
		queue: make(chan outFrame, t.cfg.QueueSize),
		stopc: make(chan struct{}),
	}
	t.peers[p.ID] = tp
	t.wg.Go(tp.run)
}

// RemovePeer stops sending to id.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		close(p.stopc)
		delete(t.peers, id)
	}
}

// Send marshals each message (raft may reuse them after Send returns) and
// queues it for its peer without blocking.
func (t *TCPTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		to := m.GetTo()
		t.mu.Lock()
		p := t.peers[to]
		t.mu.Unlock()
		isSnap := m.GetType() == pb.MsgSnap
		if p == nil {
			t.lg.Debug().Uint64("to", to).Str("type", m.GetType().String()).Msg("drop message to unknown peer")
			if isSnap {
				t.reportSnapshot(to, true)
			}
			continue
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.lg.Error().Err(err).Uint64("to", to).Msg("marshal raft message")
			continue
		}
		select {
		case p.queue <- outFrame{buf: b, snap: isSnap}:
		default:
			t.lg.Debug().Uint64("to", to).Msg("send queue full, dropping message")
			p.reportUnreachable()
			if isSnap {
				t.reportSnapshot(to, true)
			}
		}
	}
}

func (t *TCPTransport) handler() MessageHandler {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h
}

func (t *TCPTransport) reportSnapshot(id uint64, failed bool) {
	t.wg.Go(func() { t.handler().ReportSnapshot(id, failed) })
}

func (t *TCPTransport) acceptLoop() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stopc:
			default:
				t.lg.Error().Err(err).Msg("accept failed, transport stops receiving")
			}
			return
		}
		t.mu.Lock()
		if t.stopped {
			t.mu.Unlock()
			_ = c.Close()
			return
		}
		t.inbound[c] = struct{}{}
		t.mu.Unlock()
		t.wg.Go(func() { t.readLoop(c) })
	}
}

// readLoop hands every frame on an inbound connection to raft.
func (t *TCPTransport) readLoop(c net.Conn) {
	defer func() {
		t.mu.Lock()
		delete(t.inbound, c)
		t.mu.Unlock()
		_ = c.Close()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !t.handshakeInbound(ctx, c) {
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	h := t.handler()
	var hdr [frameHeaderSize]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrameSize {
			t.lg.Warn().Uint32("bytes", n).Str("remote", c.RemoteAddr().String()).Msg("frame too large, closing connection")
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(buf, m); err != nil {
			t.lg.Warn().Err(err).Str("remote", c.RemoteAddr().String()).Msg("bad frame, closing connection")
			return
		}
		if err := h.Step(ctx, m); err != nil {
			if errors.Is(err, ErrStopped) || ctx.Err() != nil {
				return
			}
			t.lg.Debug().Err(err).Msg("step message")
		}
	}
}

type outFrame struct {
	buf  []byte
	snap bool
}

// tcpPeer owns the outbound connection to one peer.
type tcpPeer struct {
	t         *TCPTransport
	id        uint64
	addr      string
	queue     chan outFrame
	stopc     chan struct{}
	reporting atomic.Bool
}

// reportUnreachable tells raft asynchronously, at most one report in flight,
// so the raft loop never waits on it.
func (p *tcpPeer) reportUnreachable() {
	if p.reporting.CompareAndSwap(false, true) {
		p.t.wg.Go(func() {
			defer p.reporting.Store(false)
			p.t.handler().ReportUnreachable(p.id)
		})
	}
}

func (p *tcpPeer) run() {
	var (
		conn     net.Conn
		w        *bufio.Writer
		backoff  = backoffMin
		nextDial time.Time
	)
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	drop := func(f outFrame) {
		p.reportUnreachable()
		if f.snap {
			p.t.reportSnapshot(p.id, true)
		}
	}
	fail := func(f outFrame, err error) {
		p.t.lg.Debug().Err(err).Uint64("peer", p.id).Str("addr", p.addr).Dur("backoff", backoff).Msg("peer unreachable")
		if conn != nil {
			_ = conn.Close()
			conn, w = nil, nil
		}
		nextDial = time.Now().Add(backoff)
		backoff = min(2*backoff, backoffMax)
		drop(f)
	}
	for {
		var f outFrame
		select {
		case f = <-p.queue:
		case <-p.stopc:
			return
		case <-p.t.stopc:
			return
		}
		if conn == nil {
			if time.Now().Before(nextDial) {
				// Backing off: drop rather than deliver stale messages later.
				drop(f)
				continue
			}
			c, err := p.t.dial(p.addr)
			if err != nil {
				fail(f, err)
				continue
			}
			conn, w = c, bufio.NewWriterSize(c, 64<<10)
			backoff = backoffMin
		}
		// Write this frame and whatever else is queued, then flush once.
		snaps := 0
		var err error
		for {
			if f.snap {
				snaps++
			}
			var hdr [frameHeaderSize]byte
			binary.BigEndian.PutUint32(hdr[:], uint32(len(f.buf)))
			_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err = w.Write(hdr[:]); err == nil {
				_, err = w.Write(f.buf)
			}
			if err != nil {
				break
			}
			more := false
			select {
			case f = <-p.queue:
				more = true
			default:
			}
			if !more {
				break
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			fail(outFrame{snap: snaps > 0}, err)
			continue
		}
		for range snaps {
			p.t.reportSnapshot(p.id, false)
		}
	}
}
