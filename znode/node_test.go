package znode

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// Data kept as a string keeps nil apart from empty through create,
// setData, a multi's rollback and both snapshot readers, and is a copy of
// the caller's buffer.
func TestNodeDataNilEmpty(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"bytes", []byte("xyz")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			same := func(t *testing.T, tree *Tree, path string) {
				t.Helper()
				got, st, ok := tree.GetData(path)
				require.True(t, ok)
				require.Equal(t, tt.data == nil, got == nil, "nil stays nil, empty stays empty")
				require.Equal(t, string(tt.data), string(got))
				require.Equal(t, len(got), cap(got), "an append to the data copies")
				require.Equal(t, int32(len(tt.data)), st.DataLength)
			}
			tree := mustNewTree(t)
			c := newClient(t, tree)
			buf := bytes.Clone(tt.data)
			r, _ := c.apply(createW(jute.OpCreate, "/c", buf, open, 0, 0))
			require.Zero(t, r.Err)
			c.mustCreate("/s")
			require.Zero(t, c.setData("/s", buf, -1).Err)
			if len(buf) > 0 {
				buf[0] = 'Q' // the tree holds copies
			}
			same(t, tree, "/c")
			same(t, tree, "/s")

			// A failed multi restores the data.
			r, _ = c.apply(multiW(opSetData("/s", "other", -1), opCheck("/nope", -1)))
			require.Equal(t, jute.ErrNoNode, r.Multi[1].Err)
			same(t, tree, "/s")

			var snap bytes.Buffer
			require.NoError(t, tree.WriteSnapshot(&snap))
			for _, read := range []func() (*Tree, error){
				func() (*Tree, error) { return ReadSnapshot(bytes.NewReader(snap.Bytes()), Options{}) },
				func() (*Tree, error) { return ReadSnapshotBytes(bytes.Clone(snap.Bytes()), Options{}) },
			} {
				got, err := read()
				require.NoError(t, err)
				same(t, got, "/c")
				same(t, got, "/s")
				require.Equal(t, tree.Digest(), got.Digest())
			}
		})
	}
}

// A tree read from a snapshot's bytes keeps no reference to them: the
// caller may reuse the buffer (the restore path reads the tree section of
// a raft payload in place) and the tree's data, paths and ACLs stay as
// they were.
func TestReadSnapshotBytesKeepsNoReference(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	r, _ := c.apply(createW(jute.OpCreate, "/b", []byte("value of /b"), open, 0, 0))
	require.Zero(t, r.Err)
	c.mustCreate("/b/c")
	var buf bytes.Buffer
	require.NoError(t, tree.WriteSnapshot(&buf))
	b := buf.Bytes()
	got, err := ReadSnapshotBytes(b, Options{})
	require.NoError(t, err)
	for i := range b {
		b[i] = 0xff
	}
	d, _, ok := got.GetData("/b")
	require.True(t, ok)
	require.Equal(t, "value of /b", string(d))
	require.Equal(t, tree.Digest(), got.Digest())
}
