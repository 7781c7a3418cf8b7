package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

type nopHooks struct{ results []applyResult }

func (h *nopHooks) applied(_ *entry, r applyResult)   { h.results = append(h.results, r) }
func (h *nopHooks) sessionCreated(session.Session)    {}
func (h *nopHooks) sessionClosed(int64, bool, uint64) {}
func (h *nopHooks) sessionTouched(int64)              {}
func (h *nopHooks) expiryRefused(session.Session)     {}
func (h *nopHooks) stateReplaced()                    {}
func (h *nopHooks) configChanged([]byte)              {}

type testSM struct {
	*stateMachine
	hooks *nopHooks
	index uint64
	t     *testing.T
}

func newTestSM(t *testing.T) *testSM {
	h := &nopHooks{}
	return &testSM{stateMachine: newStateMachine(znode.Options{}, newWatchManager(), h, zerolog.New(zerolog.NewTestWriter(t))), hooks: h, t: t}
}

func (s *testSM) apply(e *entry) applyResult {
	t := s.t
	enc := jute.NewEncoder(nil)
	e.Encode(enc)
	s.index++
	require.NoError(t, s.Apply(s.index, 1, enc.Bytes()))
	return s.hooks.results[len(s.hooks.results)-1]
}

// createSession creates session id with conn as its writing connection.
func (s *testSM) createSession(id int64, conn uint64) {
	s.apply(&entry{Type: entryCreateSession, SessionID: id, ConnID: conn,
		Body: jute.Marshal(&sessionRecord{ID: id, TimeoutMs: 4000, Password: make([]byte, 16)})})
}

func create(path string, conn, seq uint64) *entry {
	return &entry{Type: jute.OpCreate, SessionID: 7, ConnID: conn, Seq: seq,
		Body: jute.Marshal(&jute.CreateRequest{Path: path, ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})}
}

// TestWritesApplyInConnectionOrder checks FIFO client order: only the
// session's current connection (named by createSession or attachSession in
// the log) writes; a write whose predecessor was lost is refused, and so is
// every later one; once a new connection attached, nothing of the old one
// applies, not even a late first write (no duplicate from a client retry).
func TestWritesApplyInConnectionOrder(t *testing.T) {
	attach := func(conn uint64) *entry { return &entry{Type: entryAttachSession, SessionID: 7, ConnID: conn} }
	tests := []struct {
		name    string
		entries []*entry
		wantErr []int32
	}{
		{"in order", []*entry{create("/a", 1, 1), create("/b", 1, 2), create("/c", 1, 3)}, []int32{0, 0, 0}},
		{"gap refuses the rest of the connection", []*entry{create("/a", 1, 1), create("/c", 1, 3), create("/d", 1, 4)},
			[]int32{0, errOutOfOrder, errOutOfOrder}},
		{"lost first write", []*entry{create("/b", 1, 2)}, []int32{errOutOfOrder}},
		{"duplicate refused", []*entry{create("/a", 1, 1), create("/a", 1, 1)}, []int32{0, errOutOfOrder}},
		{"a connection the log never attached cannot write", []*entry{create("/a", 2, 1)}, []int32{errOutOfOrder}},
		{"attach fences the old connection", []*entry{create("/a", 1, 1), attach(2), create("/b", 1, 2), create("/c", 2, 1), create("/d", 2, 2)},
			[]int32{0, 0, errOutOfOrder, 0, 0}},
		{"a late first write of the old connection is refused", []*entry{attach(2), create("/retry", 2, 1), create("/lost", 1, 1)},
			[]int32{0, 0, errOutOfOrder}},
		{"server entries are not ordered", []*entry{create("/a", 1, 1), {Type: entryDeleteContainer, Body: jute.Marshal(&jute.PathRequest{Path: "/a"})}, create("/b", 1, 2)},
			[]int32{0, jute.ErrBadArguments, 0}},
		{"attach to a closed session", []*entry{{Type: entryCloseSession, SessionID: 7, ConnID: 1, Seq: 1}, attach(2)},
			[]int32{0, jute.ErrSessionExpired}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sm := newTestSM(t)
			sm.createSession(7, 1)
			var got []int32
			for _, e := range tt.entries {
				got = append(got, sm.apply(e).Err)
			}
			require.Equal(t, tt.wantErr, got)
		})
	}
}

