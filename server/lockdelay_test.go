package server

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// Lock-delay tests: the apply of an expiry with lock-delay, of the delayed
// removal, the snapshot of pending removals and the leader's decision.

const (
	ldSession = int64(7)
	ldTerm    = uint64(1) // the term testSM applies every entry in
	ldTime    = int64(1_700_000_000_000)
	ldDelay   = int64(5000)
)

// ldPersistent and ldEphemeral are the nodes lockDelaySM makes: persistent
// parents, then ephemerals of session ldSession.
var (
	ldPersistent = []string{"/locks", "/locks/mutex", "/locksmith", "/app", "/app/locks"}
	ldEphemeral  = []string{"/locks/mutex/_c_1-lock-0000000000", "/locksmith/x", "/app/member", "/app/locks/l"}
)

// lockDelaySM returns a state machine where session ldSession (connection
// 1) created ldPersistent and owns ldEphemeral.
func lockDelaySM(t *testing.T) *testSM {
	sm := newTestSM(t)
	sm.createSession(ldSession, 1)
	seq := uint64(0)
	mk := func(path string, flags int32) {
		seq++
		e := create(path, 1, seq)
		e.Body = jute.Marshal(&jute.CreateRequest{Path: path, Flags: flags,
			ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})
		require.Zero(t, sm.apply(e).Err, path)
	}
	for _, p := range ldPersistent {
		mk(p, 0)
	}
	for _, p := range ldEphemeral {
		mk(p, jute.FlagEphemeral)
	}
	return sm
}

// delayedExpire is the leader's expiry of ldSession on connection 1 at
// ldTime, with lock-delay delayMs on paths.
func delayedExpire(delayMs int64, paths ...string) *entry {
	return &entry{Type: entryExpireSessionDelayed, SessionID: ldSession, Time: ldTime,
		Body: lockDelayBody(ldTerm, 1, delayMs, paths)}
}

func deleteDelayed(timeMs int64) *entry {
	return &entry{Type: entryDeleteDelayed, SessionID: ldSession, Time: timeMs}
}

// existing returns which of paths exist in sm's tree.
func (s *testSM) existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, ok := s.tree.Exists(p); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestExpiryWithLockDelayKeepsNodesUnderPaths: an expiry with lock-delay
// removes the session and, at once, its ephemerals outside the paths; the
// ones under them stay (owner unchanged) with a deadline of the entry's
// time plus the delay. A clean close, a plain expiry, no delay or no
// matching node keep nothing, and a fenced expiry changes nothing.
func TestExpiryWithLockDelayKeepsNodesUnderPaths(t *testing.T) {
	tests := []struct {
		name     string
		e        *entry
		wantErr  int32
		wantLive bool
		wantKept []string
	}{
		{"under one path", delayedExpire(ldDelay, "/locks"), 0, false,
			[]string{"/locks/mutex/_c_1-lock-0000000000"}},
		{"under two paths, a sibling prefix is not under", delayedExpire(ldDelay, "/locks", "/app/locks"), 0, false,
			[]string{"/locks/mutex/_c_1-lock-0000000000", "/app/locks/l"}},
		{"the node itself named", delayedExpire(ldDelay, "/app/member"), 0, false, []string{"/app/member"}},
		{"root keeps every ephemeral", delayedExpire(ldDelay, "/"), 0, false, ldEphemeral},
		{"no node under the paths", delayedExpire(ldDelay, "/elsewhere"), 0, false, nil},
		{"no delay", delayedExpire(0, "/locks"), 0, false, nil},
		{"no paths", delayedExpire(ldDelay), 0, false, nil},
		{"plain expiry", &entry{Type: entryExpireSession, SessionID: ldSession, Time: ldTime, Body: ExpireBody(ldTerm, 1)},
			0, false, nil},
		{"clean close deletes at once", &entry{Type: entryCloseSession, SessionID: ldSession, ConnID: 1,
			Seq: uint64(len(ldPersistent) + len(ldEphemeral) + 1), Time: ldTime}, 0, false, nil},
		{"fenced by another term: nothing changes", &entry{Type: entryExpireSessionDelayed, SessionID: ldSession,
			Time: ldTime, Body: lockDelayBody(ldTerm+1, 1, ldDelay, []string{"/locks"})}, errExpiryFenced, true, ldEphemeral},
		{"fenced by a reattach: nothing changes", &entry{Type: entryExpireSessionDelayed, SessionID: ldSession,
			Time: ldTime, Body: lockDelayBody(ldTerm, 2, ldDelay, []string{"/locks"})}, errExpiryFenced, true, ldEphemeral},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sm := lockDelaySM(t)
			require.Equal(t, tt.wantErr, sm.apply(tt.e).Err)
			_, live := sm.session(ldSession)
			require.Equal(t, tt.wantLive, live)
			require.ElementsMatch(t, tt.wantKept, sm.existing(ldEphemeral))
			require.Equal(t, ldPersistent, sm.existing(ldPersistent))
			for _, p := range tt.wantKept {
				st, _ := sm.tree.Exists(p)
				require.Equal(t, ldSession, st.EphemeralOwner, "a kept node shows its dead owner")
			}
			if !tt.wantLive && len(tt.wantKept) > 0 {
				require.Equal(t, map[int64]int64{ldSession: ldTime + ldDelay}, sm.delayed)
				_, ordered := sm.order[ldSession]
				require.False(t, ordered)
			} else {
				require.Empty(t, sm.delayed)
			}
			require.NoError(t, checkState(sm.stateMachine))
		})
	}
}

