package znode

import (
	"fmt"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

func BenchmarkApplyCreate(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/n%d", i)
	}
	data := make([]byte, 64)
	w := createW(jute.OpCreate, "", data, open, 0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Create.Path = paths[i]
		if r, _ := tree.Apply(TxnContext{Zxid: int64(i + 2), Time: int64(i), SessionID: 1, Auth: local}, w); r.Err != 0 {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkApplySequentialCreate(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	w := createW(jute.OpCreate, "/bench/lock-", make([]byte, 16), open, jute.FlagEphemeralSequential, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, _ := tree.Apply(TxnContext{Zxid: int64(i + 2), Time: int64(i), SessionID: 1, Auth: local}, w); r.Err != 0 {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkGetData(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	const n = 10000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/n%d", i)
		tree.Apply(TxnContext{Zxid: int64(i + 2), Auth: local}, createW(jute.OpCreate, paths[i], make([]byte, 64), open, 0, 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, ok := tree.GetData(paths[i%n]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	tree := New(Options{})
	tree.Apply(TxnContext{Zxid: 1, Auth: local}, createW(jute.OpCreate, "/bench", nil, open, 0, 0))
	for i := 0; i < 10000; i++ {
		tree.Apply(TxnContext{Zxid: int64(i + 2), Auth: local}, createW(jute.OpCreate, fmt.Sprintf("/bench/n%d", i), make([]byte, 64), open, 0, 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = tree.Digest()
	}
}
