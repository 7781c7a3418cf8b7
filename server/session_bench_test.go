package server

import (
	"testing"

	"github.com/zkraft/zkraft/internal/cputime"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// BenchmarkSessionConnectClose is zkbench's session workload in process:
// concurrent clients each open a session (connect, wait for the
// ConnectResponse), close it (closeSession and its reply) and drop the
// socket. The client is the raw one, so allocations and CPU are mostly the
// server's (accept, handshake, two raft entries, the replies, teardown).
// cpu-µs/op is the process's CPU time (user and system) per session, which
// moves less than ns/op on a machine that other work shares.
func BenchmarkSessionConnectClose(b *testing.B) {
	s := startBenchServer(b)
	addr := s.Addr().String()
	b.SetParallelism(8) // 16 clients on 2 CPUs, as zkbench
	b.ReportAllocs()
	cpu0 := cputime.Process()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, resp, err := zktest.DialRawRequest(addr, jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
			if err != nil {
				b.Error(err)
				return
			}
			if resp.SessionID == 0 {
				b.Error("no session")
				return
			}
			if _, err := c.CloseSession(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}
