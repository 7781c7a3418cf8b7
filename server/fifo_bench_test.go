package server

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// BenchmarkFifoPipelined sends batches of requests on one connection
// without waiting, then reads their replies: reads only, or a write
// followed by reads (each write waits behind the reads before it). It
// measures the per-connection request queue (conn.go, requestqueue.go).
func BenchmarkFifoPipelined(b *testing.B) {
	for _, bc := range []struct {
		name   string
		writes bool
	}{{"reads", false}, {"write+reads", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := startBenchServer(b)
			c, _ := zktest.DialRaw(b, s.Addr().String(), 0, nil, 30000, false)
			defer c.Close()
			const batch = 32
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				for j := 0; j < batch; j++ {
					xid := int32(i + j + 1)
					var err error
					if bc.writes && j%8 == 0 {
						err = c.Send(xid, jute.OpSetData, &jute.SetDataRequest{Path: "/", Data: []byte("v"), Version: -1})
					} else {
						err = c.Send(xid, jute.OpExists, &jute.PathWatchRequest{Path: "/"})
					}
					require.NoError(b, err)
				}
				for j := 0; j < batch; j++ {
					_, _, err := c.Recv()
					require.NoError(b, err)
				}
			}
		})
	}
}

// startBenchServer starts a standalone server on a loopback port with a
// temporary data directory and no admin server, stopped when b ends.
func startBenchServer(b *testing.B) *Server {
	cfg := Default()
	cfg.ClientPort = 0
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.DataDir = b.TempDir()
	cfg.AdminEnabled = false
	s := New(cfg, zerolog.Nop())
	require.NoError(b, s.Start())
	b.Cleanup(func() { require.NoError(b, s.Stop()) })
	return s
}
