package main

import (
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// TestCreateRunsDeleteTheirNodes runs the create workloads against each real
// server and checks that every node a run created is gone when run returns
// (the znode count is back where it was), so that the next workload meets
// the same tree on both servers whatever their create rates.
func TestCreateRunsDeleteTheirNodes(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			zs := zktest.Start(t, target, zktest.Options{})
			s := &server{target: target, addrs: []string{zs.Addr}}
			t.Cleanup(func() {
				for _, c := range s.clients {
					c.conn.Close()
				}
			})
			if err := s.connect(4); err != nil {
				t.Fatalf("connect: %v", err)
			}
			value := make([]byte, 128)
			if err := setup(s.clients[0].conn, 4, value); err != nil {
				t.Fatalf("setup: %v", err)
			}
			before := s.znodes()
			if before <= 0 {
				t.Fatalf("znode count before = %d, want the server's count", before)
			}
			for _, w := range workloads {
				if w.name != "create" && w.name != "create-pipelined" {
					continue
				}
				res, err := run(s, w, 300*time.Millisecond, value)
				if err != nil {
					t.Fatalf("%s: %v", w.name, err)
				}
				if res.ops < deleteBatch {
					t.Logf("%s: %d creates (fewer than one delete batch)", w.name, res.ops)
				}
				if res.ops == 0 {
					t.Fatalf("%s: no create completed", w.name)
				}
				if after := s.znodes(); after != before {
					t.Fatalf("%s: %d creates, znode count %d -> %d after the run, want %d", w.name, res.ops, before, after, before)
				}
			}
		})
	}
}
