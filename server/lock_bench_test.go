package server

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/cputime"
	"github.com/zkraft/zkraft/jute"
)

// lockUser runs zkbench's uncontended lock recipe (Curator's
// InterProcessMutex with a lock per client: create an ephemeral-sequential
// child, list the lock's children, delete the child) on one benchConn, one
// request at a time, allocating nothing per operation once set up: the
// delete frame is rebuilt in place from the create's reply.
type lockUser struct {
	c        *benchConn
	create   []byte
	children []byte
	del      []byte
}

func newLockClient(tb testing.TB, addr string, i int) *lockUser {
	c := dialBenchConn(tb, addr)
	dir := fmt.Sprintf("/locks/l%d", i)
	c.call(tb, jute.OpCreate, &jute.CreateRequest{Path: dir, ACL: benchOpenACL})
	return &lockUser{
		c:        c,
		create:   c.frame(jute.OpCreate, &jute.CreateRequest{Path: dir + "/lock-", ACL: benchOpenACL, Flags: 3}),
		children: c.frame(jute.OpGetChildren, &jute.PathWatchRequest{Path: dir}),
		del:      make([]byte, 0, 64),
	}
}

// once is one acquire and release: three requests and replies.
func (l *lockUser) once(tb testing.TB) {
	l.c.send(tb, l.create)
	body := l.c.recvBody(tb)
	// The create reply: header (xid, zxid, err: 16 bytes), then the path.
	n := int(binary.BigEndian.Uint32(body[16:]))
	path := body[20 : 20+n]
	d := l.del[:0]
	d = binary.BigEndian.AppendUint32(d, uint32(8+4+n+4))
	d = binary.BigEndian.AppendUint32(d, 0) // xid, set by send
	d = binary.BigEndian.AppendUint32(d, uint32(jute.OpDelete))
	d = binary.BigEndian.AppendUint32(d, uint32(n))
	d = append(d, path...)
	d = binary.BigEndian.AppendUint32(d, 0xffffffff) // version -1
	l.del = d
	l.c.send(tb, l.children)
	if body := l.c.recvBody(tb); binary.BigEndian.Uint32(body[16:]) != 1 {
		tb.Fatalf("lock has %d children, want 1", binary.BigEndian.Uint32(body[16:]))
	}
	l.c.send(tb, l.del)
	l.c.recvBody(tb)
}

// runLocks runs n lock operations spread over clients, each client one
// operation at a time, as zkbench's lock workload does.
func runLocks(tb testing.TB, clients []*lockUser, n int) {
	spread(n, len(clients), func(i int) { clients[i].once(tb) })
}

// spread runs op n times over clients goroutines, op(i) on goroutine i, each
// running its share one after another; it returns when all are done.
func spread(n, clients int, op func(i int)) {
	var wg sync.WaitGroup
	for i := range clients {
		k := n / clients
		if i < n%clients {
			k++
		}
		wg.Go(func() {
			for range k {
				op(i)
			}
		})
	}
	wg.Wait()
}

func startLockClients(tb testing.TB, addr string, n int) []*lockUser {
	root := dialBenchConn(tb, addr)
	root.call(tb, jute.OpCreate, &jute.CreateRequest{Path: "/locks", ACL: benchOpenACL})
	clients := make([]*lockUser, n)
	for i := range clients {
		clients[i] = newLockClient(tb, addr, i)
	}
	return clients
}

// BenchmarkLockPath measures zkbench's lock workload in process: 16
// clients, each with its own lock and one request at a time, run the
// acquire and release of Curator's recipe (create ephemeral-sequential,
// getChildren, delete). The clients allocate nothing per operation, so
// allocs/op and B/op are the server's per lock operation (three
// requests); cpu-µs/op is the whole process's CPU (server and clients).
func BenchmarkLockPath(b *testing.B) {
	s := startBenchServer(b)
	clients := startLockClients(b, s.Addr().String(), 16)
	runLocks(b, clients, 320) // warm up
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	runLocks(b, clients, b.N)
	b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkSetDataClients is BenchmarkLockPath's setup with zkbench's
// setData workload: 16 clients, one request at a time each.
func BenchmarkSetDataClients(b *testing.B) {
	s := startBenchServer(b)
	addr := s.Addr().String()
	conns := make([]*benchConn, 16)
	frames := make([][]byte, len(conns))
	data := make([]byte, 128)
	for i := range conns {
		conns[i] = dialBenchConn(b, addr)
		p := fmt.Sprintf("/s%d", i)
		conns[i].call(b, jute.OpCreate, &jute.CreateRequest{Path: p, Data: data, ACL: benchOpenACL})
		frames[i] = conns[i].frame(jute.OpSetData, &jute.SetDataRequest{Path: p, Data: data, Version: -1})
	}
	run := func(n int) {
		spread(n, len(conns), func(i int) {
			conns[i].send(b, frames[i])
			conns[i].recv(b)
		})
	}
	run(320)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	run(b.N)
	b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// TestLockPathAllocations bounds what the server allocates per lock
// operation of BenchmarkLockPath (three requests: create
// ephemeral-sequential, getChildren, delete).
func TestLockPathAllocations(t *testing.T) {
	skipAllocationBoundsUnderInvariants(t)
	s := startServer(t, nil)
	clients := startLockClients(t, s.Addr().String(), 16)
	runLocks(t, clients, 1600) // raft, the WAL and the connections' scratch warm up
	const n = 4800
	allocs, bytes := allocationsBy(func() { runLocks(t, clients, n) })
	allocs, bytes = allocs/n, bytes/n
	t.Logf("%d allocations, %d bytes per lock operation", allocs, bytes)
	require.LessOrEqual(t, allocs, uint64(lockPathAllocs), "allocations per lock operation")
	require.LessOrEqual(t, bytes, uint64(lockPathBytes), "bytes allocated per lock operation")
}
