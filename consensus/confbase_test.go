package consensus

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestStepContext: a based context round-trips its base and peer context;
// a context written before bases (an address, an observer's, none) has no
// base and is read whole as the peer context; a based context this build
// cannot read is an error.
func TestStepContext(t *testing.T) {
	base := &pb.ConfState{Voters: []uint64{3, 1, 2}, Learners: []uint64{200, 7}}
	tests := []struct {
		name     string
		ctx      []byte
		base     *pb.ConfState // nil: none
		peer     string
		wantErr  bool
		addr     string
		observer bool
	}{
		{name: "base, no peer", ctx: stepContext(base, nil), base: base},
		{name: "base and address", ctx: stepContext(base, peerContext(Peer{Addr: "m4:2888"})), base: base,
			peer: "m4:2888", addr: "m4:2888"},
		{name: "base and observer", ctx: stepContext(base, peerContext(Peer{Addr: "m4:2888", Observer: true})), base: base,
			peer: "m4:2888" + observerTag, addr: "m4:2888", observer: true},
		{name: "empty base", ctx: stepContext(&pb.ConfState{}, nil), base: &pb.ConfState{}},
		{name: "old: address", ctx: []byte("m4:2888"), peer: "m4:2888", addr: "m4:2888"},
		{name: "old: observer", ctx: []byte("m4:2888" + observerTag), peer: "m4:2888" + observerTag, addr: "m4:2888", observer: true},
		{name: "old: observer without address", ctx: []byte(observerTag), peer: observerTag, observer: true},
		{name: "old: none", ctx: nil},
		{name: "base with its conf index", ctx: stepContext(withConfIndex(base, 42), peerContext(Peer{Addr: "m4:2888"})),
			base: withConfIndex(base, 42), peer: "m4:2888", addr: "m4:2888"},
		{name: "unknown version", ctx: append([]byte(baseMagic), 3, 0, 0, 0, 0, 0), wantErr: true},
		{name: "conf index missing", ctx: append([]byte(baseMagic), baseVersionIndex, 0, 0, 0, 0, 0), wantErr: true},
		{name: "no version", ctx: []byte(baseMagic), wantErr: true},
		{name: "truncated", ctx: stepContext(base, nil)[:len(baseMagic)+4], wantErr: true},
		{name: "count beyond the end", ctx: append([]byte(baseMagic), baseVersion, 100, 1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, peer, err := parseStepContext(tt.ctx)
			if tt.wantErr {
				require.ErrorIs(t, err, errBadContext)
				return
			}
			require.NoError(t, err)
			if tt.base == nil {
				require.Nil(t, b)
			} else {
				require.True(t, sameConf(tt.base, b), "base %v, want %v", b, tt.base)
				wantIdx, wantKnown := confIndexOf(tt.base)
				idx, known := confIndexOf(b)
				require.Equal(t, wantKnown, known, "conf index known")
				require.Equal(t, wantIdx, idx)
				version := tt.ctx[len(baseMagic)]
				if wantKnown {
					require.Equal(t, byte(baseVersionIndex), version)
				} else {
					require.Equal(t, byte(baseVersion), version, "a base without conf index is written as before")
				}
			}
			require.Equal(t, tt.peer, string(peer))
			addr, observer := parseContext(peer)
			require.Equal(t, tt.addr, addr)
			require.Equal(t, tt.observer, observer)
		})
	}
}

// peerRecorder is a transport that records what the Core tells it about
// peers.
type peerRecorder struct {
	Transport
	calls []string
}

func (r *peerRecorder) AddPeer(p Peer) {
	r.calls = append(r.calls, fmt.Sprintf("add %d %s", p.ID, p.Addr))
}
func (r *peerRecorder) RemovePeer(id uint64) { r.calls = append(r.calls, fmt.Sprintf("remove %d", id)) }

