package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/zoocfg"
	"github.com/zkraft/zkraft/jute"
)

// entrySetConfig publishes the ensemble's membership in /zookeeper/config.
// Its body is the server.N lines; apply appends "version=<zxid in hex>", as
// ZooKeeper versions a dynamic config by the zxid that made it.
const entrySetConfig int32 = -30

// formatMembers writes members as /zookeeper/config lines, ordered by id.
func formatMembers(ms map[uint64]Member) string {
	var b strings.Builder
	for _, m := range sortedMembers(ms) {
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// parseConfigData reads /zookeeper/config data back into members and its
// version. Lines it does not know are ignored.
func parseConfigData(data []byte) (map[uint64]Member, int64, error) {
	ms := map[uint64]Member{}
	var version int64
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		if key == "version" {
			v, err := strconv.ParseInt(value, 16, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("config version %q: %w", value, err)
			}
			version = v
			continue
		}
		if !strings.HasPrefix(key, "server.") {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimPrefix(key, "server."), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("config line %q: %w", line, err)
		}
		m, err := parseMember(id, value)
		if err != nil {
			return nil, 0, err
		}
		ms[id] = m
	}
	return ms, version, nil
}

// configChanged runs when /zookeeper/config changed (apply or restore): the
// membership it lists becomes this member's view, and raft's transport
// learns every member's peer address.
func (s *Server) configChanged(data []byte) {
	ms, _, err := parseConfigData(data)
	if err != nil || len(ms) == 0 {
		return
	}
	s.memberMu.Lock()
	s.memberSet = ms
	s.memberMu.Unlock()
	if pu, ok := s.transport.(consensus.PeerUpdater); ok {
		for _, m := range ms {
			if m.ID != s.cfg.ServerID {
				pu.AddPeer(consensus.Peer{ID: m.ID, Addr: m.PeerAddr()})
			}
		}
	}
}

// publishInitialConfig makes the first leader of an ensemble write the
// static membership from zoo.cfg into /zookeeper/config, so clients (Curator's
// EnsembleTracker) find every member's client address there.
func (s *Server) publishInitialConfig() {
	s.sm.mu.RLock()
	data, _, _ := s.sm.tree.GetData("/zookeeper/config")
	s.sm.mu.RUnlock()
	if len(data) > 0 {
		return
	}
	for _, m := range s.cfg.Members {
		if m.ClientAddr == "" {
			// Without every client address the config would mislead clients:
			// keep it empty, as a standalone server does.
			return
		}
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, 10*time.Second)
	defer cancel()
	e := &entry{Type: entrySetConfig, Body: []byte(formatMembers(s.cfg.Members))}
	if err := s.propose(ctx, e, nil); err != nil {
		s.log.Warn().Err(err).Msg("publish initial config failed")
	}
}

// handleReconfig answers reconfig (16): membership changes through raft,
// then the new membership published in /zookeeper/config.
func (c *conn) handleReconfig(xid int32, body []byte) bool {
	var r jute.ReconfigRequest
	if jute.Unmarshal(body, &r) != nil {
		return c.enqueueReply(xid, jute.ErrMarshallingError, nil, false)
	}
	srv := c.srv
	if !srv.cfg.ReconfigEnabled || srv.cfg.Standalone() {
		return c.enqueueReply(xid, jute.ErrReconfigDisabled, nil, false)
	}
	ids := *c.authIDs.Load()
	if !srv.cfg.SkipACL {
		srv.sm.mu.RLock()
		_, allowed := srv.sm.tree.CheckPermission("/zookeeper/config", jute.PermWrite, ids)
		srv.sm.mu.RUnlock()
		if !allowed {
			return c.enqueueReply(xid, jute.ErrNoAuth, nil, false)
		}
	}
	if !c.waitReads() {
		return false
	}
	it := &item{waits: true, signal: c.readyC, deadline: time.Now().Add(writeTimeout), holdWrites: true}
	go func() {
		it.res.Err, it.res.Zxid = srv.reconfigure(&r)
		it.complete()
	}()
	it.build = func(it *item) ([]byte, bool) {
		if it.res.Err != 0 {
			return c.reply(xid, c.srv.sm.lastZxid.Load(), it.res.Err, nil), false
		}
		c.srv.sm.mu.RLock()
		data, st, _ := c.srv.sm.tree.GetData("/zookeeper/config")
		c.srv.sm.mu.RUnlock()
		return c.reply(xid, it.res.Zxid, 0, &jute.GetDataResponse{Data: data, Stat: st}), false
	}
	return c.enqueue(it)
}

// reconfigure applies one reconfig request and returns a ZooKeeper error
// code and the zxid of the published config.
func (s *Server) reconfigure(r *jute.ReconfigRequest) (int32, int64) {
	if !s.reconfigMu.TryLock() {
		return jute.ErrReconfigInProgress, 0
	}
	defer s.reconfigMu.Unlock()

	s.sm.mu.RLock()
	data, _, _ := s.sm.tree.GetData("/zookeeper/config")
	s.sm.mu.RUnlock()
	current, version, err := parseConfigData(data)
	if err != nil || len(current) == 0 {
		current = s.members()
	}
	if r.CurConfigID != -1 && r.CurConfigID != version {
		return jute.ErrBadVersion, 0
	}
	target, base, code := s.reconfigTarget(r, current)
	if code != 0 {
		return code, 0
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, writeTimeout)
	defer cancel()
	// The change fails (ReconfigInProgress) if a conf change was applied
	// after base was read: target may undo it.
	if err := s.node.ChangeMembers(ctx, base, consensusPeers(target)); err != nil {
		s.log.Warn().Err(err).Uints64("members", slices.Sorted(maps.Keys(target))).Msg("reconfig: membership change failed")
		return ReconfigErrorCode(err), 0
	}
	s.log.Info().Uints64("members", slices.Sorted(maps.Keys(target))).Msg("reconfig: membership changed")
	// Publishing is idempotent (it writes the target membership), so it is
	// retried when a leader change fails it: removing the leader causes one.
	for {
		done := make(chan applyResult, 1)
		e := &entry{Type: entrySetConfig, Body: ConfigBody(target)}
		if err := s.propose(ctx, e, func(r applyResult) { done <- r }); err == nil {
			select {
			case res := <-done:
				if res.Err != errOutOfOrder {
					return res.Err, res.Zxid
				}
			case <-ctx.Done():
				s.cancelWait(e.ReqID)
				return jute.ErrNewConfigNoQuorum, 0
			}
		}
		s.log.Info().Msg("reconfig: publishing the new config again after a leader change")
		select {
		case <-ctx.Done():
			return jute.ErrNewConfigNoQuorum, 0
		case <-time.After(time.Duration(s.cfg.ElectionTickMs) * time.Millisecond):
		}
	}
}

// reconfigTarget computes the membership r asks for (ReconfigTarget) from
// raft's voters and learners on this member, the published config and this
// member's view of the membership. base is the conf state (voters and
// learners) it was computed from, for consensus.Node.ChangeMembers.
func (s *Server) reconfigTarget(r *jute.ReconfigRequest, current map[uint64]Member) (map[uint64]Member, *raftpb.ConfState, int32) {
	st := s.node.Status()
	target, code, missing := ReconfigTarget(r, st.Voters, st.Learners, current, s.members())
	if code == jute.ErrReconfigInProgress {
		s.log.Warn().Uint64("member", missing).Msg("reconfig: no address known for a voter")
	}
	return target, &raftpb.ConfState{Voters: st.Voters, Learners: st.Learners}, code
}

// ReconfigTarget computes the membership a reconfig request asks for. It is
// pure: the server and the simulator (internal/sim) call it. An incremental
// change (joining and leaving lists) starts from raft's own voters and the
// learners that are observers (not from /zookeeper/config, which is
// published after the change and may lag behind it); current (the
// published config) and then known (the member's own view) supply their
// addresses and roles. A non-zero code is the ZooKeeper error to answer:
// ErrBadArguments for a malformed list, a change that leaves no voter
// (participant) or one that turns a participant into an observer or back
// (zkraft refuses role changes), ErrReconfigInProgress when no address is
// known for a voter (missing names it; only while the config of an earlier
// change is being published).
func ReconfigTarget(r *jute.ReconfigRequest, voters, learners []uint64, current, known map[uint64]Member) (target map[uint64]Member, code int32, missing uint64) {
	lookup := func(id uint64) (Member, bool) {
		m, ok := current[id]
		if !ok {
			m, ok = known[id]
		}
		return m, ok
	}
	target = map[uint64]Member{}
	if strings.TrimSpace(r.NewMembers) != "" {
		for _, spec := range zoocfg.SplitList(r.NewMembers) {
			m, err := parseServerSpec(spec)
			if err != nil {
				return nil, jute.ErrBadArguments, 0
			}
			target[m.ID] = m
		}
		if !validTarget(target, slices.Concat(voters, learners), lookup) {
			return nil, jute.ErrBadArguments, 0
		}
		return target, 0, 0
	}
	ids := map[uint64]bool{}
	for _, id := range voters {
		ids[id] = true
	}
	for _, id := range learners {
		// A learner that is not an observer is a voter to be of a change
		// still running: the change it belongs to decides about it.
		if m, ok := lookup(id); ok && m.Observer() {
			ids[id] = true
		}
	}
	for _, spec := range zoocfg.SplitList(r.JoiningServers) {
		m, err := parseServerSpec(spec)
		if err != nil {
			return nil, jute.ErrBadArguments, 0
		}
		target[m.ID], ids[m.ID] = m, true
	}
	for _, spec := range zoocfg.SplitList(r.LeavingServers) {
		id, err := strconv.ParseUint(strings.TrimPrefix(spec, "server."), 10, 64)
		if err != nil {
			return nil, jute.ErrBadArguments, 0
		}
		delete(target, id)
		delete(ids, id)
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if _, ok := target[id]; ok {
			continue
		}
		m, ok := lookup(id)
		if !ok {
			return nil, jute.ErrReconfigInProgress, id
		}
		target[id] = m
	}
	if !validTarget(target, slices.Concat(voters, learners), lookup) {
		return nil, jute.ErrBadArguments, 0
	}
	return target, 0, 0
}

// validTarget reports whether target keeps a participant (removing every
// voter would leave no one to commit anything) and changes no member of
// raft's configuration (members) between participant and observer.
func validTarget(target map[uint64]Member, members []uint64, lookup func(uint64) (Member, bool)) bool {
	participants := 0
	for id, m := range target {
		if !m.Observer() {
			participants++
		}
		if !slices.Contains(members, id) {
			continue
		}
		if was, ok := lookup(id); ok && was.Observer() != m.Observer() {
			return false
		}
	}
	return participants > 0
}

// ReconfigPeers lists a reconfig target for consensus (Core.ChangeMembers,
// Node.ChangeMembers), ordered by id.
func ReconfigPeers(target map[uint64]Member) []consensus.Peer { return consensusPeers(target) }

// ReconfigErrorCode is the ZooKeeper error a reconfig answers when the
// membership change failed with err: ErrBadArguments for a change that
// would leave no voter, ErrReconfigInProgress when the membership moved
// under the change (consensus.ErrMembershipChanged: another change, such as
// an earlier reconfig whose client saw it fail, was applied after this one
// was planned; ZooKeeper 3.8 answers ReconfigInProgress while a config it
// has seen proposed is not yet the current one), ErrNewConfigNoQuorum
// otherwise (no running majority, new members that did not catch up, a
// timeout).
func ReconfigErrorCode(err error) int32 {
	switch {
	case errors.Is(err, consensus.ErrLastVoter):
		return jute.ErrBadArguments
	case errors.Is(err, consensus.ErrMembershipChanged):
		return jute.ErrReconfigInProgress
	}
	return jute.ErrNewConfigNoQuorum
}

// ProposalSetConfig is the proposal type that publishes a membership in
// /zookeeper/config; its body is ConfigBody.
const ProposalSetConfig = entrySetConfig

// ConfigBody is the body of a ProposalSetConfig for members: the server.N
// lines, as reconfig publishes them.
func ConfigBody(members map[uint64]Member) []byte { return []byte(formatMembers(members)) }

// parseServerSpec parses "server.N=host:peer:election[:role][;client]".
func parseServerSpec(spec string) (Member, error) {
	key, value, ok := strings.Cut(strings.TrimSpace(spec), "=")
	if !ok || !strings.HasPrefix(key, "server.") {
		return Member{}, fmt.Errorf("want server.N=..., got %q", spec)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(key, "server."), 10, 64)
	if err != nil || id == 0 || id > 254 {
		return Member{}, fmt.Errorf("bad server id in %q", spec)
	}
	return parseMember(id, value)
}

// ParseConfig reads /zookeeper/config data (as published by a
// ProposalSetConfig) back into members and its version.
func ParseConfig(data []byte) (map[uint64]Member, int64, error) { return parseConfigData(data) }
