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

// TestEphemeralSetReused: a session whose only ephemeral is created and
// deleted again and again (a lock per client) reuses one set, allocating
// two maps fewer per create; the index answers as before, and a set that
// held more than smallEphemeralSet paths is not kept once empty.
func TestEphemeralSetReused(t *testing.T) {
	tr := New(Options{})
	zxid := int64(0)
	apply := func(session int64, w *Write) Result {
		zxid++
		r, _ := tr.Apply(TxnContext{Zxid: zxid, SessionID: session, Auth: local}, w)
		require.NoError(t, tr.Check())
		return r
	}
	require.Zero(t, apply(1, createW(jute.OpCreate, "/l", nil, open, 0, 0)).Err)
	const ephSeq = 3 // ephemeral | sequential
	lockOnce := func(session int64) {
		r := apply(session, createW(jute.OpCreate, "/l/lock-", nil, open, ephSeq, 0))
		require.Zero(t, r.Err)
		require.Equal(t, []int64{session}, tr.EphemeralOwners())
		require.Equal(t, []string{r.Path}, tr.Ephemerals(session, "/"))
		require.Zero(t, apply(session, &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: r.Path, Version: -1}}).Err)
		require.Empty(t, tr.EphemeralOwners())
	}
	lockOnce(7)
	require.Len(t, tr.spareEphemerals, 1, "an emptied small set is kept")
	spare := fmt.Sprintf("%p", tr.spareEphemerals[0])
	lockOnce(8) // another session takes the spare
	require.Len(t, tr.spareEphemerals, 1)
	require.Equal(t, spare, fmt.Sprintf("%p", tr.spareEphemerals[0]), "the same set came back")

	// Allocations of a create and delete of a session's only ephemeral,
	// with the spare set and without (dropped before each create).
	pair := func(dropSpare bool) {
		if dropSpare {
			clear(tr.spareEphemerals)
			tr.spareEphemerals = tr.spareEphemerals[:0]
		}
		zxid++
		r, _ := tr.Apply(TxnContext{Zxid: zxid, SessionID: 9, Auth: local}, createW(jute.OpCreate, "/l/lock-", nil, open, ephSeq, 0))
		zxid++
		tr.Apply(TxnContext{Zxid: zxid, SessionID: 9, Auth: local}, &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: r.Path, Version: -1}})
	}
	withSpare := testing.AllocsPerRun(200, func() { pair(false) })
	withoutSpare := testing.AllocsPerRun(200, func() { pair(true) })
	require.LessOrEqual(t, withSpare+2, withoutSpare, "allocations with the spare set %v, without %v", withSpare, withoutSpare)
	require.NoError(t, tr.Check())

	// A set that grew past one group is dropped once empty.
	var paths []string
	for range smallEphemeralSet + 1 {
		r := apply(10, createW(jute.OpCreate, "/l/lock-", nil, open, ephSeq, 0))
		paths = append(paths, r.Path)
	}
	require.Empty(t, tr.spareEphemerals, "session 10 took the spare")
	require.Contains(t, tr.largeEphemeralSets, int64(10))
	for _, p := range paths {
		apply(10, &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: p, Version: -1}})
	}
	require.Empty(t, tr.spareEphemerals, "a set that held more than one group is not kept")

	// Sessions whose ephemerals live at once each keep a set; once empty,
	// at most maxSpareEphemerals of them are kept.
	var held []string
	for s := range maxSpareEphemerals + 3 {
		r := apply(int64(100+s), createW(jute.OpCreate, "/l/lock-", nil, open, ephSeq, 0))
		held = append(held, r.Path)
	}
	for i, p := range held {
		apply(int64(100+i), &Write{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: p, Version: -1}})
	}
	require.Len(t, tr.spareEphemerals, maxSpareEphemerals)
	require.Empty(t, tr.largeEphemeralSets)
	require.Empty(t, tr.EphemeralOwners())
}