func TestSnapshotKeepsWriteOrder(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	require.Zero(t, sm.apply(create("/a", 1, 1)).Err)
	snap, err := sm.Snapshot()
	require.NoError(t, err)

	restored := newTestSM(t)
	require.NoError(t, restored.Restore(sm.index, snap))
	restored.index = sm.index
	require.Equal(t, sm.order, restored.order)
	require.Equal(t, sm.tree.Digest(), restored.tree.Digest())
	require.Equal(t, errOutOfOrder, restored.apply(create("/c", 1, 3)).Err)
	require.Zero(t, restored.apply(create("/b", 1, 2)).Err)

	// Truncated snapshots are refused, never half-restored.
	for _, n := range []int{0, 5, len(snap) / 2, len(snap) - 1} {
		require.Error(t, newTestSM(t).Restore(1, snap[:n]), "prefix %d", n)
	}
}

func TestSessionCloseDeletesEphemeralsAndIsIdempotent(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	e := create("/eph", 1, 1)
	e.Body = jute.Marshal(&jute.CreateRequest{Path: "/eph", Flags: jute.FlagEphemeral,
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}})
	require.Zero(t, sm.apply(e).Err)
	require.Zero(t, sm.apply(&entry{Type: entryCloseSession, SessionID: 7, ConnID: 1, Seq: 2}).Err)
	_, ok := sm.tree.Exists("/eph")
	require.False(t, ok)
	require.Zero(t, sm.apply(&entry{Type: entryExpireSession, SessionID: 7}).Err)
	require.Equal(t, jute.ErrSessionExpired, sm.apply(create("/late", 1, 3)).Err)
}

// TestCreatesKeepTheirOwnACL: apply decodes each create's ACL into the
// array of the last one (writeDecoder, DecodeReusing); every node still
// holds the ACL it was created with, whatever was created after it.
func TestCreatesKeepTheirOwnACL(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	acls := [][]jute.ACL{
		{{Perms: jute.PermRead, ID: jute.Id{Scheme: "ip", ID: "10.0.0.1"}}, {Perms: jute.PermAll, ID: jute.Id{Scheme: "ip", ID: "10.0.0.2"}}},
		{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}},
		{{Perms: jute.PermCreate, ID: jute.Id{Scheme: "ip", ID: "10.0.0.3"}}},
	}
	for i, acl := range acls {
		e := &entry{Type: jute.OpCreate, SessionID: 7, ConnID: 1, Seq: uint64(i + 1),
			Body: jute.Marshal(&jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: acl})}
		require.Zero(t, sm.apply(e).Err)
	}
	for i, acl := range acls {
		got, _, ok := sm.tree.GetACL(fmt.Sprintf("/n%d", i))
		require.True(t, ok)
		require.Equal(t, acl, got, "/n%d", i)
	}
}

// TestNodeReadsReuseReplyBodies: a connection's node reads share one
// replyBodies (reset after each reply); a listing after a longer one
// holds only its own children, and a very long listing's scratch is not
// kept.
func TestNodeReadsReuseReplyBodies(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	seq := uint64(0)
	mk := func(p string) {
		seq++
		require.Zero(t, sm.apply(create(p, 1, seq)).Err, p)
	}
	mk("/big")
	for i := range maxKeptNames + 1 {
		mk(fmt.Sprintf("/big/c%05d", i))
	}
	mk("/three")
	for _, c := range []string{"b", "a", "c"} {
		mk("/three/" + c)
	}
	mk("/one")
	mk("/one/x")
	var b replyBodies
	list := func(p string) []string {
		_, code, rec := readNode(sm.stateMachine, nil, jute.OpGetChildren, &jute.PathWatchRequest{Path: p}, nil, &b)
		require.Zero(t, code)
		names := slices.Clone(rec.(*jute.GetChildrenResponse).Children)
		b.reset()
		return names
	}
	require.Equal(t, []string{"a", "b", "c"}, list("/three"))
	require.NotNil(t, b.names, "the scratch is kept")
	require.Equal(t, []string{"x"}, list("/one"))
	require.Equal(t, []string{"a", "b", "c"}, list("/three"))
	require.Len(t, list("/big"), maxKeptNames+1)
	require.Nil(t, b.names, "a listing past maxKeptNames is not kept")
	require.Equal(t, []string{"x"}, list("/one"))
}
