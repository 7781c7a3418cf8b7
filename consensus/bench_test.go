package consensus

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// benchSM signals the proposer of each entry: data is an 8-byte id.
type benchSM struct {
	waiters sync.Map // id -> chan struct{}
}

func (s *benchSM) Apply(_, _ uint64, data []byte) error {
	if ch, ok := s.waiters.LoadAndDelete(binary.BigEndian.Uint64(data)); ok {
		close(ch.(chan struct{}))
	}
	return nil
}
func (s *benchSM) Snapshot() ([]byte, error)    { return []byte("bench"), nil }
func (s *benchSM) Restore(uint64, []byte) error { return nil }

func startBenchNode(b *testing.B) (*Node, *benchSM) {
	sm := &benchSM{}
	leaderC := make(chan struct{})
	var once sync.Once
	n, err := Start(Config{
		ID:      1,
		DataDir: b.TempDir(),
		Logger:  zerolog.Nop(),
		OnLeaderChange: func(isLeader bool, _, _ uint64) {
			if isLeader {
				once.Do(func() { close(leaderC) })
			}
		},
	}, sm)
	require.NoError(b, err)
	b.Cleanup(func() { _ = n.Stop() })
	select {
	case <-leaderC:
	case <-time.After(testTimeout):
		b.Fatal("no leader")
	}
	return n, sm
}

// proposeAndWait proposes id and waits until it is applied.
func proposeAndWait(ctx context.Context, n *Node, sm *benchSM, id uint64) error {
	ch := make(chan struct{})
	sm.waiters.Store(id, ch)
	var data [8]byte
	binary.BigEndian.PutUint64(data[:], id)
	if err := n.Propose(ctx, data[:]); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func reportRates(b *testing.B, n *Node, before Status) {
	s := n.Status()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if batches := s.PersistBatches - before.PersistBatches; batches > 0 {
		b.ReportMetric(float64(s.PersistedEntries-before.PersistedEntries)/float64(batches), "entries/fsync")
	}
}

// BenchmarkProposeSequential measures propose-to-apply latency: one
// proposal in flight at a time.
func BenchmarkProposeSequential(b *testing.B) {
	n, sm := startBenchNode(b)
	ctx := context.Background()
	before := n.Status()
	var id uint64
	for b.Loop() {
		id++
		if err := proposeAndWait(ctx, n, sm, id); err != nil {
			b.Fatal(err)
		}
	}
	reportRates(b, n, before)
}

// BenchmarkProposeParallel measures throughput with many proposals in
// flight; group commit shares each fsync among them.
func BenchmarkProposeParallel(b *testing.B) {
	n, sm := startBenchNode(b)
	ctx := context.Background()
	before := n.Status()
	var id atomic.Uint64
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := proposeAndWait(ctx, n, sm, id.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRates(b, n, before)
}

// BenchmarkCluster3Propose measures propose-to-apply throughput of a
// three-member group over TCP on loopback, on disk, with 48 proposals in
// flight, a third on each member (each waiting for its own member's
// apply): as built, without the Core stepping peer messages while it
// writes (Inbox), and without followers forwarding proposals at once
// (Node.forward). Run the binary several times to alternate them; it
// reports the leader's entries per write (see the comment there).
func BenchmarkCluster3Propose(b *testing.B) {
	for _, v := range []struct {
		name               string
		noInbox, noForward bool
	}{{"all", false, false}, {"no-inbox", true, false}, {"no-forward", false, true}} {
		b.Run(v.name, func(b *testing.B) {
			testNoInbox, testNoForward = v.noInbox, v.noForward
			defer func() { testNoInbox, testNoForward = false, false }()
			nodes, sms := startBenchCluster(b, 3)
			ctx := context.Background()
			var next atomic.Uint64
			var failed atomic.Int64
			var lead *Node
			for _, n := range nodes {
				if n.IsLeader() {
					lead = n
				}
			}
			require.NotNil(b, lead)
			before := lead.Status()
			b.ResetTimer()
			var wg sync.WaitGroup
			var left atomic.Int64
			left.Store(int64(b.N))
			for w := range 48 {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := proposeAndWait(ctx, nodes[w%3], sms[w%3], next.Add(1)); err != nil {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			// Disk-bound, the leader writes back to back: entries per
			// write is the proposals in flight over the latency in writes,
			// less sensitive to how fast the shared disk is than ops/s.
			reportRates(b, lead, before)
			require.Zero(b, failed.Load())
		})
	}
}

// startBenchCluster starts size members on disk, over TCP on loopback, and
// waits for a leader.
func startBenchCluster(b *testing.B, size int) ([]*Node, []*benchSM) {
	var peers []Peer
	var lns []net.Listener
	for id := uint64(1); id <= uint64(size); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		lns = append(lns, ln)
		peers = append(peers, Peer{ID: id, Addr: ln.Addr().String()})
	}
	leaderC := make(chan struct{})
	var once sync.Once
	var nodes []*Node
	var sms []*benchSM
	for i, p := range peers {
		sm := &benchSM{}
		tr := NewTCPTransport(TCPConfig{ID: p.ID, Listener: lns[i], Peers: peers, Logger: zerolog.Nop()})
		n, err := Start(Config{ID: p.ID, Peers: peers, Transport: tr, DataDir: b.TempDir(), Logger: zerolog.Nop(),
			OnLeaderChange: func(isLeader bool, _, _ uint64) {
				if isLeader {
					once.Do(func() { close(leaderC) })
				}
			}}, sm)
		require.NoError(b, err)
		b.Cleanup(func() { _ = n.Stop() })
		nodes = append(nodes, n)
		sms = append(sms, sm)
	}
	select {
	case <-leaderC:
	case <-time.After(testTimeout):
		b.Fatal("no leader")
	}
	for _, n := range nodes {
		require.Eventually(b, func() bool { return n.Status().Lead != 0 }, testTimeout, 5*time.Millisecond)
	}
	return nodes, sms
}