// TestDelayedDeletionAppliesAtDeadline: the removal entry is refused before
// the deadline, removes the kept nodes at it with NodeDeleted and the
// parent's NodeChildrenChanged, and is then a no-op; meanwhile the dead
// session's id cannot be created again. Two replicas fed the same entries
// agree on every result, event and snapshot.
func TestDelayedDeletionAppliesAtDeadline(t *testing.T) {
	const kept = "/locks/mutex/_c_1-lock-0000000000"
	steps := []struct {
		name    string
		e       *entry
		wantErr int32
		exists  bool
		events  []jute.WatcherEvent
	}{
		{"expiry keeps the lock node, removes the member node", delayedExpire(ldDelay, "/locks"), 0, true,
			[]jute.WatcherEvent{ev(jute.EventNodeDeleted, "/app/member"), ev(jute.EventNodeChildrenChanged, "/app")}},
		{"removal before the deadline is refused", deleteDelayed(ldTime + ldDelay - 1), errNotDue, true, nil},
		{"the dead session cannot be created again", &entry{Type: entryCreateSession, SessionID: ldSession, ConnID: 3,
			Body: jute.Marshal(&sessionRecord{ID: ldSession, TimeoutMs: 4000, Password: make([]byte, 16)})},
			jute.ErrSessionExpired, true, nil},
		{"removal at the deadline", deleteDelayed(ldTime + ldDelay), 0, false,
			[]jute.WatcherEvent{ev(jute.EventNodeDeleted, kept), ev(jute.EventNodeChildrenChanged, "/locks/mutex")}},
		{"a retried removal changes nothing", deleteDelayed(ldTime + 2*ldDelay), 0, false, nil},
	}
	a, b := lockDelaySM(t), lockDelaySM(t)
	type watched struct {
		sm *testSM
		r  *recorder
	}
	var replicas []watched
	for _, sm := range []*testSM{a, b} {
		r := &recorder{}
		sm.watches.addData(r, kept)
		sm.watches.addData(r, "/app/member")
		sm.watches.addChild(r, "/locks/mutex")
		sm.watches.addChild(r, "/app")
		replicas = append(replicas, watched{sm, r})
	}
	for _, st := range steps {
		var snaps [][]byte
		for _, w := range replicas {
			require.Equal(t, st.wantErr, w.sm.apply(st.e).Err, st.name)
			_, ok := w.sm.tree.Exists(kept)
			require.Equal(t, st.exists, ok, st.name)
			require.Equal(t, st.events, w.r.take(), st.name)
			require.NoError(t, checkState(w.sm.stateMachine), st.name)
			snaps = append(snaps, mustSnapshot(t, w.sm.stateMachine))
		}
		require.Equal(t, snaps[0], snaps[1], "%s: replicas differ", st.name)
	}
	require.Empty(t, a.delayed)
	// With nothing pending any more, the new session id is free again.
	require.Zero(t, a.apply(&entry{Type: entryCreateSession, SessionID: ldSession, ConnID: 3,
		Body: jute.Marshal(&sessionRecord{ID: ldSession, TimeoutMs: 4000, Password: make([]byte, 16)})}).Err)
}

