package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/netseam"
)

// Session liveness in an ensemble. Only the leader expires sessions; a
// member that holds a session's connection reports that it saw traffic by
// sending the session id to the leader over the side channel (the election
// port), at most every half tick. Nothing is written to the log for a ping.
// What is reported, to whom, and what is kept when a report may be lost is
// LivenessReports' (liveness.go); this file delivers the reports.

// livenessFrameMax bounds one liveness report.
const livenessFrameMax = 1 << 20

// The receiver closes a liveness connection on which nothing arrived for
// livenessIdlePeriods report periods: a partition can leave a sender's
// connection half-open, and its reader would otherwise stay until Stop. A
// sender whose link carried nothing for livenessKeepalivePeriods writes an
// empty report (its id alone), so a link in use is never idle that long.
const (
	livenessIdlePeriods      = 10
	livenessKeepalivePeriods = 3
)

// livenessPeriod is the time between two liveness reports: half a tick.
func (s *Server) livenessPeriod() time.Duration {
	return time.Duration(s.cfg.TickTimeMs) * time.Millisecond / 2
}

// touch records traffic of a session on this member (LivenessReports).
func (s *Server) touch(id int64) {
	s.liveness.Touch(id, s.lead.isLeader() || s.cfg.Standalone(), s.tracker)
}

// livenessLink is the sender's connection to the leader's liveness port.
type livenessLink struct {
	conn    net.Conn
	leader  uint64
	written time.Time // the last write on conn that returned
}

func (l *livenessLink) close() {
	if l.conn != nil {
		_ = l.conn.Close()
		l.conn = nil
	}
}

// livenessSender forwards touches to the current leader.
func (s *Server) livenessSender() {
	defer s.wg.Done()
	period := s.livenessPeriod()
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

// reportTouched runs one round of s.liveness for leader lead and sends its
// report over link. A report that cannot be sent, or may have been lost,
// stays for the next round (LivenessReports.Failed). With nothing to
// report, a link idle for livenessKeepalivePeriods rounds gets an empty
// report, so the leader's receiver does not close it as idle.
func (s *Server) reportTouched(link *livenessLink, lead uint64, timeout time.Duration) {
	r, ok := s.liveness.Next(s.lead.isLeader(), lead, s.tracker)
	if !ok {
		s.keepLinkAlive(link, timeout)
		return
	}
	if r.NewLink {
		link.close()
	}
	if err := s.sendTouched(link, r, timeout); err != nil {
		s.log.Debug().Err(err).Uint64("leader", lead).Int("sessions", len(r.IDs)).Msg("liveness report not sent, kept for the next one")
		link.close()
		s.liveness.Failed(r)
		return
	}
	s.liveness.Sent(r)
}

// sendTouched writes report r to its leader over link, dialing the
// leader's liveness port (through the server's network, with TLS when the
// quorum uses it) when link has no connection to it.
func (s *Server) sendTouched(link *livenessLink, r LivenessReport, timeout time.Duration) error {
	m, ok := s.members()[r.To]
	if !ok {
		return errors.New("no known leader")
	}
	if link.conn != nil && link.leader != r.To {
		link.close()
	}
	if link.conn == nil {
		ctx, cancel := context.WithTimeout(s.stopCtx, timeout)
		var c net.Conn
		var err error
		if s.quorumTLS != nil {
			c, err = netseam.DialTLS(ctx, s.network, "tcp", m.ElectionAddr(), s.quorumTLS)
		} else {
			c, err = s.network.DialContext(ctx, "tcp", m.ElectionAddr())
		}
		cancel()
		if err != nil {
			return fmt.Errorf("dial liveness channel of member %d: %w", r.To, err)
		}
		link.conn, link.leader, link.written = c, r.To, time.Now()
	}
	return s.writeReport(link, r.IDs, timeout)
}

// writeReport writes a report of ids (none for a keepalive) on link's
// connection.
func (s *Server) writeReport(link *livenessLink, ids []int64, timeout time.Duration) error {
	buf := make([]byte, 4, 4+8+8*len(ids))
	buf = binary.BigEndian.AppendUint64(buf, s.cfg.ServerID)
	for _, id := range ids {
		buf = binary.BigEndian.AppendUint64(buf, uint64(id))
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	_ = link.conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := link.conn.Write(buf); err != nil {
		return fmt.Errorf("write liveness report to member %d: %w", link.leader, err)
	}
	link.written = time.Now()
	return nil
}

// keepLinkAlive writes an empty report on link when it carried nothing
// for livenessKeepalivePeriods rounds. A failed write ends the link and,
// as any failed write, reveals that the report before it may be lost
// (LivenessReports.Failed keeps it for the next round).
func (s *Server) keepLinkAlive(link *livenessLink, period time.Duration) {
	if link.conn == nil || time.Since(link.written) < livenessKeepalivePeriods*period {
		return
	}
	if err := s.writeReport(link, nil, period); err != nil {
		s.log.Debug().Err(err).Uint64("leader", link.leader).Msg("liveness keepalive not sent")
		s.liveness.Failed(LivenessReport{To: link.leader})
		link.close()
	}
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

// readLiveness applies the liveness reports read from c until it fails,
// or nothing arrives for livenessIdlePeriods report periods (the sender
// went away without a close that reached us; a live sender keeps its link
// busy, see keepLinkAlive).
func (s *Server) readLiveness(c net.Conn) {
	idle := livenessIdlePeriods * s.livenessPeriod()
	var lenBuf [4]byte
	for {
		_ = c.SetReadDeadline(time.Now().Add(idle))
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.log.Debug().Str("remote", c.RemoteAddr().String()).Dur("idle", idle).Msg("liveness connection idle, closing")
			}
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
		from := binary.BigEndian.Uint64(body)
		ids := make([]int64, 0, len(body)/8-1)
		for off := 8; off < len(body); off += 8 {
			ids = append(ids, int64(binary.BigEndian.Uint64(body[off:])))
		}
		ReceiveLiveness(s.tracker, s.acceptsLiveness(from), ids)
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
