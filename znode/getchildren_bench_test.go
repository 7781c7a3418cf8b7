package znode

import (
	"fmt"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

// BenchmarkGetChildren is getChildren of a parent of 16 children (a lock's
// contenders) and of one of 100 k children (the scale run's parents).
func BenchmarkGetChildren(b *testing.B) {
	for _, n := range []int{16, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tree := New(Options{})
			tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/p", nil, open, 0, 0))
			for i := range n {
				tree.Apply(TxnContext{Zxid: int64(i + 2), Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/p/lock-%010d", i), make([]byte, 100), open, 0, 0))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, ok := tree.GetChildren("/p"); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}