// TestDelayedDeletionAfterClientDelete: a client may delete a kept node
// during the delay (the node is as any other); the removal entry then
// removes what is left and clears the pending state.
func TestDelayedDeletionAfterClientDelete(t *testing.T) {
	sm := lockDelaySM(t)
	sm.createSession(9, 5)
	require.Zero(t, sm.apply(delayedExpire(ldDelay, "/locks", "/app/locks")).Err)
	require.Zero(t, sm.apply(&entry{Type: jute.OpDelete, SessionID: 9, ConnID: 5, Seq: 1,
		Body: jute.Marshal(&jute.DeleteRequest{Path: "/app/locks/l", Version: -1})}).Err)
	require.Len(t, sm.delayed, 1)
	require.Zero(t, sm.apply(deleteDelayed(ldTime+ldDelay)).Err)
	require.Empty(t, sm.delayed)
	require.Empty(t, sm.existing(ldEphemeral))
	require.NoError(t, checkState(sm.stateMachine))
}

// TestSnapshotKeepsDelayedDeletions: pending removals survive a snapshot
// and restore (a new leader finds them); a state with none is written in
// the format of before lock-delay, and a damaged section is refused.
func TestSnapshotKeepsDelayedDeletions(t *testing.T) {
	sm := lockDelaySM(t)
	before := mustSnapshot(t, sm.stateMachine)
	require.Equal(t, snapshotMagic, string(before[:len(snapshotMagic)]), "no pending removal: the old format")

	require.Zero(t, sm.apply(delayedExpire(ldDelay, "/locks")).Err)
	snap := mustSnapshot(t, sm.stateMachine)
	require.Equal(t, snapshotMagicDelayed, string(snap[:len(snapshotMagicDelayed)]))

	restored := newTestSM(t)
	require.NoError(t, restored.Restore(sm.index, snap))
	restored.index = sm.index
	require.Equal(t, sm.delayed, restored.delayed)
	require.Equal(t, sm.tree.Digest(), restored.tree.Digest())
	require.Equal(t, snap, mustSnapshot(t, restored.stateMachine), "restore changes nothing")

	// The restored replica decides and applies the removal as the original.
	var proposed []int64
	decideDelayedDeletions(true, restored.stateMachine, time.UnixMilli(ldTime+ldDelay), time.Second,
		map[int64]time.Time{}, func(id int64, _ int64) { proposed = append(proposed, id) })
	require.Equal(t, []int64{ldSession}, proposed)
	for _, s := range []*testSM{sm, restored} {
		require.Zero(t, s.apply(deleteDelayed(ldTime+ldDelay)).Err)
		require.Empty(t, s.existing(ldEphemeral))
	}
	after := mustSnapshot(t, restored.stateMachine)
	require.Equal(t, snapshotMagic, string(after[:len(snapshotMagic)]))
	require.Equal(t, mustSnapshot(t, sm.stateMachine), after)

	for _, n := range []int{len(snap) - 1, len(snap) - 16, len(snap) - 17} {
		require.Error(t, newTestSM(t).Restore(1, snap[:n]), "prefix %d", n)
	}
}

// TestDecideDelayedDeletions: only the leader proposes, only removals that
// are due at its clock, again only after retryAfter; a follower never
// proposes, whatever the state holds.
func TestDecideDelayedDeletions(t *testing.T) {
	sm := lockDelaySM(t)
	require.Zero(t, sm.apply(delayedExpire(ldDelay, "/locks")).Err)
	due := time.UnixMilli(ldTime + ldDelay)
	const retry = time.Second
	tests := []struct {
		name     string
		leader   bool
		now      time.Time
		proposed map[int64]time.Time
		want     []int64
	}{
		{"follower never proposes", false, due.Add(time.Hour), map[int64]time.Time{}, nil},
		{"leader before the deadline", true, due.Add(-time.Millisecond), map[int64]time.Time{}, nil},
		{"leader at the deadline", true, due, map[int64]time.Time{}, []int64{ldSession}},
		{"proposed a moment ago", true, due.Add(retry - time.Millisecond), map[int64]time.Time{ldSession: due}, nil},
		{"not applied after retryAfter", true, due.Add(retry), map[int64]time.Time{ldSession: due}, []int64{ldSession}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			var times []int64
			ret := decideDelayedDeletions(tt.leader, sm.stateMachine, tt.now, retry, tt.proposed,
				func(id int64, timeMs int64) { got, times = append(got, id), append(times, timeMs) })
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want, ret)
			for _, ms := range times {
				require.Equal(t, tt.now.UnixMilli(), ms, "the entry carries the deciding clock")
			}
			if !tt.leader {
				require.Empty(t, tt.proposed, "a follower forgets what it proposed as leader")
			}
		})
	}

	// Once applied, nothing is due and the memory of the proposal goes.
	require.Zero(t, sm.apply(deleteDelayed(ldTime+ldDelay)).Err)
	proposed := map[int64]time.Time{ldSession: due}
	require.Empty(t, decideDelayedDeletions(true, sm.stateMachine, due.Add(time.Hour), retry, proposed,
		func(int64, int64) { t.Fatal("nothing is pending") }))
	require.Empty(t, proposed)
}

