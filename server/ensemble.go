package server

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/zkraft/zkraft/consensus"
)

// Session liveness in an ensemble. Only the leader expires sessions; a
// member that holds a session's connection reports that it saw traffic by
// sending the session id to the leader over the side channel (the election
// port), at most every half tick. Nothing is written to the log for a ping.

// livenessFrameMax bounds one liveness report.
const livenessFrameMax = 1 << 20

// touch records traffic of a session on this member.
func (s *Server) touch(id int64) {
	if s.lead.isLeader() || s.cfg.Standalone() {
		s.tracker.Touch(id)
		return
	}
	s.touchMu.Lock()
	s.touched[id] = struct{}{}
	s.touchMu.Unlock()
}

// takeTouched returns and clears the sessions touched since the last call.
func (s *Server) takeTouched() []int64 {
	s.touchMu.Lock()
	defer s.touchMu.Unlock()
	if len(s.touched) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(s.touched))
	for id := range s.touched {
		ids = append(ids, id)
	}
	s.touched = map[int64]struct{}{}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// retouch puts ids back into the touched set: a report that may not have
// reached the leader is merged into the next one.
func (s *Server) retouch(ids []int64) {
	if len(ids) == 0 {
		return
	}
	s.touchMu.Lock()
	for _, id := range ids {
		s.touched[id] = struct{}{}
	}
	s.touchMu.Unlock()
}

// livenessLink is the sender's connection to the leader's liveness port.
// prev is the last report written: a write that succeeded may still be lost
// (the leader's side closed, the bytes went nowhere), which the next write
// on the same connection reveals, so prev is sent again after a failure.
type livenessLink struct {
	conn   net.Conn
	leader uint64
	prev   []int64
}

func (l *livenessLink) close() {
	if l.conn != nil {
		_ = l.conn.Close()
		l.conn = nil
	}
	l.prev = nil
}

// livenessSender forwards touches to the current leader.
func (s *Server) livenessSender() {
	defer s.wg.Done()
	period := time.Duration(s.cfg.TickTimeMs) * time.Millisecond / 2
	t := time.NewTicker(period)
	defer t.Stop()
	var link livenessLink
	defer link.close()
	for {
		select {
		case <-s.stopC:
			return
		case <-t.C:
		}
		s.reportTouched(&link, s.node.Status().Lead, period)
	}
}

// reportTouched sends the sessions touched since the last report to leader
// lead (or touches this member's tracker when it leads). A report that
// cannot be sent, or may have been lost, stays for the next round.
func (s *Server) reportTouched(link *livenessLink, lead uint64, timeout time.Duration) {
	ids := s.takeTouched()
	if s.lead.isLeader() {
		for _, id := range ids {
			s.tracker.Touch(id)
		}
		return
	}
	if len(ids) == 0 {
		return
	}
	if err := s.sendTouched(link, lead, ids, timeout); err != nil {
		s.log.Debug().Err(err).Uint64("leader", lead).Int("sessions", len(ids)).Msg("liveness report not sent, kept for the next one")
		s.retouch(ids)
	}
}

// sendTouched writes one liveness report of ids to leader lead over link,
// dialing it when needed. On a write failure the previous report is put back
// too.
func (s *Server) sendTouched(link *livenessLink, lead uint64, ids []int64, timeout time.Duration) error {
	m, ok := s.members()[lead]
	if !ok {
		return errors.New("no known leader")
	}
	if link.conn != nil && link.leader != lead {
		link.close()
	}
	if link.conn == nil {
		var c net.Conn
		var err error
		if s.quorumTLS != nil {
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.quorumTLS}
			c, err = d.Dial("tcp", m.ElectionAddr())
		} else {
			c, err = net.DialTimeout("tcp", m.ElectionAddr(), timeout)
		}
		if err != nil {
			return fmt.Errorf("dial liveness channel of member %d: %w", lead, err)
		}
		link.conn, link.leader = c, lead
	}
	buf := make([]byte, 4, 4+8+8*len(ids))
	buf = binary.BigEndian.AppendUint64(buf, s.cfg.ServerID)
	for _, id := range ids {
		buf = binary.BigEndian.AppendUint64(buf, uint64(id))
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	_ = link.conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := link.conn.Write(buf); err != nil {
		s.retouch(link.prev)
		link.close()
		return fmt.Errorf("write liveness report to member %d: %w", lead, err)
	}
	link.prev = ids
	return nil
}

