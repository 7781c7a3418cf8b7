package consensus

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
)

// readRegistry matches raft ReadStates to ReadIndex callers by request
// context: an 8-byte id unique within this process run (seeded from the
// clock so a late answer to a request from before a restart cannot match).
type readRegistry struct {
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan uint64
}

func (r *readRegistry) init() {
	r.next = uint64(time.Now().UnixNano())
	r.pending = make(map[uint64]chan uint64)
}

func (r *readRegistry) register() (uint64, chan uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	ch := make(chan uint64, 1)
	r.pending[r.next] = ch
	return r.next, ch
}

func (r *readRegistry) cancel(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, id)
}

// deliver hands each read state to its waiting caller, if still waiting.
func (r *readRegistry) deliver(rs []raft.ReadState) {
	if len(rs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range rs {
		if len(s.RequestCtx) != 8 {
			continue
		}
		id := binary.BigEndian.Uint64(s.RequestCtx)
		if ch, ok := r.pending[id]; ok {
			ch <- s.Index
			delete(r.pending, id)
		}
	}
}

// ReadIndex is a linearizable read barrier. It asks the leader for its
// commit index (raft's ReadIndex protocol, which confirms leadership with a
// quorum) and returns that index once this member has applied up to it. A
// read of local state after ReadIndex returns observes every write committed
// before ReadIndex was called. Errors: ErrNoLeader, ErrStopped, ctx.Err().
//
// Raft drops a read request silently when leadership changes while it is in
// flight, so the request is re-sent every election timeout until ctx ends.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	select {
	case <-n.done:
		return 0, ErrStopped
	default:
	}
	if n.core.Lead() == 0 {
		return 0, ErrNoLeader
	}
	id, ch := n.reads.register()
	defer n.reads.cancel(id)
	rctx := make([]byte, 8)
	binary.BigEndian.PutUint64(rctx, id)

	retry := time.NewTimer(n.cfg.TickInterval * time.Duration(n.cfg.ElectionTicks))
	defer retry.Stop()
	for {
		n.q.push(func(n *Node) { n.core.ReadIndex(rctx) })
		select {
		case idx := <-ch:
			if err := n.WaitApplied(ctx, idx); err != nil {
				return 0, err
			}
			return idx, nil
		case <-retry.C:
			retry.Reset(n.cfg.TickInterval * time.Duration(n.cfg.ElectionTicks))
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-n.done:
			return 0, ErrStopped
		}
	}
}
