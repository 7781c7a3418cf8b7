package server

import (
	"testing"
	"time"
)

// BenchmarkObserveRequest measures what the connection writer pays per reply
// to record its latency (observeRequest): one goroutine, and every
// GOMAXPROCS goroutine at once, as many connection writers do.
func BenchmarkObserveRequest(b *testing.B) {
	newOps := func() *Server {
		s := &Server{}
		s.ops = newOperability(s)
		return s
	}
	b.Run("serial", func(b *testing.B) {
		s := newOps()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s.observeRequest(i&1 == 0, time.Duration(200+i%5000)*time.Microsecond, time.Now())
		}
	})
	b.Run("parallel", func(b *testing.B) {
		s := newOps()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				s.observeRequest(i&1 == 0, time.Duration(200+i%5000)*time.Microsecond, time.Now())
				i++
			}
		})
	})
}