// TestExpireRecordCompatibility: a record without lock-delay is encoded as
// before lock-delay existed (and such a record decodes with no delay); a
// record with it round-trips.
func TestExpireRecordCompatibility(t *testing.T) {
	old := jute.NewEncoder(nil)
	old.WriteLong(3)
	old.WriteLong(9)
	require.Equal(t, old.Bytes(), ExpireBody(3, 9))
	var rec expireRecord
	require.NoError(t, jute.Unmarshal(old.Bytes(), &rec))
	require.Equal(t, expireRecord{Term: 3, ConnID: 9}, rec)

	var got expireRecord
	require.NoError(t, jute.Unmarshal(lockDelayBody(3, 9, 1500, []string{"/locks", "/app/locks"}), &got))
	require.Equal(t, expireRecord{Term: 3, ConnID: 9, DelayMs: 1500, Paths: []string{"/locks", "/app/locks"}}, got)

	// A truncated lock-delay record is undecodable, so the expiry is refused.
	body := lockDelayBody(ldTerm, 1, ldDelay, []string{"/locks"})
	sm := lockDelaySM(t)
	require.Equal(t, jute.ErrMarshallingError, sm.apply(&entry{Type: entryExpireSessionDelayed, SessionID: ldSession,
		Time: ldTime, Body: body[:len(body)-2]}).Err)
	_, live := sm.session(ldSession)
	require.True(t, live)
}

// TestExpiryEntryCarriesLockDelay: the leader's expiry is a plain expire
// entry, as before lock-delay existed, unless lock-delay is configured;
// then it carries the configured delay and paths.
func TestExpiryEntryCarriesLockDelay(t *testing.T) {
	for _, tt := range []struct {
		name     string
		delayMs  int64
		paths    []string
		wantType int32
	}{
		{"off by default", 0, nil, entryExpireSession},
		{"delay without paths is off", 1000, nil, entryExpireSession},
		{"paths without delay is off", 0, []string{"/locks"}, entryExpireSession},
		{"configured", 1000, []string{"/locks"}, entryExpireSessionDelayed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.LockDelayMs, cfg.LockDelayPaths = tt.delayMs, tt.paths
			ms, paths := cfg.LockDelay()
			e := expiryEntry(ldSession, 3, 4, ms, paths)
			require.Equal(t, tt.wantType, e.Type)
			require.Equal(t, ldSession, e.SessionID)
			want := expireRecord{Term: 3, ConnID: 4}
			if tt.wantType == entryExpireSession {
				require.Equal(t, ExpireBody(3, 4), e.Body)
			} else {
				want.DelayMs, want.Paths = tt.delayMs, tt.paths
			}
			var rec expireRecord
			require.NoError(t, jute.Unmarshal(e.Body, &rec))
			require.Equal(t, want, rec)
		})
	}
}

// ldNode is a node lockQueueSM creates: by session (0: persistent, made by
// ldSession), at path.
type ldNode struct {
	session int64
	path    string
}

// lockQueueSM returns a state machine with sessions ldSession, 8 and 9
// (connection = session id), the persistent directories /locks, /locks/d,
// /locks/e and /other, and nodes, created in order.
func lockQueueSM(t *testing.T, nodes []ldNode) *testSM {
	sm := newTestSM(t)
	seqs := map[int64]uint64{}
	for _, id := range []int64{ldSession, 8, 9} {
		sm.createSession(id, uint64(id))
	}
	mk := func(session int64, path string, flags int32) {
		seqs[session]++
		e := &entry{Type: jute.OpCreate, SessionID: session, ConnID: uint64(session), Seq: seqs[session],
			Body: jute.Marshal(&jute.CreateRequest{Path: path, Flags: flags,
				ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})}
		require.Zero(t, sm.apply(e).Err, path)
	}
	for _, p := range []string{"/locks", "/locks/d", "/locks/e", "/other"} {
		mk(ldSession, p, 0)
	}
	for _, n := range nodes {
		if n.session == 0 {
			mk(ldSession, n.path, 0)
		} else {
			mk(n.session, n.path, jute.FlagEphemeral)
		}
	}
	return sm
}

