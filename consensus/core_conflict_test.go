package consensus

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestConflictingEntriesAppliedOnlyOnceDurable: a follower whose disk holds
// uncommitted entries 4 and 5 of term 2 receives, in one MsgApp, entries 4
// and 5 of term 3 with commit 5. raft hands the new entries over as
// committed in the Ready that also writes them; they must be applied only
// after that write (the old copies are what the disk holds until then),
// with and without the pipelined apply.
func TestConflictingEntriesAppliedOnlyOnceDurable(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			g := &coreGroup{cores: map[uint64]*Core{}, stores: map[uint64]*memStorage{}, sms: map[uint64]*durableSM{},
				down: map[uint64]bool{}, appSent: map[uint64]map[uint64]bool{}}
			peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
			g.stores[2] = newMemStorage()
			g.appSent[2] = map[uint64]bool{}
			g.sms[2] = &durableSM{g: g, id: 2}
			cfg := Config{ID: 2, Peers: peers, Transport: groupTransport{g, 2}, Logger: zerolog.Nop()}
			c, err := NewCore(cfg, g.sms[2], CoreOptions{Storage: g.stores[2], ParallelApply: parallel})
			require.NoError(t, err)
			handleReadys(t, c)
			app := func(from, term, commit uint64, ents ...*pb.Entry) {
				require.NoError(t, c.Step(&pb.Message{Type: pb.MsgApp.Enum(), From: new(from), To: new(uint64(2)),
					Term: new(term), Index: new(uint64(3)), LogTerm: new(uint64(1)), Commit: new(commit), Entries: ents}))
				handleReadys(t, c)
			}
			app(1, 2, 3, dataEntry(4, 2, "old4"), dataEntry(5, 2, "old5"))
			require.True(t, g.stores[2].holds(5, 2))
			app(3, 3, 5, dataEntry(4, 3, "new4"), dataEntry(5, 3, "new5"))
			require.Empty(t, g.bad)
			require.Equal(t, []string{"new4", "new5"}, g.sms[2].datas[len(g.sms[2].datas)-2:])
		})
	}
}