// livenessReceiver accepts liveness reports from other members. Each
// connection's goroutines end with the connection (or at shutdown).
func (s *Server) livenessReceiver(ln net.Listener) {
	defer s.wg.Done()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn().Err(err).Msg("liveness accept failed")
			}
			return
		}
		wg.Add(2)
		done := make(chan struct{})
		go func() {
			defer wg.Done()
			select {
			case <-s.stopC:
				_ = c.Close()
			case <-done:
			}
		}()
		go func() {
			defer wg.Done()
			defer close(done)
			defer c.Close()
			s.readLiveness(c)
		}()
	}
}

// readLiveness applies the liveness reports read from c until it fails.
func (s *Server) readLiveness(c net.Conn) {
	var lenBuf [4]byte
	for {
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n < 8 || n > livenessFrameMax || n%8 != 0 {
			s.log.Warn().Uint32("length", n).Msg("bad liveness frame, closing")
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if from := binary.BigEndian.Uint64(body); !s.acceptsLiveness(from) {
			continue // a member removed from the ensemble keeps no session alive
		}
		for off := 8; off < len(body); off += 8 {
			s.tracker.Touch(int64(binary.BigEndian.Uint64(body[off:])))
		}
	}
}

// servingMonitor stops client service while this member knows no leader
// that has a quorum (raft's CheckQuorum makes a cut-off leader step down),
// and resumes it when a leader is back: a member that cannot reach a quorum
// never answers a client.
func (s *Server) servingMonitor() {
	defer s.wg.Done()
	grace := time.Duration(s.cfg.ElectionTickMs*10) * time.Millisecond
	t := time.NewTicker(grace / 4)
	defer t.Stop()
	var leaderless time.Time
	for {
		select {
		case <-s.stopC:
			return
		case <-t.C:
		}
		if s.node.Status().Lead != 0 && !s.node.Removed() {
			leaderless = time.Time{}
			if !s.serving.Load() {
				s.serving.Store(true)
				s.log.Info().Msg("leader known again, serving clients")
			}
			continue
		}
		if leaderless.IsZero() {
			leaderless = time.Now()
		}
		if s.serving.Load() && time.Since(leaderless) >= grace {
			s.serving.Store(false)
			s.log.Warn().Msg("no leader with a quorum, closing client connections until one is back")
			s.connMu.Lock()
			for c := range s.conns {
				c.close()
			}
			s.connMu.Unlock()
		}
	}
}

// members returns the current membership by id.
func (s *Server) members() map[uint64]Member {
	s.memberMu.RLock()
	defer s.memberMu.RUnlock()
	return s.memberSet
}

// isObserver reports whether this member is an observer in its current
// view of the membership.
func (s *Server) isObserver() bool {
	m, ok := s.members()[s.cfg.ServerID]
	return ok && m.Observer()
}

// memberIsObserver reports whether member id is an observer in this
// member's view of the membership (consensus.Config.IsObserver: /zookeeper/
// config, which snapshots carry, or zoo.cfg).
func (s *Server) memberIsObserver(id uint64) bool {
	m, ok := s.members()[id]
	return ok && m.Observer()
}

// consensusPeers lists the members for the raft layer.
func consensusPeers(ms map[uint64]Member) []consensus.Peer {
	var peers []consensus.Peer
	for _, m := range sortedMembers(ms) {
		peers = append(peers, consensus.Peer{ID: m.ID, Addr: m.PeerAddr(), Observer: m.Observer()})
	}
	return peers
}