// TestLockDelayKeepsOnlyHolders: an expiry with lock-delay keeps, under
// its paths, only the session's nodes that hold their lock as the tree is
// when the expiry applies; its waiting nodes go at once, with NodeDeleted
// (the watch the next waiter set) and the parent's NodeChildrenChanged.
// Nodes of other names under the paths are kept. Two replicas agree.
func TestLockDelayKeepsOnlyHolders(t *testing.T) {
	const d, e = "/locks/d/", "/locks/e/"
	s7 := func(p string) ldNode { return ldNode{ldSession, p} }
	s8 := func(p string) ldNode { return ldNode{8, p} }
	tests := []struct {
		name    string
		nodes   []ldNode
		before  []*entry // applied before the expiry of ldSession
		kept    []string // of ldSession's nodes
		removed []string
	}{
		{"exclusive holder kept", []ldNode{s7(d + "lock-0000000000"), s8(d + "lock-0000000001")}, nil,
			[]string{d + "lock-0000000000"}, nil},
		{"exclusive waiter removed at once", []ldNode{s8(d + "lock-0000000000"), s7(d + "lock-0000000001")}, nil,
			nil, []string{d + "lock-0000000001"}},
		{"curator protected waiter removed", []ldNode{s8(d + "_c_b-lock-0000000004"), s7(d + "_c_a-lock-0000000005")}, nil,
			nil, []string{d + "_c_a-lock-0000000005"}},
		{"order is by sequence, not name", []ldNode{s7(d + "_c_a-lock-0000000009"), s8(d + "_c_z-lock-0000000003")}, nil,
			nil, []string{d + "_c_a-lock-0000000009"}},
		{"kazoo reader sharing the lock kept", []ldNode{s8(d + "b__rlock__0000000000"), s7(d + "a__rlock__0000000001"),
			s8(d + "c__lock__0000000002")}, nil, []string{d + "a__rlock__0000000001"}, nil},
		{"kazoo reader behind a writer removed", []ldNode{s8(d + "b__lock__0000000000"), s7(d + "a__rlock__0000000001")}, nil,
			nil, []string{d + "a__rlock__0000000001"}},
		{"kazoo writer behind a reader removed", []ldNode{s8(d + "b__rlock__0000000000"), s7(d + "a__lock__0000000001")}, nil,
			nil, []string{d + "a__lock__0000000001"}},
		{"curator reader ahead of a writer kept", []ldNode{s7(d + "_c_a-__READ__0000000000"), s8(d + "_c_b-__WRIT__0000000001")}, nil,
			[]string{d + "_c_a-__READ__0000000000"}, nil},
		{"curator writer behind a reader removed", []ldNode{s8(d + "_c_b-__READ__0000000000"), s7(d + "_c_a-__WRIT__0000000001")}, nil,
			nil, []string{d + "_c_a-__WRIT__0000000001"}},
		{"recipes count together", []ldNode{s8(d + "_c_b-lock-0000000000"), s7(d + "a__lock__0000000001")}, nil,
			nil, []string{d + "a__lock__0000000001"}},
		{"a persistent lock-named sibling counts", []ldNode{{0, d + "lock-0000000000"}, s7(d + "lock-0000000001")}, nil,
			nil, []string{d + "lock-0000000001"}},
		{"nodes of other names kept", []ldNode{s8(d + "lock-0000000000"), s7(d + "member"), s7(d + "latch-0000000001")}, nil,
			[]string{d + "member", d + "latch-0000000001"}, nil},
		{"holder in one directory, waiter in another", []ldNode{s7(d + "lock-0000000000"), s8(e + "lock-0000000000"),
			s7(e + "lock-0000000001")}, nil, []string{d + "lock-0000000000"}, []string{e + "lock-0000000001"}},
		{"decided on the tree before any removal", []ldNode{s8(d + "_c_b-__READ__0000000000"), s7(d + "_c_a-__WRIT__0000000001"),
			s7(d + "_c_c-__READ__0000000002")}, nil, nil, []string{d + "_c_a-__WRIT__0000000001", d + "_c_c-__READ__0000000002"}},
		{"behind a dead holder's kept node: removed", []ldNode{s8(d + "lock-0000000000"), s7(d + "lock-0000000001")},
			[]*entry{{Type: entryExpireSessionDelayed, SessionID: 8, Time: ldTime - 1000,
				Body: lockDelayBody(ldTerm, 8, ldDelay, []string{"/locks"})}},
			nil, []string{d + "lock-0000000001"}},
		{"outside the paths: removed", []ldNode{s7("/other/lock-0000000000")}, nil, nil, []string{"/other/lock-0000000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var snaps [][]byte
			for range 2 { // two replicas
				sm := lockQueueSM(t, tt.nodes)
				for _, b := range tt.before {
					require.Zero(t, sm.apply(b).Err)
				}
				r := &recorder{}
				for _, p := range append(append([]string{}, tt.kept...), tt.removed...) {
					sm.watches.addData(r, p)
				}
				others := map[string]bool{}
				for _, n := range tt.nodes {
					if n.session != ldSession {
						_, ok := sm.tree.Exists(n.path)
						others[n.path] = ok
					}
				}
				require.Zero(t, sm.apply(&entry{Type: entryExpireSessionDelayed, SessionID: ldSession, Time: ldTime,
					Body: lockDelayBody(ldTerm, uint64(ldSession), ldDelay, []string{"/locks"})}).Err)
				_, live := sm.session(ldSession)
				require.False(t, live)
				var mine []string
				for _, n := range tt.nodes {
					if n.session == ldSession {
						mine = append(mine, n.path)
					}
				}
				require.ElementsMatch(t, tt.kept, sm.existing(mine), "kept")
				var want []jute.WatcherEvent
				for _, p := range tt.removed {
					want = append(want, ev(jute.EventNodeDeleted, p))
				}
				require.ElementsMatch(t, want, r.take(), "a removed waiter fires its watches at expiry")
				for p, existed := range others {
					_, ok := sm.tree.Exists(p)
					require.Equal(t, existed, ok, "another session's node %s", p)
				}
				if len(tt.kept) > 0 {
					require.Equal(t, ldTime+ldDelay, sm.delayed[ldSession])
				} else {
					_, pending := sm.delayed[ldSession]
					require.False(t, pending, "nothing kept, nothing pending")
				}
				require.NoError(t, checkState(sm.stateMachine))
				snaps = append(snaps, mustSnapshot(t, sm.stateMachine))

				// At the deadline the kept holders go too.
				require.Zero(t, sm.apply(&entry{Type: entryDeleteDelayed, SessionID: ldSession, Time: ldTime + ldDelay}).Err)
				require.Empty(t, sm.existing(mine))
				require.NoError(t, checkState(sm.stateMachine))
			}
			require.Equal(t, snaps[0], snaps[1], "replicas differ")
		})
	}
}

