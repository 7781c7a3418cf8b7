package server

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// TestRestoreKeepsSnapshotZxid restores a snapshot whose last zxid Z is
// below the raft index I it was taken at (entries that are not client
// writes, such as conf changes and a new leader's empty entry, use raft
// indexes but no zxid). The restored member must report Z, like its peers,
// not I: a client that saw I would be refused by every other member.
func TestRestoreKeepsSnapshotZxid(t *testing.T) {
	sm := newTestSM(t)
	sm.createSession(7, 1)
	require.Zero(t, sm.apply(create("/a", 1, 1)).Err)
	z := sm.lastZxid.Load()
	require.EqualValues(t, 2, z)
	snap, err := sm.Snapshot()
	require.NoError(t, err)

	const index = 9 // three conf changes and an empty entry later
	restored := newTestSM(t)
	require.NoError(t, restored.Restore(index, snap))
	require.Equal(t, z, restored.lastZxid.Load())

	// The next write takes its raft index as zxid, above Z.
	restored.index = index
	restored.createSession(8, 2)
	require.EqualValues(t, index+1, restored.lastZxid.Load())

	// A snapshot cannot hold a zxid beyond the index it was taken at.
	require.ErrorContains(t, newTestSM(t).Restore(uint64(z)-1, snap), "zxid")
}

// TestApplyRefusesEntriesItCannotRead: an entry this member cannot decode,
// of an unknown type, or whose record it cannot read, is refused with an
// error (which stops the member, see consensus.StateMachine) and changes
// nothing: no zxid, no result handed out, the session's write order as it
// was. Skipping it would let this replica diverge from the others.
func TestApplyRefusesEntriesItCannotRead(t *testing.T) {
	encode := func(e *entry) []byte {
		enc := jute.NewEncoder(nil)
		e.Encode(enc)
		return enc.Bytes()
	}
	futureVersion := encode(&entry{Type: jute.OpCreate})
	futureVersion[3] = 99
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"garbage", []byte{1, 2, 3}, "entry"},
		{"unknown format version", futureVersion, "version"},
		{"unknown entry type", encode(&entry{Type: 77, SessionID: 7, ConnID: 1, Seq: 2}), "unknown entry type 77"},
		{"unknown client op", encode(&entry{Type: jute.OpGetData, SessionID: 7, ConnID: 1, Seq: 2,
			Body: jute.Marshal(&jute.PathWatchRequest{Path: "/a"})}), "unknown entry type"},
		{"unreadable write body", encode(&entry{Type: jute.OpSetData, SessionID: 7, ConnID: 1, Seq: 2, Body: []byte{0, 0}}), "body"},
		{"unreadable session record", encode(&entry{Type: entryCreateSession, SessionID: 9, Body: []byte{1}}), "createSession"},
		{"unreadable delete record", encode(&entry{Type: entryDeleteTTL, Body: []byte{0, 0, 0, 9}}), "delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sm := newTestSM(t)
			sm.createSession(7, 1)
			require.Zero(t, sm.apply(create("/a", 1, 1)).Err)
			zxid, results, order := sm.lastZxid.Load(), len(sm.hooks.results), sm.order[7]

			err := sm.Apply(sm.index+1, 1, tt.data)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, zxid, sm.lastZxid.Load(), "zxid moved")
			require.Len(t, sm.hooks.results, results, "a result was handed out")
			require.Equal(t, order, sm.order[7], "write order moved")
			require.NoError(t, sm.tree.Check())
		})
	}
}

