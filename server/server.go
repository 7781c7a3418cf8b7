package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/internal/netseam"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// Server is one zkraft member: client connections in front of a raft group
// (one member when standalone). See doc.go for the request path.
type Server struct {
	cfg     Config
	log     zerolog.Logger
	start   time.Time
	network netseam.Network // cfg.Network, or the operating system's
	// queueCap is each connection's request queue capacity: maxInFlight
	// (tests set less before Start, to make the reader wait for room on
	// every few requests).
	queueCap int

	sm      *stateMachine
	node    *consensus.Node
	watches *watchManager
	tracker *session.Tracker
	ids     *session.IDGenerator
	// lead is the leader-side session logic (leader.go): the leader flag,
	// the leader change, the expiry and container rounds.
	lead *sessionLeader

	// Proposals waiting for their entry to be applied, keyed by ReqID.
	waitMu   sync.Mutex
	waiters  map[uint64]waiter
	reqBase  uint64 // random per incarnation, so replayed entries never match a new waiter
	reqCount atomic.Uint64

	connMu   sync.Mutex
	conns    map[*conn]struct{}
	bySess   map[int64]*conn // the connection each session is attached to
	perIP    map[string]int
	nextConn atomic.Uint64

	listener net.Listener // nil when clientPort < 0 (TLS clients only)
	stats    serverStats
	ops      *operability // AdminServer, Prometheus endpoint, request metrics (admin.go, metrics.go)

	// TLS (tls.go, tls_listen.go): nil when not configured.
	secureLn  net.Listener
	clientTLS *tls.Config
	sasl      *saslLogin // sasl.go: nil without a JAAS file; set by Start
	quorumTLS *tls.Config

	// Ensemble state.
	serving    atomic.Bool      // false while no leader with a quorum is known
	liveness   *LivenessReports // sessions seen since the last liveness report
	memberMu   sync.RWMutex
	memberSet  map[uint64]Member
	peerLn     net.Listener // liveness side channel
	transport  consensus.Transport
	reconfigMu sync.Mutex // one reconfig at a time

	stopOnce sync.Once
	stopC    chan struct{}
	stopCtx  context.Context // canceled when Stop begins, with stopC: bounds the loops' proposals
	stopCtxC context.CancelFunc
	wg       sync.WaitGroup // the server's loops (accept, expiry, container, liveness)
	connWG   sync.WaitGroup // client connections' goroutines (serve, writer); see addConn
	// writersStarted counts the connection writer goroutines started
	// (startWriter), for tests of when a connection needs none.
	writersStarted atomic.Int64
}

// New builds a server from a config; Start runs it.
func New(cfg Config, log zerolog.Logger) *Server {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &Server{
		cfg:      cfg,
		log:      log,
		start:    time.Now(),
		network:  netseam.Or(cfg.Network),
		queueCap: maxInFlight,
		watches:  newWatchManager(),
		tracker:  session.NewTracker(session.SystemClock{}, int64(cfg.TickTimeMs)),
		ids:      session.NewIDGenerator(uint8(cfg.ServerID), time.Now().UnixMilli()),
		waiters:  map[uint64]waiter{},
		reqBase:  binary.BigEndian.Uint64(b[:]) &^ 0xffffffff,
		conns:    map[*conn]struct{}{},
		bySess:   map[int64]*conn{},
		perIP:    map[string]int{},
		stopC:    make(chan struct{}),
		liveness: NewLivenessReports(),
	}
	s.stopCtx, s.stopCtxC = context.WithCancel(context.Background())
	s.serving.Store(true)
	s.memberSet = cfg.Members
	if len(s.memberSet) == 0 {
		s.memberSet = map[uint64]Member{cfg.ServerID: {ID: cfg.ServerID, Role: "participant"}}
	}
	s.stats.reset()
	s.ops = newOperability(s)
	s.sm = newStateMachine(znode.Options{ExtendedTypesEnabled: cfg.ExtendedTypes, X509Enabled: cfg.X509Enabled(),
		SASLEnabled: cfg.SASLEnabled()},
		s.watches, s, log)
	delayMs, delayPaths := cfg.LockDelay()
	s.lead = newSessionLeader(s.sm, s.tracker, leaderConfig{
		retryAfter:     2 * time.Duration(cfg.ElectionTickMs*20) * time.Millisecond,
		lockDelayMs:    delayMs,
		lockDelayPaths: delayPaths,
	}, serverLeaderHooks{s}, log)
	return s
}

