package consensus

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/zkraft/zkraft/internal/netseam"
)

// The wire format is in transport_frame.go: connections are one-way, a
// member dials each peer once and only writes; it only reads on the
// connections peers dialled to it.
const (
	defaultQueueSize   = 4096
	defaultDialTimeout = time.Second
	defaultWarnAfter   = time.Second
	writeTimeout       = 10 * time.Second
	backoffMin         = 20 * time.Millisecond
	backoffMax         = time.Second
	// maxBatch bounds the frames written before one flush.
	maxBatch = 256
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
	// Network is where the transport listens (unless Listener is set) and
	// dials its peers; nil means the operating system's (netseam.OS).
	// TLS, when set, is layered on top of it.
	Network netseam.Network
	// DialTimeout bounds one dial of a peer (default 1 s); with TLS the
	// handshake that follows has its own bound. Stop, and the stop of the
	// peer's sender, cancel a dial in progress.
	DialTimeout time.Duration
	// WarnAfter is how long a peer may stay unreachable, or leave what is
	// written to it unanswered, before a warning is logged (default 1 s;
	// the server passes the election timeout).
	WarnAfter time.Duration
}

// TCPTransport is a Transport over plain TCP: one persistent outbound
// connection per peer, fed by a bounded queue. When a queue is full, or a
// peer cannot be reached, messages are dropped and raft is told the peer is
// unreachable (and, for a snapshot, that it failed); raft retransmits.
// Reconnects back off exponentially. Every message handed to Send is either
// written or counted as dropped and reported, including those still queued
// when a peer's sender stops (address change, removal). PeerStats counts
// per peer.
type TCPTransport struct {
	cfg TCPConfig
	lg  zerolog.Logger

	mu      sync.Mutex
	h       MessageHandler
	ln      net.Listener
	peers   map[uint64]*tcpPeer
	inbound map[net.Conn]struct{}
	stopped bool

	statsMu sync.Mutex
	stats   map[uint64]*peerCounters

	stopc chan struct{}
	// beforeTake, set only by tests before Start, is called by each peer's
	// sender goroutine before it waits for the next frame.
	beforeTake func()
	// peerClosedHook, set only by tests before Start, is called when the
	// read that waits for a peer to close its connection returned
	// (watchPeerClose).
	peerClosedHook func(id uint64)
	// ctx is canceled by Stop: the peers' dials derive from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
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
	if cfg.WarnAfter <= 0 {
		cfg.WarnAfter = defaultWarnAfter
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	cfg.Network = netseam.Or(cfg.Network)
	ctx, cancel := context.WithCancel(context.Background())
	return &TCPTransport{
		ctx:     ctx,
		cancel:  cancel,
		cfg:     cfg,
		lg:      cfg.Logger.With().Str("component", "transport").Uint64("node_id", cfg.ID).Logger(),
		peers:   make(map[uint64]*tcpPeer),
		inbound: make(map[net.Conn]struct{}),
		stats:   make(map[uint64]*peerCounters),
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
		if ln, err = t.cfg.Network.Listen("tcp", t.cfg.ListenAddr); err != nil {
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
	t.wg.Go(t.monitorLoop)
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
	t.cancel()
	if t.ln != nil {
		_ = t.ln.Close()
	}
	for c := range t.inbound {
		_ = c.Close()
	}
	for _, p := range t.peers {
		p.stop()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// AddPeer starts sending to p (idempotent). An address change restarts the
// sender: messages still queued for the old address are dropped and
// reported (a snapshot as failed, so raft sends it again).
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
		t.lg.Info().Uint64("peer", p.ID).Str("old_addr", old.addr).Str("addr", p.Addr).Msg("peer address changed")
		old.stop()
	}
	ctx, cancel := context.WithCancel(t.ctx)
	pc := t.counters(p.ID)
	pc.mu.Lock()
	pc.addr = p.Addr
	pc.mu.Unlock()
	tp := &tcpPeer{
		t:       t,
		id:      p.ID,
		addr:    p.Addr,
		pc:      pc,
		queue:   make(chan outFrame, t.cfg.QueueSize),
		stopc:   make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
		retirec: make(chan struct{}),
		done:    make(chan struct{}),
	}
	t.peers[p.ID] = tp
	t.wg.Go(tp.run)
}

// RemovePeer stops sending to id. What is already queued is still written,
// for at most retireGrace: it holds the message that commits the member's own
// removal, without which a removed member never learns it was removed
// (the leader stops replicating to it once it applied the change). Whatever
// is left after that is dropped and reported. It does not block.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		p.retire(retireGrace)
		delete(t.peers, id)
	}
}

// retireGrace bounds how long a removed peer's sender may keep writing what
// was queued before the removal.
const retireGrace = time.Second

// Send marshals each message (raft may reuse them after Send returns) and
// writes it to its peer's connection at once, from the caller's goroutine,
// when that never waits (writeNow: nothing queued for the peer, nobody
// writing to it, and the socket takes the frame), or else queues it for
// the peer's sender goroutine, without blocking. Writing at once saves a
// hand-off to the sender goroutine, which on a busy machine was a median
// 44-111 µs per message in a 3-member benchmark (the raft loop starts the
// log write right after sending its appends, and the sender goroutine
// waited behind it), and a write's critical path holds up to four such
// messages. The queueing happens under t.mu, as AddPeer and RemovePeer
// stop senders, so a message is never queued to a sender that already
// drained its queue; the writes at once happen under it too, so they keep
// the order of Send calls with the queued ones.
func (t *TCPTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		to := m.GetTo()
		isSnap := m.GetType() == pb.MsgSnap
		// Marshalled behind room for the frame header, so that a frame
		// written at once is one write.
		size := proto.Size(m)
		fb, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(make([]byte, frameHeaderSize, frameHeaderSize+size), m)
		if err != nil {
			t.lg.Error().Err(err).Uint64("to", to).Msg("marshal raft message")
			if isSnap {
				t.reportSnapshot(to, true)
			}
			continue
		}
		b := fb[frameHeaderSize:]
		t.mu.Lock()
		p := t.peers[to]
		queued := false
		if p != nil {
			if !isSnap && len(b) <= maxFrameSize && p.writeNow(fb) {
				queued = true
			} else {
				select {
				case p.queue <- outFrame{buf: b, snap: isSnap}:
					p.unwritten.Add(1)
					queued = true
				default:
				}
			}
		}
		t.mu.Unlock()
		switch {
		case p == nil:
			t.lg.Debug().Uint64("to", to).Str("type", m.GetType().String()).Msg("drop message to unknown peer")
			if isSnap {
				t.reportSnapshot(to, true)
			}
		case !queued:
			t.lg.Debug().Uint64("to", to).Msg("send queue full, dropping message")
			p.drop(outFrame{snap: isSnap})
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
	fr := newFrameReader(bufio.NewReaderSize(c, 64<<10))
	h := t.handler()
	var from uint64
	var pc *peerCounters
	// The watchdog warns when raft has not taken a message within WarnAfter:
	// the peer's later messages (heartbeats among them) wait behind it.
	var stepping atomic.Value // stepInfo
	watchdog := time.AfterFunc(time.Hour, func() {
		si, _ := stepping.Load().(stepInfo)
		t.lg.Warn().Uint64("peer", si.from).Str("type", si.typ.String()).Dur("for", t.cfg.WarnAfter).
			Str("remote", c.RemoteAddr().String()).
			Msg("raft has not taken a message from this peer; its later messages wait behind it")
	})
	watchdog.Stop()
	defer watchdog.Stop()
	for {
		m, err := fr.next()
		if err != nil {
			if errors.Is(err, errFrame) {
				t.lg.Warn().Err(err).Str("remote", c.RemoteAddr().String()).Uint64("peer", from).Msg("bad frame from peer, closing connection")
			} else {
				t.lg.Debug().Err(err).Str("remote", c.RemoteAddr().String()).Msg("inbound peer connection closed")
			}
			return
		}
		if m.GetFrom() != from || pc == nil {
			from = m.GetFrom()
			pc = t.knownCounters(from)
		}
		if pc != nil {
			pc.heard(time.Now())
		}
		stepping.Store(stepInfo{from: from, typ: m.GetType()})
		watchdog.Reset(t.cfg.WarnAfter)
		err = h.Step(ctx, m)
		watchdog.Stop()
		if err != nil {
			if errors.Is(err, ErrStopped) || ctx.Err() != nil {
				return
			}
			t.lg.Debug().Err(err).Uint64("from", from).Str("type", m.GetType().String()).Msg("step message")
		}
	}
}

// stepInfo names the message an inbound connection is handing to raft.
type stepInfo struct {
	from uint64
	typ  pb.MessageType
}

// knownCounters returns id's counters, nil for an id AddPeer never saw (a
// remote's From field does not grow the map).
func (t *TCPTransport) knownCounters(id uint64) *peerCounters {
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	return t.stats[id]
}

type outFrame struct {
	buf  []byte
	snap bool
	// raw: buf is the rest of a frame writeNow wrote in part, written as
	// is (it must be the next bytes on the connection).
	raw bool
}

// tcpPeer owns the outbound connection to one peer.
type tcpPeer struct {
	t         *TCPTransport
	id        uint64
	addr      string
	pc        *peerCounters
	queue     chan outFrame
	stopc     chan struct{}
	ctx       context.Context // canceled by stop (and the transport's Stop): ends a dial
	cancel    context.CancelFunc
	stopOnce  sync.Once
	retirec   chan struct{} // closed by retire: write what is queued, then end
	retireOne sync.Once
	done      chan struct{} // closed when run returns
	reporting atomic.Bool

	connMu sync.Mutex
	conn   net.Conn // the current connection, closed by stop to end a blocked write

	// Writing at once (writeNow). wmu is held by whoever writes to the
	// connection: the sender goroutine for everything it does with a
	// frame it took from the queue (dial, write, flush, close), or
	// writeNow, which only tries it (TryLock) and never waits.
	wmu sync.Mutex
	fw  *frameWriter    // the sender's writer, nil while not connected; under wmu
	raw syscall.RawConn // fw's socket if it is a plain socket (not TLS); under wmu
	// unwritten counts the frames queued and not yet written or dropped
	// (the sender subtracts a batch once it is done with it): while it is
	// not zero, a frame written at once would overtake them. It only grows
	// under t.mu, which writeNow holds.
	unwritten atomic.Int64
	// watchers are the goroutines, one per connection dialled, that wait
	// for the peer to close it (watchPeerClose); run waits for them.
	watchers sync.WaitGroup
}

// writeNow writes fb, a whole frame (header room included), to the
// connection from the caller's goroutine, if that can happen at once and
// in order: connected on a plain socket, nothing queued or being written
// (unwritten, wmu), the writer's buffer empty, and the socket taking at
// least part of it without waiting (writeNow the function). It reports
// whether fb was handed over: written, or written in part with the rest
// queued as the next bytes for the sender. Otherwise nothing was written
// and the caller queues fb's message as usual: also when the socket's
// write deadline, set by the sender's last write, has passed (after an
// idle spell, so about one frame in ten seconds goes through the queue,
// whose write sets a new deadline). Called under t.mu.
func (p *tcpPeer) writeNow(fb []byte) bool {
	if p.unwritten.Load() != 0 || !p.wmu.TryLock() {
		return false
	}
	defer p.wmu.Unlock()
	if p.raw == nil || p.fw == nil || p.fw.peerClosed.Load() || p.fw.w.Buffered() != 0 || p.unwritten.Load() != 0 || p.stopped() {
		return false
	}
	n := len(fb) - frameHeaderSize
	fb[0], fb[1], fb[2], fb[3] = frameMessage, byte(n>>16), byte(n>>8), byte(n)
	w := writeNow(p.raw, fb)
	if w <= 0 {
		return false
	}
	if w < len(fb) {
		// The queue is empty (unwritten is zero under t.mu), so this
		// cannot fail; if it did, the stream would be torn: close it, and
		// the sender reconnects.
		select {
		case p.queue <- outFrame{buf: fb[w:], raw: true}:
			p.unwritten.Add(1)
		default:
			_ = p.fw.conn.Close()
			p.raw = nil
		}
		return true
	}
	p.pc.wrote(1, time.Now(), p.t.cfg.WarnAfter)
	return true
}

// connHealthyAfter: a connection the peer closes sooner after it was
// dialled counts as a failed dial (backoff), and only a connection that held
// this long resets the backoff. A variable for tests.
var connHealthyAfter = time.Second

// watchPeerClose reads from fw's connection, on which the peer never writes,
// until the read returns: the peer closed or reset the connection (it
// stopped or restarted), or the connection was closed here. It marks fw, so
// that the next message is not written into a connection the peer left:
// the kernel takes that write and the peer's reset answers it, which the
// writer learns only on the write after, so the message is lost without an
// error (a restarted member's first vote, which held an election up by an
// election timeout). Owned by run, which waits for it after closing the
// connection.
func (p *tcpPeer) watchPeerClose(fw *frameWriter) {
	defer p.watchers.Done()
	var b [1]byte
	n, err := fw.conn.Read(b[:])
	if n > 0 {
		err = errors.New("the peer wrote on a connection it only reads")
	}
	fw.readErr = err // before the Store: read by the sender after its Load
	fw.peerClosed.Store(true)
	if h := p.t.peerClosedHook; h != nil {
		h(p.id)
	}
}

// stop ends the sender: run drops and reports what is still queued. It
// never blocks (AddPeer and RemovePeer call it on the raft loop): canceling
// its context ends a dial in progress, an expired deadline a write, and the sender's own goroutine closes
// the connection (a TLS close can wait seconds for its close_notify).
func (p *tcpPeer) stop() {
	p.stopOnce.Do(func() {
		close(p.stopc)
		p.cancel()
		p.connMu.Lock()
		if p.conn != nil {
			_ = p.conn.SetDeadline(time.Now())
		}
		p.connMu.Unlock()
	})
}

// retire lets the sender write what is already queued and end; after grace
// it is stopped whatever it is doing. It never blocks.
func (p *tcpPeer) retire(grace time.Duration) {
	p.retireOne.Do(func() {
		close(p.retirec)
		p.t.wg.Go(func() {
			timer := time.NewTimer(grace)
			defer timer.Stop()
			select {
			case <-p.done:
			case <-timer.C:
			case <-p.t.stopc:
			}
			p.stop()
		})
	})
}

func (p *tcpPeer) stopped() bool {
	select {
	case <-p.stopc:
		return true
	case <-p.t.stopc:
		return true
	default:
		return false
	}
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

// drop counts frames that will not be written and tells raft: the peer is
// unreachable, and every snapshot among them failed.
func (p *tcpPeer) drop(frames ...outFrame) {
	p.pc.dropped.Add(uint64(len(frames)))
	p.reportUnreachable()
	for _, f := range frames {
		if f.snap {
			p.t.reportSnapshot(p.id, true)
		}
	}
}

// drain drops whatever is still queued when the sender stops.
func (p *tcpPeer) drain() {
	for {
		select {
		case f := <-p.queue:
			p.drop(f)
		default:
			return
		}
	}
}

// errPeerStopped is a write to a peer that was stopped meanwhile.
var errPeerStopped = errors.New("consensus: peer sender stopped")

// setWriteDeadline gives the next frame to c its write deadline, unless
// the peer was stopped: stop sets the connection's deadline to now, under
// connMu, to end a blocked write; a frame's deadline set after it would
// block the writer for writeTimeout again (a large message is written as
// many frames), so under connMu a stopped peer's next frame fails instead.
func (p *tcpPeer) setWriteDeadline(c net.Conn) error {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.stopped() {
		return errPeerStopped
	}
	if err := c.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	return nil
}

// newFrameWriter is the sender's writer to c: each frame's deadline is
// set by setWriteDeadline.
func (p *tcpPeer) newFrameWriter(c net.Conn) *frameWriter {
	fw := newFrameWriter(c)
	fw.deadline = func() error { return p.setWriteDeadline(c) }
	return fw
}

func (p *tcpPeer) setConn(c net.Conn) bool {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.stopped() {
		return false
	}
	p.conn = c
	return true
}

func (p *tcpPeer) run() {
	var (
		fw       *frameWriter
		backoff  = backoffMin
		nextDial time.Time
		batch    []outFrame
	)
	closeConn := func() { // under wmu
		if fw != nil {
			_ = fw.conn.Close()
			fw = nil
		}
		p.fw, p.raw = nil, nil
	}
	defer func() {
		p.wmu.Lock()
		closeConn()
		p.wmu.Unlock()
		p.watchers.Wait() // each ends once its connection is closed
		p.drain()
		close(p.done)
	}()
	fail := func(err error) {
		now := time.Now()
		p.t.lg.Debug().Err(err).Uint64("peer", p.id).Str("addr", p.addr).Dur("backoff", backoff).Msg("peer unreachable")
		p.pc.failed(err, now)
		closeConn()
		nextDial = now.Add(backoff)
		backoff = min(2*backoff, backoffMax)
		p.drop(batch...)
	}
	// send handles batch, whose one frame f was just taken from the
	// queue, under wmu: connect if need be, write f and whatever else is
	// queued, flush. It reports whether the sender must end.
	send := func(f outFrame) (stop bool) {
		if p.stopped() {
			p.drop(batch...)
			return true
		}
		if fw != nil && fw.peerClosed.Load() {
			// The peer closed the connection: a write there would be lost
			// without an error. Dial anew, unless the peer closes what it
			// accepts (a TLS peer refusing this member's certificate, a
			// proxy whose target is down): that is a failed dial, with its
			// backoff, not a dial per message.
			age, err := time.Since(fw.dialed), fw.readErr
			closeConn()
			if age < connHealthyAfter {
				fail(fmt.Errorf("peer closed the connection %v after it was dialled: %w", age.Round(time.Millisecond), err))
				return false
			}
			p.t.lg.Debug().Err(err).Uint64("peer", p.id).Str("addr", p.addr).Msg("peer closed the connection, dialling again")
		}
		if fw == nil && f.raw {
			// The rest of a frame whose start went to a connection that
			// is gone: nothing to add it to.
			p.drop(batch...)
			return false
		}
		if fw == nil {
			if time.Now().Before(nextDial) {
				// Backing off: drop rather than deliver stale messages later.
				p.drop(batch...)
				return false
			}
			c, err := p.t.dial(p.ctx, p.addr)
			if err != nil {
				fail(fmt.Errorf("dial %s: %w", p.addr, err))
				return false
			}
			if !p.setConn(c) {
				_ = c.Close()
				p.drop(batch...)
				return true
			}
			fw = p.newFrameWriter(c)
			fw.dialed = time.Now()
			p.fw, p.raw = fw, rawConn(c)
			p.watchers.Add(1)
			go p.watchPeerClose(fw)
			p.pc.dials.Add(1)
		}
		// Write this frame and whatever else is queued, then flush once.
		err := fw.write(f)
		for err == nil && len(batch) < maxBatch {
			more := false
			select {
			case f = <-p.queue:
				more = true
			default:
			}
			if !more {
				break
			}
			batch = append(batch, f)
			err = fw.write(f)
		}
		if err == nil {
			err = fw.flush()
		}
		if err != nil {
			fail(err)
			return false
		}
		now := time.Now()
		if now.Sub(fw.dialed) >= connHealthyAfter {
			backoff = backoffMin // the connection held: the next failure starts over
		}
		p.pc.wrote(len(batch), now, p.t.cfg.WarnAfter)
		for _, f := range batch {
			if f.snap {
				p.t.reportSnapshot(p.id, false)
			}
		}
		return false
	}
	for {
		// The last batch was written or dropped: writeNow may write again
		// once nothing else is queued.
		p.unwritten.Add(-int64(len(batch)))
		batch = batch[:0]
		if p.t.beforeTake != nil {
			p.t.beforeTake()
		}
		var f outFrame
		select {
		case f = <-p.queue:
		case <-p.retirec:
			select {
			case f = <-p.queue:
			default:
				return // retired and everything queued was written
			}
		case <-p.stopc:
			return
		case <-p.t.stopc:
			return
		}
		batch = append(batch, f)
		p.wmu.Lock()
		stop := send(f)
		p.wmu.Unlock()
		if stop {
			return
		}
	}
}

// rawConn returns c's socket for writeNow, nil unless c is the operating
// system's TCP or Unix socket itself (a TLS connection must encrypt what it
// writes, and a wrapper that embeds a socket may count or alter what goes
// through its Write, which a raw write would bypass).
func rawConn(c net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