// TestApplyDoesNotDependOnMemberConfig applies one log to two members
// configured differently, as during a rolling TLS upgrade (one member has
// secureClientPort, so x509 ids; one has TTL nodes enabled). Writes proposed
// by either are decided with the proposer's options, which travel in the
// entry, so both members hand out the same results and end with the same
// tree.
func TestApplyDoesNotDependOnMemberConfig(t *testing.T) {
	upgraded := znode.Options{ExtendedTypesEnabled: true, X509Enabled: true}
	old := znode.Options{}
	alice := jute.Id{Scheme: "x509", ID: "CN=alice,O=example"}
	x509ACL := []jute.ACL{{Perms: jute.PermAll, ID: alice}}
	authACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "auth"}}}
	seq := uint64(0)
	write := func(by znode.Options, op int32, rec jute.Record, auth ...jute.Id) *entry {
		seq++
		return &entry{Type: op, SessionID: 7, ConnID: 1, Seq: seq, Auth: auth, Body: jute.Marshal(rec),
			Opts: writeOpts(by)}
	}
	log := []*entry{
		write(upgraded, jute.OpCreate, &jute.CreateRequest{Path: "/x509", ACL: x509ACL}),
		write(upgraded, jute.OpCreate, &jute.CreateRequest{Path: "/auth", ACL: authACL}, alice),
		write(upgraded, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ttl", ACL: x509ACL, Flags: jute.FlagPersistentWithTTL, TTL: 5000}),
		write(upgraded, jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: "/m1", ACL: authACL}},
			{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: "/m2", ACL: x509ACL, Flags: jute.FlagPersistentWithTTL, TTL: 5000}},
		}}, alice),
		write(old, jute.OpCreate, &jute.CreateRequest{Path: "/x509-old", ACL: x509ACL}),
		write(old, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ttl-old", ACL: x509ACL, Flags: jute.FlagPersistentWithTTL, TTL: 5000}),
		write(old, jute.OpSetACL, &jute.SetACLRequest{Path: "/x509", ACL: x509ACL, Version: -1}, alice),
	}
	want := []int32{0, 0, 0, 0, jute.ErrInvalidACL, jute.ErrUnimplemented, jute.ErrInvalidACL}

	run := func(member znode.Options) (*testSM, []int32) {
		h := &nopHooks{}
		sm := &testSM{stateMachine: newStateMachine(member, newWatchManager(), h, zerolog.New(zerolog.NewTestWriter(t))), hooks: h, t: t}
		sm.createSession(7, 1)
		var got []int32
		for _, e := range log {
			got = append(got, sm.apply(e).Err)
		}
		return sm, got
	}
	a, resA := run(upgraded)
	b, resB := run(old)
	require.Equal(t, want, resA, "results on the upgraded member")
	require.Equal(t, want, resB, "results on the old member")
	require.Equal(t, a.tree.Digest(), b.tree.Digest(), "trees differ")
	require.Equal(t, a.lastZxid.Load(), b.lastZxid.Load())
	for _, p := range []string{"/x509", "/auth", "/ttl", "/m1", "/m2"} {
		_, ok := b.tree.Exists(p)
		require.True(t, ok, "%s missing on the old member", p)
	}
}

// TestEntryCarriesWriteOptions: the proposer's options survive encoding; a
// version 1 entry (written before entries carried them) is decided by the
// applying member's own options, as it was when written; unknown option
// bits (a proposer deciding with a check this member lacks) are refused.
func TestEntryCarriesWriteOptions(t *testing.T) {
	encode := func(e *entry) []byte {
		enc := jute.NewEncoder(nil)
		e.Encode(enc)
		return enc.Bytes()
	}
	local := znode.Options{ExtendedTypesEnabled: true}
	for _, o := range []znode.Options{{}, {ExtendedTypesEnabled: true}, {X509Enabled: true}, {ExtendedTypesEnabled: true, X509Enabled: true},
		{SASLEnabled: true}, {ExtendedTypesEnabled: true, X509Enabled: true, SASLEnabled: true}} {
		var e entry
		require.NoError(t, e.Decode(jute.NewDecoder(encode(&entry{Type: jute.OpCreate, Opts: writeOpts(o)}), 0)))
		require.Equal(t, o, e.treeOptions(local))
	}

	v2 := encode(&entry{Type: jute.OpCreate, Body: []byte{1}, Opts: optX509})
	v1 := append([]byte(nil), v2[:len(v2)-4]...)
	v1[3] = 1
	var e entry
	require.NoError(t, e.Decode(jute.NewDecoder(v1, 0)))
	require.Equal(t, []byte{1}, e.Body)
	require.Equal(t, local, e.treeOptions(local))

	for _, bit := range []byte{byte(optLocal), 1 << 5} {
		bad := append([]byte(nil), v2...)
		bad[len(bad)-1] |= bit
		require.ErrorContains(t, e.Decode(jute.NewDecoder(bad, 0)), "unknown write options", "bit %#x", bit)
	}
	// optLocal is never written: re-encoding a version 1 entry gives a
	// version 2 entry with no options.
	var back entry
	require.NoError(t, back.Decode(jute.NewDecoder(encode(&entry{Type: jute.OpCreate, Opts: optLocal}), 0)))
	require.Equal(t, entryOpts(0), back.Opts)
}