// TestLockQueueHolds: the holding rule the view and the lock-delay share,
// on whole queues: which contenders hold, whatever order they are added in.
func TestLockQueueHolds(t *testing.T) {
	tests := []struct {
		name  string
		nodes []string // in queue order
		held  int      // the first held hold
	}{
		{"one exclusive", []string{"lock-0000000001"}, 1},
		{"exclusive then waiters", []string{"lock-0000000001", "lock-0000000002", "x__rlock__0000000003"}, 1},
		{"readers share until a writer", []string{"a__rlock__0000000001", "b__rlock__0000000002", "c__lock__0000000003", "d__rlock__0000000004"}, 2},
		{"only readers", []string{"_c_a-__READ__0000000001", "_c_b-__READ__0000000002"}, 2},
		{"writer first", []string{"_c_a-__WRIT__0000000001", "_c_b-__READ__0000000002"}, 1},
		{"equal sequence: by name", []string{"a-lock-0000000001", "b-lock-0000000001"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, order := range [][]int{identity(len(tt.nodes)), reversed(len(tt.nodes))} {
				var q lockQueue
				for _, i := range order {
					_, mode, seq, ok := parseLockName(tt.nodes[i])
					require.True(t, ok, tt.nodes[i])
					q.add(mode, lockRank{seq, tt.nodes[i]})
				}
				for i, n := range tt.nodes {
					_, mode, seq, _ := parseLockName(n)
					require.Equal(t, i < tt.held, q.holds(mode, lockRank{seq, n}), n)
				}
			}
		})
	}
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func reversed(n int) []int {
	out := identity(n)
	slices.Reverse(out)
	return out
}