// TestConfChangeBaseOnApply commits conf changes through the leader's raft
// and checks on every member what apply made of them: a step on its base
// applies; a step on another base is no change (raft's configuration, the
// transport's peers and the observers stay as they were); a conf change
// without a base (older logs, the leader's promotions) applies as before.
func TestConfChangeBaseOnApply(t *testing.T) {
	initial := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	stale := &pb.ConfState{Voters: []uint64{1, 2, 3, 4}}
	addLearner := func(ctx []byte) *pb.ConfChangeV2 {
		cc := confChange(pb.ConfChangeAddLearnerNode, 9, "")
		cc.Context = ctx
		return cc
	}
	remove := func(id uint64, ctx []byte) *pb.ConfChangeV2 {
		cc := confChange(pb.ConfChangeRemoveNode, id, "")
		cc.Context = ctx
		return cc
	}
	tests := []struct {
		name     string
		cc       func(follower uint64) *pb.ConfChangeV2
		voters   func(follower uint64) []uint64
		learners []uint64
		calls    func(follower uint64) []string // on a member other than 9 and follower
		observer bool                           // member 9 is an observer
	}{
		{name: "based learner on its base",
			cc: func(uint64) *pb.ConfChangeV2 {
				return addLearner(stepContext(initial, peerContext(Peer{Addr: "m9:2888"})))
			},
			learners: []uint64{9},
			calls:    func(uint64) []string { return []string{"add 9 m9:2888"} }},
		{name: "based observer on its base",
			cc: func(uint64) *pb.ConfChangeV2 {
				return addLearner(stepContext(initial, peerContext(Peer{Addr: "m9:2888", Observer: true})))
			},
			learners: []uint64{9}, observer: true,
			calls: func(uint64) []string { return []string{"add 9 m9:2888"} }},
		{name: "based learner on another base",
			cc: func(uint64) *pb.ConfChangeV2 {
				return addLearner(stepContext(stale, peerContext(Peer{Addr: "m9:2888"})))
			}},
		{name: "based observer on another base",
			cc: func(uint64) *pb.ConfChangeV2 {
				return addLearner(stepContext(stale, peerContext(Peer{Addr: "m9:2888", Observer: true})))
			}},
		{name: "based removal on its base",
			cc:     func(f uint64) *pb.ConfChangeV2 { return remove(f, stepContext(initial, nil)) },
			voters: func(f uint64) []uint64 { return others(f) },
			calls:  func(f uint64) []string { return []string{fmt.Sprintf("remove %d", f)} }},
		{name: "based removal on another base",
			cc: func(f uint64) *pb.ConfChangeV2 { return remove(f, stepContext(stale, nil)) }},
		{name: "old format: learner with an address",
			cc:       func(uint64) *pb.ConfChangeV2 { return addLearner([]byte("m9:2888")) },
			learners: []uint64{9},
			calls:    func(uint64) []string { return []string{"add 9 m9:2888"} }},
		{name: "old format: observer",
			cc:       func(uint64) *pb.ConfChangeV2 { return addLearner([]byte("m9:2888" + observerTag)) },
			learners: []uint64{9}, observer: true,
			calls: func(uint64) []string { return []string{"add 9 m9:2888"} }},
		{name: "old format: removal",
			cc:     func(f uint64) *pb.ConfChangeV2 { return remove(f, nil) },
			voters: func(f uint64) []uint64 { return others(f) },
			calls:  func(f uint64) []string { return []string{fmt.Sprintf("remove %d", f)} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newCoreGroup(t, 3)
			lead := g.waitLeader(t)
			follower := others(lead)[0]
			recs := map[uint64]*peerRecorder{}
			for id, c := range g.cores {
				recs[id] = &peerRecorder{Transport: c.transport}
				c.transport = recs[id]
			}
			applied := g.cores[lead].AppliedIndex()
			require.NoError(t, g.cores[lead].rn.ProposeConfChange(tt.cc(follower)))
			for r := 0; r < 10; r++ {
				g.round(t)
			}
			require.Greater(t, g.cores[lead].AppliedIndex(), applied)
			wantVoters := []uint64{1, 2, 3}
			if tt.voters != nil {
				wantVoters = tt.voters(follower)
			}
			var wantCalls []string
			if tt.calls != nil {
				wantCalls = tt.calls(follower)
			}
			for _, id := range []uint64{1, 2, 3} {
				c := g.cores[id]
				if id == follower && tt.voters != nil {
					continue // removed: it may not apply its removal
				}
				require.Equal(t, c.ConfState(), c.appliedConf(), "member %d published its conf state", id)
				require.Equal(t, wantVoters, sortedVoters(c.appliedConf()), "member %d's voters", id)
				require.Equal(t, tt.learners, c.appliedConf().GetLearners(), "member %d's learners", id)
				require.Equal(t, tt.observer, c.observers[9], "member %d: 9 is an observer", id)
				if id != follower {
					require.Equal(t, wantCalls, recs[id].calls, "member %d's transport", id)
				}
			}
			require.Empty(t, g.bad)
		})
	}
}

// TestConfIndexTravelsInSnapshotMetadata: a conf state's conf index moves
// to a snapshot's metadata, whose conf state raft sees raw (raft panics on
// a conf state that differs from its own in any field); it survives the
// marshalling and raft's copy of a snapshot, and comes back on the conf
// state a member restores; a metadata without one (an older build's) gives
// a conf state of unknown history, and sameHistory judges such by content.
func TestConfIndexTravelsInSnapshotMetadata(t *testing.T) {
	plain := &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{8}}
	tests := []struct {
		name  string
		cs    *pb.ConfState
		idx   uint64
		known bool
	}{
		{name: "known", cs: withConfIndex(plain, 17), idx: 17, known: true},
		{name: "set twice: the last", cs: withConfIndex(withConfIndex(plain, 5), 9), idx: 9, known: true},
		{name: "unknown (older build)", cs: plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := snapshotMeta(30, 2, tt.cs)
			_, onConf := confIndexOf(md.GetConfState())
			require.False(t, onConf, "raft sees the raw conf state")
			require.NoError(t, pb.EnsureConfState(md.GetConfState()).Equivalent(plain), "raft's check of a restored conf state")
			wire, err := proto.Marshal(&pb.Message{Type: pb.MsgSnap.Enum(), Snapshot: &pb.Snapshot{Metadata: md}})
			require.NoError(t, err)
			var got pb.Message
			require.NoError(t, proto.Unmarshal(wire, &got))
			copied := proto.Clone(got.GetSnapshot()).(*pb.Snapshot) // as raft keeps it
			cs := snapshotConf(copied.GetMetadata())
			idx, known := confIndexOf(cs)
			require.Equal(t, tt.known, known)
			require.Equal(t, tt.idx, idx)
			require.True(t, sameConf(cs, plain))
			require.Same(t, plain, rawConf(plain), "a raw conf state is not copied")
		})
	}
	require.True(t, sameHistory(withConfIndex(plain, 4), withConfIndex(plain, 4)))
	require.False(t, sameHistory(withConfIndex(plain, 4), withConfIndex(plain, 6)))
	require.True(t, sameHistory(plain, withConfIndex(plain, 6)), "unknown: judged by content")
	require.True(t, sameHistory(withConfIndex(plain, 4), plain), "unknown: judged by content")
}