// TestEnsembleMembersConfiguredDifferentlyAgree runs three in-process
// members where only member 1 allows TTL nodes and x509 ids (a rolling
// upgrade in progress). Writes through either kind of member are decided
// by the member that received them, and every member ends with the same
// tree.
func TestEnsembleMembersConfiguredDifferentlyAgree(t *testing.T) {
	servers, _ := startEnsemble(t, 3, func(cfg *Config) {
		if cfg.ServerID == 1 {
			cfg.ExtendedTypes = true
			cfg.X509AuthProvider = true
		}
	})
	x509ACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "x509", ID: "CN=alice,O=example"}}}
	upgraded, old := dial(t, servers[0]), dial(t, servers[1])
	var last int64
	call := func(c *zktest.RawConn, op int32, req jute.Record, want int32) {
		t.Helper()
		hdr, err := c.Call(op, req, nil)
		require.NoError(t, err)
		require.Equal(t, want, hdr.Err, "op %d", op)
		last = max(last, hdr.Zxid)
	}
	call(upgraded, jute.OpCreate, &jute.CreateRequest{Path: "/x509", ACL: x509ACL}, 0)
	call(upgraded, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ttl", ACL: x509ACL, Flags: jute.FlagPersistentWithTTL, TTL: 60000}, 0)
	call(old, jute.OpCreate, &jute.CreateRequest{Path: "/x509-old", ACL: x509ACL}, jute.ErrInvalidACL)
	call(old, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ttl-old", ACL: x509ACL, Flags: jute.FlagPersistentWithTTL, TTL: 60000}, jute.ErrUnimplemented)
	call(old, jute.OpCreate, &jute.CreateRequest{Path: "/done", ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	digests := make([]uint64, len(servers))
	for i, s := range servers {
		require.NoError(t, s.node.WaitApplied(ctx, uint64(last)), "member %d", i+1)
		s.sm.mu.RLock()
		digests[i] = s.sm.tree.Digest()
		_, ok := s.sm.tree.Exists("/x509")
		s.sm.mu.RUnlock()
		require.True(t, ok, "member %d lacks /x509", i+1)
	}
	require.Equal(t, digests[0], digests[1], "members 1 and 2 disagree")
	require.Equal(t, digests[0], digests[2], "members 1 and 3 disagree")
}

// TestRestartFromSnapshotKeepsZxid restarts a standalone member whose
// newest snapshot was taken after a new leader's empty entry: its raft index
// is above the last zxid. After the next restart the member must report the
// zxid it had, not that index (a client that saw it would be refused by
// every peer with "client has seen a newer zxid").
func TestRestartFromSnapshotKeepsZxid(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		t.Helper()
		cfg := Default()
		cfg.ClientPort, cfg.ClientPortAddress = 0, "127.0.0.1"
		cfg.DataDir = dir
		cfg.AdminEnabled = false
		cfg.SnapshotEvery = 1 // a snapshot after every Ready that applied something
		s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
		require.NoError(t, s.Start())
		return s
	}
	s := start()
	c, _ := zktest.DialRaw(t, s.Addr().String(), 0, nil, 30000, false)
	hdr, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/a",
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	c.Close()
	require.NoError(t, s.Stop())
	z := s.sm.lastZxid.Load()
	require.GreaterOrEqual(t, z, hdr.Zxid)

	// Restart: the new term's empty entry (no zxid) is applied, then a
	// snapshot is taken above z.
	s = start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s.node.Status().LastSnapshotIndex <= uint64(z) {
		select {
		case <-ctx.Done():
			t.Fatalf("no snapshot above zxid %d", z)
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.Equal(t, z, s.sm.lastZxid.Load())
	require.NoError(t, s.Stop())

	s = start()
	defer func() { require.NoError(t, s.Stop()) }()
	require.Equal(t, z, s.sm.lastZxid.Load(), "restored member reports a zxid above the one it had")
}

// TestUnknownEntryStopsMember: a committed entry of a type this member does
// not know stops it (its consensus node fails with the cause; the process
// exits on Done), instead of being skipped while the others apply it.
func TestUnknownEntryStopsMember(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s)
	hdr, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/before",
		ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}}, nil)
	require.NoError(t, err)
	require.Zero(t, hdr.Err)
	zxid := s.sm.lastZxid.Load()

	enc := jute.NewEncoder(nil)
	(&entry{Type: 77, Proposer: 1, ReqID: 1}).Encode(enc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.node.Propose(ctx, enc.Bytes()))
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("member did not stop on an unknown entry")
	}
	require.ErrorContains(t, s.node.Err(), "unknown entry type 77")
	require.Equal(t, zxid, s.sm.lastZxid.Load())
	require.Equal(t, uint64(zxid), s.node.AppliedIndex(), "applied index moved past the unknown entry")
}
