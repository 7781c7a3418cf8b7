package server

import (
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// BenchmarkSessionConnectClose is zkbench's session workload in process:
// concurrent clients each open a session (connect, wait for the
// ConnectResponse), close it (closeSession and its reply) and drop the
// socket. The client is the raw one, so allocations and CPU are mostly the
// server's (accept, handshake, two raft entries, the replies, teardown).
func BenchmarkSessionConnectClose(b *testing.B) {
	s := startBenchServer(b)
	addr := s.Addr().String()
	b.SetParallelism(8) // 16 clients on 2 CPUs, as zkbench
	b.ReportAllocs()
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
}
