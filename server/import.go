package server

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// ImportedSnapshot returns the state snapshot (the payload Restore reads) of
// tree with no sessions, whose last zxid is zxid. zkraft import seeds a data
// directory with it.
func ImportedSnapshot(tree *znode.Tree, zxid int64) ([]byte, error) {
	if zxid < 0 {
		return nil, fmt.Errorf("imported snapshot: negative zxid %d", zxid)
	}
	sm := &stateMachine{
		tree:     tree,
		sessions: session.NewTable(),
		order:    map[int64]connOrder{},
		delayed:  map[int64]int64{},
		log:      zerolog.Nop(),
	}
	sm.lastZxid.Store(zxid)
	return sm.Snapshot()
}