// Start opens storage, replays the log, waits until every committed entry is
// applied, then listens for clients.
func (s *Server) Start() (err error) {
	if err := s.setupTLS(); err != nil {
		return err
	}
	if err := s.setupSASL(); err != nil {
		return err
	}
	for _, dir := range []string{s.cfg.DataDir, s.cfg.LogDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
	}
	// From here on a failure releases everything opened so far (ports,
	// goroutines, the node) through Stop's teardown, so a failed Start can
	// be followed by another on the same ports.
	defer func() {
		if err != nil {
			s.stopOnce.Do(func() { _ = s.teardown() })
		}
	}()
	ccfg := consensus.Config{
		ID:            s.cfg.ServerID,
		Peers:         []consensus.Peer{{ID: s.cfg.ServerID}},
		DataDir:       s.cfg.LogDir(),
		SnapshotEvery: s.cfg.SnapshotEvery,
		// Entries kept behind a snapshot for followers that lag a little;
		// never more than a snapshot's worth, so snapCount bounds the log.
		KeepEntries:  min(s.cfg.SnapshotEvery, consensus.DefaultKeepEntries),
		TickInterval: time.Duration(s.cfg.ElectionTickMs) * time.Millisecond,
		Join:         s.cfg.Join,
		Logger:       s.log,
		OnLeaderChange: func(isLeader bool, leaderID, term uint64) {
			s.onLeaderChange(isLeader, leaderID, term)
		},
		OnRemoved:  s.memberRemoved,
		IsObserver: s.memberIsObserver,
	}
	if !s.cfg.Standalone() {
		self := s.cfg.Members[s.cfg.ServerID]
		ccfg.Peers = consensusPeers(s.cfg.Members)
		s.transport = consensus.NewTCPTransport(consensus.TCPConfig{
			ID: s.cfg.ServerID, ListenAddr: self.PeerAddr(), Peers: ccfg.Peers, Logger: s.log,
			TLS: s.quorumTLS, WarnAfter: ccfg.TickInterval * consensus.DefaultElectionTicks, Network: s.network,
		})
		ccfg.Transport = s.transport
		ln, err := s.network.Listen("tcp", self.ElectionAddr())
		if err != nil {
			return fmt.Errorf("listen on election port %s: %w", self.ElectionAddr(), err)
		}
		if s.quorumTLS != nil {
			ln = tls.NewListener(ln, s.quorumTLS) // sslQuorum covers the liveness channel too
		}
		s.peerLn = ln
	}
	node, err := consensus.Start(ccfg, s.sm)
	if err != nil {
		return fmt.Errorf("start consensus: %w", err)
	}
	s.node = node
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitCaughtUp(ctx, node); err != nil {
		return fmt.Errorf("wait for log replay: %w", err)
	}
	if s.cfg.ClientPort >= 0 {
		addr := net.JoinHostPort(s.cfg.ClientPortAddress, strconv.Itoa(s.cfg.ClientPort))
		ln, err := netseam.ListenClients(s.network, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		s.listener = ln
	}
	if err := s.listenSecure(); err != nil {
		return err
	}
	if err := s.ops.start(); err != nil {
		return err
	}
	if s.listener != nil {
		s.log.Info().Str("addr", s.listener.Addr().String()).Int64("zxid", s.sm.lastZxid.Load()).
			Int("sessions", s.sessionCount()).Msg("serving clients")
		s.wg.Add(1)
		go s.acceptLoop(s.listener, s.startPlain)
	}
	s.wg.Add(2)
	go s.expiryLoop()
	go s.containerLoop()
	if s.peerLn != nil {
		s.wg.Add(3)
		go s.livenessReceiver(s.peerLn)
		go s.livenessSender()
		go s.servingMonitor()
	}
	return nil
}

// waitCaughtUp returns once a leader exists and this member applied every
// entry committed before the call, retrying while there is no leader yet.
func waitCaughtUp(ctx context.Context, node *consensus.Node) error {
	for {
		_, err := node.ReadIndex(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-node.Done():
			return fmt.Errorf("consensus stopped: %w", node.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addr is the client listener's address; nil when there is only a secure
// client port (see SecureAddr).
func (s *Server) Addr() net.Addr {
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// Done is closed when the server stopped or its consensus node failed.
func (s *Server) Done() <-chan struct{} { return s.node.Done() }

// Err is why the consensus node stopped on its own (an entry this member
// cannot apply, a storage failure), or nil while it runs.
func (s *Server) Err() error { return s.node.Err() }

// Stop closes client connections and the listener, and stops the node. The
// sessions stay in the replicated state: clients reattach after a restart.
func (s *Server) Stop() error {
	var err error
	s.stopOnce.Do(func() {
		err = s.teardown()
		s.log.Info().Msg("server stopped")
	})
	return err
}

// teardown releases whatever Start opened, in any state Start left the
// server in: it closes the listeners and client connections, waits for the
// server's loops and for every connection goroutine to end, then stops the
// node. Called once, through stopOnce.
func (s *Server) teardown() error {
	close(s.stopC)
	s.stopCtxC()
	if s.listener != nil {
		_ = s.listener.Close()
	}
	if s.secureLn != nil {
		_ = s.secureLn.Close()
	}
	if s.peerLn != nil {
		_ = s.peerLn.Close()
	}
	s.ops.stop()
	s.connMu.Lock()
	for c := range s.conns {
		c.close()
	}
	s.connMu.Unlock()
	s.wg.Wait()     // the accept loops ended: addConn refuses from now on
	s.connWG.Wait() // every connection goroutine ended
	if s.node != nil {
		return s.node.Stop()
	}
	return nil
}

func (s *Server) sessionCount() int {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	return s.sm.sessions.Len()
}

// propose replicates an entry. onApplied, if not nil, runs exactly once: on
// the apply goroutine with the entry's result on this member, or with
// ConnectionLoss when a leader change fails the proposal. When propose
// returns an error, onApplied never runs.
func (s *Server) propose(ctx context.Context, e *entry, onApplied func(applyResult)) error {
	e.Proposer = s.cfg.ServerID
	if e.ReqID == 0 {
		e.ReqID = s.newReqID()
	}
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	if onApplied != nil {
		s.waitMu.Lock()
		s.waiters[e.ReqID] = applyFunc(onApplied)
		s.waitMu.Unlock()
	}
	if err := s.node.Propose(ctx, e.data()); err != nil {
		if onApplied != nil && !s.cancelWait(e.ReqID) {
			return nil // a leader change already handed the waiter its failure
		}
		return fmt.Errorf("propose: %w", err)
	}
	return nil
}

// proposeAsync is propose without waiting for raft to accept the entry
// (consensus.Node.ProposeAsync): a connection's writes are queued for the
// raft loop back to back, so that they share log writes. onFailed runs, on
// the raft loop, if the entry was not proposed and its waiter was still
// registered (then onApplied never runs); it must not block. A non-zero
// deadline fails the entry if raft has not taken it by then (proposeQueued).
// The error returned at once is propose's, and then neither callback runs.
func (s *Server) proposeAsync(ctx context.Context, deadline time.Time, e *entry, onApplied func(applyResult), onFailed func(error)) error {
	if e.ReqID == 0 {
		e.ReqID = s.newReqID()
	}
	reqID := e.ReqID
	return s.proposeQueued(ctx, deadline, e, applyFunc(onApplied), consensus.DoneFunc(func(err error) {
		if err != nil && s.cancelWait(reqID) {
			onFailed(fmt.Errorf("propose: %w", err))
		}
	}))
}

// waiter is handed the result of a proposed entry (Server.waiters): once,
// on the apply goroutine, with the entry's result on this member, or with
// errOutOfOrder when a leader change failed the proposal.
type waiter interface {
	applied(r applyResult)
}

// applyFunc is a func as a waiter (free to convert: a func is one
// pointer).
type applyFunc func(applyResult)

func (f applyFunc) applied(r applyResult) { f(r) }

// proposeQueued registers w as e's waiter and queues e for raft
// (consensus.Node.ProposeAsync), with done told whether raft took it: if
// not, done must cancelWait e's waiter (then w is not called) and fail
// the request; it runs on the raft loop and must not block. A non-zero
// deadline fails the entry if raft has not taken it by then, as a ctx
// with that deadline would, without a timer. The error returned at once
// is propose's, and then neither w nor done runs.
func (s *Server) proposeQueued(ctx context.Context, deadline time.Time, e *entry, w waiter, done consensus.ProposeDone) error {
	e.Proposer = s.cfg.ServerID
	if e.ReqID == 0 {
		e.ReqID = s.newReqID()
	}
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	s.waitMu.Lock()
	s.waiters[e.ReqID] = w
	s.waitMu.Unlock()
	if err := s.node.ProposeAsync(ctx, deadline, e.data(), done); err != nil {
		if !s.cancelWait(e.ReqID) {
			return nil // a leader change already handed the waiter its failure
		}
		return fmt.Errorf("propose: %w", err)
	}
	return nil
}

// failPendingProposals ends every proposal still waiting for its entry when
// the leader changes: raft drops proposals forwarded to a leader that died,
// without telling anyone. Each waiter gets ConnectionLoss, which closes its
// connection, so the client retries at once, as ZooKeeper's followers drop
// their clients when they lose the leader. A proposal that did commit is
// still applied; only its reply is lost, and the per-connection write order
// keeps any retry from applying out of order.
func (s *Server) failPendingProposals() {
	s.waitMu.Lock()
	pending := s.waiters
	s.waiters = map[uint64]waiter{}
	s.waitMu.Unlock()
	if len(pending) > 0 {
		s.log.Info().Int("pending", len(pending)).Msg("leader changed, failing proposals in flight")
	}
	for _, w := range pending {
		w.applied(applyResult{Err: errOutOfOrder})
	}
}

// newReqID returns a proposal id unique to this member's incarnation.
func (s *Server) newReqID() uint64 {
	return s.reqBase | (s.reqCount.Add(1) & 0xffffffff)
}

// cancelWait forgets a waiter; false if it was not registered any more
// (its result or a failure was already handed to it).
func (s *Server) cancelWait(reqID uint64) bool {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	_, ok := s.waiters[reqID]
	delete(s.waiters, reqID)
	return ok
}

// applied implements applyHooks: hand the result to the proposer's waiter.
func (s *Server) applied(e *entry, res applyResult) {
	if e.Proposer != s.cfg.ServerID {
		return
	}
	s.waitMu.Lock()
	w := s.waiters[e.ReqID]
	delete(s.waiters, e.ReqID)
	s.waitMu.Unlock()
	if w != nil {
		w.applied(res)
	}
}

func (s *Server) sessionCreated(sess session.Session) {
	s.tracker.Track(sess.ID, sess.TimeoutMs)
}

// sessionClosed implements applyHooks. Every member that holds a
// connection of the closed session closes it without a message, whichever
// member proposed the close and whether the leader expired the session or
// a client closed it (possibly on another member, with the session's id and
// password), as ZooKeeper closes the session's connection on every server:
// the client learns on reconnecting that its session expired. The one
// connection spared is the one whose closeSession this is: it answers the
// request, then closes.
func (s *Server) sessionClosed(id int64, expired bool, byConn uint64) {
	s.tracker.Remove(id)
	s.connMu.Lock()
	c := s.bySess[id]
	s.connMu.Unlock()
	if c != nil && (expired || byConn == 0 || c.connID != byConn) {
		c.close()
	}
	if expired {
		s.log.Info().Str("session", sessionHex(id)).Msg("session expired")
	} else if c != nil && c.connID != byConn {
		s.log.Info().Str("session", sessionHex(id)).Msg("session closed through another connection, closing this one")
	}
}

// sessionTouched implements applyHooks: an attach entry is about to be
// applied. The session's tracker deadline moves before its connection does
// (see decideExpiries), so a leader never decides to expire a session it saw
// attach a moment ago.
func (s *Server) sessionTouched(id int64) {
	s.tracker.Touch(id)
}

// expiryRefused implements applyHooks: an expire entry was refused because
// the session attached after the leader's decision or the deciding leader's
// term was over. The session is tracked afresh, so the leader that marked
// it closing decides again from new liveness.
func (s *Server) expiryRefused(sess session.Session) {
	s.tracker.Remove(sess.ID)
	s.tracker.Track(sess.ID, sess.TimeoutMs)
}

// stateReplaced implements applyHooks. A member that installs a snapshot
// while serving (it lagged behind the leader's log) closes its client
// connections: their watches were set on the old tree and the snapshot's
// changes fire no events. Clients reconnect and setWatches re-checks every
// watch against the new tree.
func (s *Server) stateReplaced() {
	s.connMu.Lock()
	n := len(s.conns)
	for c := range s.conns {
		c.close()
	}
	s.connMu.Unlock()
	if n > 0 {
		s.log.Info().Int("connections", n).Msg("state replaced by a snapshot, client connections closed")
	}
}

// onLeaderChange is consensus.Config.OnLeaderChange: the session part is
// the sessionLeader's (leader.go).
func (s *Server) onLeaderChange(isLeader bool, leaderID, term uint64) {
	if s.lead.leaderChange(isLeader, leaderID, term) && !s.cfg.Standalone() {
		go s.publishInitialConfig() // not from the raft goroutine: it proposes
	}
	s.log.Info().Bool("leader", isLeader).Uint64("leader_id", leaderID).Uint64("term", term).Msg("leader changed")
}

// expiryDecision is a session the leader decided to expire, and the fence
// its expire entry carries.
type expiryDecision struct {
	since  time.Time // when it was proposed (last)
	connID uint64    // the session's connection when the leader decided
}

// expiryLoop proposes the expiry of sessions whose deadline passed. Only the
// leader decides; the decision is applied through the log like any write.
func (s *Server) expiryLoop() {
	defer s.wg.Done()
	period := time.Duration(s.cfg.TickTimeMs) * time.Millisecond / 2
	if period < 10*time.Millisecond {
		period = 10 * time.Millisecond
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.stopC:
			return
		case <-t.C:
		}
		s.lead.expiryRound(time.Now())
	}
}

// decideExpiries is one round of the expiry decision: on the leader, it
// proposes (through propose) the expiry of every session the tracker reports
// expired, and proposes again a close that was not applied after retryAfter.
// decided carries the decisions from round to round. It returns the sessions
// it proposed. A member that is not the leader decides nothing.
func decideExpiries(isLeader bool, tracker *session.Tracker, sm *stateMachine, now time.Time, retryAfter time.Duration,
	decided map[int64]expiryDecision, propose func(id int64, connID uint64), log zerolog.Logger) []int64 {
	if !isLeader && !mutation.Enabled(mutation.FollowerExpiry) {
		clear(decided)
		return nil
	}
	// A close proposal can be lost in a leader change; a session still in
	// the table this long after it was marked closing is proposed again,
	// with the fence of the first decision (a session that attached since
	// then must not be expired by the retry).
	var proposed []int64
	closing := map[int64]bool{}
	for _, id := range tracker.Closing() {
		closing[id] = true
		d, seen := decided[id]
		if !seen {
			// Marked closing by a client's own closeSession on this member.
			decided[id] = expiryDecision{since: now, connID: sm.sessionConn(id)}
			continue
		}
		if _, live := sm.session(id); !live || now.Sub(d.since) < retryAfter {
			continue
		}
		d.since = now
		decided[id] = d
		log.Warn().Str("session", sessionHex(id)).Msg("session close not applied, proposing it again")
		propose(id, d.connID)
		proposed = append(proposed, id)
	}
	for id := range decided {
		if !closing[id] {
			delete(decided, id)
		}
	}
	candidates := tracker.Expired()
	if len(candidates) == 0 {
		return proposed
	}
	// The fences are read before the tracker is asked again: an attach
	// touches the tracker before it changes the session's connection
	// (stateMachine.Apply), so a session whose new connection is read here
	// is not reported expired by the second look.
	fences := sm.sessionConns(candidates)
	still := map[int64]bool{}
	for _, id := range tracker.Expired() {
		still[id] = true
	}
	for i, id := range candidates {
		if !still[id] {
			continue // touched meanwhile
		}
		tracker.SetClosing(id)
		decided[id] = expiryDecision{since: now, connID: fences[i]}
		propose(id, fences[i])
		proposed = append(proposed, id)
	}
	return proposed
}

// expiryEntry is the expire entry of session id decided in term while its
// connection was connID: entryExpireSession, or with a lock-delay
// (delayMs > 0 and paths) entryExpireSessionDelayed carrying them.
func expiryEntry(id int64, term, connID uint64, delayMs int64, paths []string) *entry {
	if delayMs > 0 && len(paths) > 0 {
		return &entry{Type: entryExpireSessionDelayed, SessionID: id, Body: lockDelayBody(term, connID, delayMs, paths)}
	}
	return &entry{Type: entryExpireSession, SessionID: id, Body: ExpireBody(term, connID)}
}

// decideDelayedDeletions is one round of the lock-delay decision: on the
// leader, it proposes (through propose, with now as the entry's time) an
// entryDeleteDelayed for each dead session whose kept ephemerals are due at
// now, as the replicated state lists them (so a new leader finds the
// deletions its predecessor left pending), and proposes one again when it
// was not applied after retryAfter. It returns the sessions it proposed. A
// member that is not the leader decides nothing.
func decideDelayedDeletions(isLeader bool, sm *stateMachine, now time.Time, retryAfter time.Duration,
	proposed map[int64]time.Time, propose func(id int64, timeMs int64)) []int64 {
	if !isLeader {
		clear(proposed)
		return nil
	}
	due := sm.dueDelayed(now.UnixMilli())
	pending := make(map[int64]bool, len(due))
	var out []int64
	for _, id := range due {
		pending[id] = true
		if at, ok := proposed[id]; ok && now.Sub(at) < retryAfter {
			continue
		}
		proposed[id] = now
		propose(id, now.UnixMilli())
		out = append(out, id)
	}
	for id := range proposed {
		if !pending[id] {
			delete(proposed, id)
		}
	}
	return out
}

// containerLoop removes empty containers and expired TTL nodes, on the leader,
// through the log (apply re-checks the condition with the entry's time).
func (s *Server) containerLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ContainerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopC:
			return
		case <-t.C:
		}
		if !s.lead.containerRound(time.Now()) {
			return
		}
	}
}

// serverLeaderHooks are the server's leaderHooks.
type serverLeaderHooks struct{ s *Server }

func (h serverLeaderHooks) leaderMoved() { h.s.failPendingProposals() }

// proposeDecision proposes one decision of the leader; false when the
// server is stopping. Stop cancels a proposal in flight (its context
// derives from stopCtx), and a failure caused by stopping is not worth a
// warning; any other failure is, and the next round retries.
func (h serverLeaderHooks) proposeDecision(e *entry) bool {
	s := h.s
	ctx, cancel := context.WithTimeout(s.stopCtx, 5*time.Second)
	err := s.propose(ctx, e, nil)
	cancel()
	if s.stopCtx.Err() != nil {
		return false
	}
	if err != nil {
		ev := s.log.Warn().Err(err).Int32("type", e.Type)
		if e.SessionID != 0 {
			ev = ev.Str("session", sessionHex(e.SessionID))
		}
		ev.Msg("propose leader decision failed")
	}
	return true
}

func sessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }
