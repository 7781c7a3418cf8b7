package recipe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// State is a session's state as Curator names them.
type State int

// Session states.
const (
	Connected State = iota // a session and a live connection to it
	Suspended              // disconnected; the session may still live
	Expired                // the server said the session expired
	Lost                   // disconnected for the whole session timeout since the last read from a server
)

func (s State) String() string {
	switch s {
	case Connected:
		return "CONNECTED"
	case Suspended:
		return "SUSPENDED"
	case Expired:
		return "EXPIRED"
	case Lost:
		return "LOST"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Change is one state change of a Session.
type Change struct {
	State State
	// Deadline, for Suspended, is when the session is taken as lost: the
	// last time anything was read from the server plus the negotiated
	// timeout. The server counts its timeout from when it last heard from
	// the client, which may be earlier than that last read (a watch event,
	// or a reply held up on the way back, read after the client's requests
	// stopped reaching the server): it may expire the session before the
	// deadline, by up to that gap.
	Deadline time.Time
	// SessionID is the session's id for Connected.
	SessionID int64
}

// Session is a go-zookeeper connection with Curator's view of it: every
// change of state is reported on Changes, and a connection that stays down
// until the server could have expired the session is reported as Lost,
// without waiting to hear it from a server.
//
// Invariants: the negotiated timeout and the time of the last byte read are
// taken from the connection itself (a wrapping dialer); the Lost deadline is
// the last read plus that timeout, which can be later than the server's
// expiry when the last read came after the server last heard from the
// client (see Change.Deadline); Changes is buffered without bound
// in order and never blocks go-zookeeper's event loop; Close closes the
// session (its ephemeral nodes go at once when connected) and stops the
// session's goroutine before returning.
type Session struct {
	Conn *zk.Conn

	base       time.Time
	lastRead   atomic.Int64 // ns since base of the last byte read from a server
	negotiated atomic.Int64 // ns; the session timeout the server granted

	mu      sync.Mutex
	pending []zk.Event
	notify  chan struct{}
	changes chan Change
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// Connect opens a session to hosts (comma-separated host:port list) with
// the requested timeout; logger receives go-zookeeper's own lines (nil: none).
func Connect(hosts string, timeout time.Duration, logger zk.Logger) (*Session, error) {
	s := &Session{
		base:    time.Now(),
		notify:  make(chan struct{}, 1),
		changes: make(chan Change, 16),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.negotiated.Store(int64(timeout))
	if logger == nil {
		logger = nopLogger{}
	}
	servers := strings.Split(hosts, ",")
	conn, _, err := zk.Connect(servers, timeout,
		zk.WithDialer(s.dial),
		zk.WithEventCallback(s.event),
		zk.WithLogger(logger),
		zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", hosts, err)
	}
	s.Conn = conn
	go s.run()
	return s, nil
}

// Changes reports state changes in order.
func (s *Session) Changes() <-chan Change { return s.changes }

// Timeout is the session timeout the server granted (the requested one
// until a session is established).
func (s *Session) Timeout() time.Duration { return time.Duration(s.negotiated.Load()) }

// Close closes the session and stops its goroutine. It may be called more
// than once.
func (s *Session) Close() {
	s.once.Do(func() {
		s.Conn.Close()
		close(s.stop)
	})
	<-s.done
}

// WaitConnected waits until the session is established, for at most d.
func (s *Session) WaitConnected(d time.Duration) error {
	deadline := time.Now().Add(d)
	for s.Conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("no session with %s within %v", s.Conn.Server(), d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (s *Session) now() int64 { return int64(time.Since(s.base)) }

// dial wraps every connection go-zookeeper makes to note reads.
func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &readNoter{Conn: c, s: s}, nil
}

// readNoter records the time of every read and, from the first 12 bytes of
// the stream (frame length, protocol version, timeout), the negotiated
// session timeout of ZooKeeper's ConnectResponse.
type readNoter struct {
	net.Conn
	s    *Session
	head []byte
}

func (r *readNoter) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if n > 0 {
		r.s.lastRead.Store(r.s.now())
		if len(r.head) < 12 {
			k := min(n, 12-len(r.head))
			r.head = append(r.head, p[:k]...)
			if len(r.head) == 12 {
				if ms := int32(binary.BigEndian.Uint32(r.head[8:12])); ms > 0 {
					r.s.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
				}
			}
		}
	}
	return n, err
}

// event is go-zookeeper's callback: it queues the event and returns.
func (s *Session) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	s.pending = append(s.pending, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// run turns go-zookeeper's session events into Changes and fires Lost when
// a suspension outlasts its deadline.
func (s *Session) run() {
	defer close(s.done)
	var (
		queue    []Change
		state    = -1 // no session yet
		timer    *time.Timer
		timerC   <-chan time.Time
		stopTime = func() {
			if timer != nil {
				timer.Stop()
				timer, timerC = nil, nil
			}
		}
	)
	defer stopTime()
	emit := func(c Change) {
		state = int(c.State)
		queue = append(queue, c)
	}
	for {
		var out chan Change
		var next Change
		if len(queue) > 0 {
			out, next = s.changes, queue[0]
		}
		select {
		case <-s.stop:
			return
		case out <- next:
			queue = queue[1:]
		case <-timerC:
			timer, timerC = nil, nil
			if state == int(Suspended) {
				emit(Change{State: Lost})
			}
		case <-s.notify:
			s.mu.Lock()
			evs := s.pending
			s.pending = nil
			s.mu.Unlock()
			for _, ev := range evs {
				switch ev.State {
				case zk.StateHasSession:
					stopTime()
					emit(Change{State: Connected, SessionID: s.Conn.SessionID()})
				case zk.StateDisconnected:
					if state == int(Connected) {
						last := s.base.Add(time.Duration(s.lastRead.Load()))
						deadline := last.Add(s.Timeout())
						emit(Change{State: Suspended, Deadline: deadline})
						stopTime()
						timer = time.NewTimer(time.Until(deadline))
						timerC = timer.C
					}
				case zk.StateExpired:
					stopTime()
					emit(Change{State: Expired})
				}
			}
		}
	}
}

// nopLogger discards go-zookeeper's lines.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// IsConnectionError reports whether err means the outcome of a request is
// unknown because the connection dropped (the request may have been applied).
func IsConnectionError(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}
