package server

// A member removed from the ensemble by reconfig stops serving, as a
// ZooKeeper server outside the configuration does: no leader talks to it any
// more, so its tree is frozen at its removal and anything it answered would
// be stale. On applying its own removal it stops serving (servingMonitor
// does not resume while Removed) and closes its client connections, so
// clients move to a member; the leader ignores liveness reports from members
// no longer in the configuration, so sessions whose clients stayed on the
// removed member are not kept alive by it.

// memberRemoved is consensus.Config.OnRemoved: it runs on the raft loop,
// which it must not block; conn.close only marks the connection and expires
// its deadlines (the connection's own goroutine closes the socket), so the
// connections are closed here, as the other apply hooks do.
func (s *Server) memberRemoved() {
	s.serving.Store(false)
	s.log.Warn().Msg("this member was removed from the ensemble, closing client connections and not serving")
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.conns {
		c.close()
	}
}

// acceptsLiveness reports whether liveness reports from member id count:
// only from members of the configuration this member has applied. A server
// without a consensus node (unit tests driving the receiver alone) has no
// configuration to check against and accepts them.
func (s *Server) acceptsLiveness(id uint64) bool {
	return s.node == nil || s.node.IsMember(id)
}
