package znode

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestSequentialNameMatchesFormat checks sequentialName against the
// "%s%010d" format it replaced, at the edges of every width and of int32,
// counters that wrapped negative included.
func TestSequentialNameMatchesFormat(t *testing.T) {
	values := []int32{0, 1, 9, 10, 99, 12345, 999999999, 1000000000, math.MaxInt32,
		-1, -9, -10, -99999999, -100000000, -999999999, -1000000000, math.MinInt32}
	for i := int32(1); i > 0 && i < math.MaxInt32/7; i *= 7 {
		values = append(values, i, i-1, -i, -i+1)
	}
	for _, prefix := range []string{"/a/lock-", "/", "/x/"} {
		for _, v := range values {
			require.Equal(t, fmt.Sprintf("%s%010d", prefix, v), sequentialName(prefix, v), "prefix %q, counter %d", prefix, v)
		}
	}
}

// BenchmarkSequentialName: the name of a sequential node (one allocation).
func BenchmarkSequentialName(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		_ = sequentialName("/bench/locks/l3/lock-", int32(i))
	}
}

// BenchmarkSequentialNameSprintf is what sequentialName replaced.
func BenchmarkSequentialNameSprintf(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		_ = fmt.Sprintf("%s%010d", "/bench/locks/l3/lock-", int32(i))
	}
}

// TestAppendChildren: the names are appended to dst, sorted among
// themselves, and GetChildren of a node without children is empty, not nil.
func TestAppendChildren(t *testing.T) {
	tr := New(Options{})
	for i, p := range []string{"/p", "/p/c", "/p/a", "/p/b"} {
		r, _ := tr.Apply(TxnContext{Zxid: int64(i + 1), Auth: local}, createW(jute.OpCreate, p, nil, open, 0, 0))
		require.Zero(t, r.Err, p)
	}
	got, _, ok := tr.AppendChildren([]string{"z"}, "/p")
	require.True(t, ok)
	require.Equal(t, []string{"z", "a", "b", "c"}, got)
	got, _, ok = tr.GetChildren("/p/a")
	require.True(t, ok)
	require.NotNil(t, got)
	require.Empty(t, got)
	got, _, ok = tr.AppendChildren(nil, "/missing")
	require.False(t, ok)
	require.Nil(t, got)
}
