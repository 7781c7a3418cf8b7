package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// acceptLoop accepts client connections on ln until it is closed; start
// registers and runs each one (plain or TLS).
func (s *Server) acceptLoop(ln net.Listener, start func(nc net.Conn)) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn().Err(err).Str("addr", ln.Addr().String()).Msg("accept failed")
			select {
			case <-s.stopC:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		// A TCP connection has TCP_NODELAY set by the net package
		// already (TestAcceptedConnNoDelay): no setsockopt here.
		start(nc)
	}
}

// startPlain registers and serves a connection of the plain client port.
func (s *Server) startPlain(nc net.Conn) {
	c := newConn(s, nc)
	if !s.runConn(c, c.serve) {
		_ = nc.Close()
	}
}

// runConn registers c and runs its goroutine fn, counted in connWG so Stop
// waits for it; false (and fn not run) if c was refused.
func (s *Server) runConn(c *conn, fn func()) bool {
	if !s.addConn(c) {
		return false
	}
	go func() {
		defer s.connWG.Done()
		fn()
	}()
	return true
}

// addConn registers a connection, enforcing maxClientCnxns per client IP.
// On success it counts the connection's goroutine in connWG (under connMu,
// after checking stopC, so never after Stop began to wait); runConn starts
// that goroutine.
func (s *Server) addConn(c *conn) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	select {
	case <-s.stopC:
		return false
	default:
	}
	if max := s.cfg.MaxClientCnxns; max > 0 && s.perIP[c.ip] >= max {
		s.log.Warn().Str("ip", c.ip).Int("max", max).Msg("too many connections from this address, refusing")
		return false
	}
	s.perIP[c.ip]++
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	return true
}

// dropConn unregisters a connection that ended. Its watches go first: once a
// connection is not listed any more, it holds no watch.
func (s *Server) dropConn(c *conn) {
	s.watches.removeWatcher(c)
	s.connMu.Lock()
	if _, ok := s.conns[c]; ok {
		delete(s.conns, c)
		if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
			delete(s.perIP, c.ip)
		}
	}
	if c.sessionID != 0 && s.bySess[c.sessionID] == c {
		delete(s.bySess, c.sessionID)
	}
	s.connMu.Unlock()
}

// attachSession binds a session to its connection, once the entry that
// created or attached the session on c was applied. It refuses (false) when
// the session is gone or has been attached to another connection since:
// a closeSession or expiry applied between that entry and this call found
// no connection to end (sessionClosed reads bySess), so the check must come
// after c is listed. Apply removes the session before its hook reads bySess,
// and c is listed before the state is read here: one of the two always
// sees the other.
func (s *Server) attachSession(c *conn) bool {
	s.connMu.Lock()
	if c.closed() {
		s.connMu.Unlock()
		return false
	}
	s.bySess[c.sessionID] = c
	s.connMu.Unlock()
	if !s.sm.attachable(c.sessionID, c.connID) {
		s.connMu.Lock()
		if s.bySess[c.sessionID] == c {
			delete(s.bySess, c.sessionID)
		}
		s.connMu.Unlock()
		return false
	}
	return true
}

// detachSession silently closes the connection a session was attached to,
// before a new connection takes the session over.
func (s *Server) detachSession(id int64) {
	s.connMu.Lock()
	old := s.bySess[id]
	delete(s.bySess, id)
	s.connMu.Unlock()
	if old != nil {
		old.close()
	}
}

// latencyStats keeps min/avg/max request latency in ms.
type latencyStats struct {
	minLatency atomic.Int64 // -1 until the first sample
	maxLatency atomic.Int64
	sumLatency atomic.Int64
	count      atomic.Int64
}

func (l *latencyStats) recordLatency(ms int64) {
	l.count.Add(1)
	l.sumLatency.Add(ms)
	for {
		cur := l.minLatency.Load()
		if (cur >= 0 && cur <= ms) || l.minLatency.CompareAndSwap(cur, ms) {
			break
		}
	}
	for {
		cur := l.maxLatency.Load()
		if cur >= ms || l.maxLatency.CompareAndSwap(cur, ms) {
			break
		}
	}
}

func (l *latencyStats) resetLatency() {
	l.minLatency.Store(-1)
	l.maxLatency.Store(0)
	l.sumLatency.Store(0)
	l.count.Store(0)
}

func (l *latencyStats) latency() (min int64, avg float64, max int64) {
	n := l.count.Load()
	if n == 0 {
		return 0, 0, 0
	}
	min = l.minLatency.Load()
	if min < 0 {
		min = 0
	}
	return min, float64(l.sumLatency.Load()) / float64(n), l.maxLatency.Load()
}

type serverStats struct {
	latencyStats
	received    atomic.Int64
	sent        atomic.Int64
	outstanding atomic.Int64 // requests received and not yet answered

	// Readers wait on throttleC while outstanding is at the limit; the
	// writer that brings it below the limit wakes them all.
	throttleMu sync.Mutex
	throttleC  chan struct{}
}

// admit blocks a connection's reader while the server has limit or more
// requests outstanding (ZooKeeper's globalOutstandingLimit); false if done
// closed meanwhile.
func (st *serverStats) admit(limit int64, done <-chan struct{}) bool {
	for st.outstanding.Load() >= limit {
		st.throttleMu.Lock()
		if st.throttleC == nil {
			st.throttleC = make(chan struct{})
		}
		c := st.throttleC
		st.throttleMu.Unlock()
		if st.outstanding.Load() < limit {
			return true
		}
		select {
		case <-c:
		case <-done:
			return false
		}
	}
	return true
}

// answered records one answered request and wakes throttled readers once
// the count is below limit.
func (st *serverStats) answered(limit int64) {
	if st.outstanding.Add(-1) >= limit {
		return
	}
	st.throttleMu.Lock()
	if st.throttleC != nil {
		close(st.throttleC)
		st.throttleC = nil
	}
	st.throttleMu.Unlock()
}

func (st *serverStats) reset() {
	st.resetLatency()
	st.received.Store(0)
	st.sent.Store(0)
}

type connStats struct {
	latencyStats
	received    atomic.Int64
	sent        atomic.Int64
	watchEvents atomic.Int64
	lastOp      atomic.Int32
	lastCxid    atomic.Int32
	lastZxid    atomic.Int64
}
