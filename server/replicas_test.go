package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
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
