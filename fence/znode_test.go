package fence

import (
	"errors"
	"strconv"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// fakeZK is a map of znodes with go-zookeeper's multi semantics for the
// operations ZNodeGuard uses: all or nothing, BadVersion/NoNode per op.
type fakeZK struct {
	data    map[string][]byte
	version map[string]int32
	acl     map[string][]zk.ACL
	// beforeMulti runs once before the next Multi (a concurrent writer).
	beforeMulti func(f *fakeZK)
}

func newFakeZK() *fakeZK {
	return &fakeZK{data: map[string][]byte{}, version: map[string]int32{}, acl: map[string][]zk.ACL{}}
}

func (f *fakeZK) Get(path string) ([]byte, *zk.Stat, error) {
	d, ok := f.data[path]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	return d, &zk.Stat{Version: f.version[path]}, nil
}

func (f *fakeZK) Create(path string, data []byte, _ int32, acl []zk.ACL) (string, error) {
	if len(acl) == 0 {
		return "", zk.ErrInvalidACL // as ZooKeeper and zkraft answer
	}
	if _, ok := f.data[path]; ok {
		return "", zk.ErrNodeExists
	}
	f.data[path], f.version[path], f.acl[path] = data, 0, acl
	return path, nil
}

func (f *fakeZK) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if h := f.beforeMulti; h != nil {
		f.beforeMulti = nil
		h(f)
	}
	res := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		var path string
		var version int32
		switch o := op.(type) {
		case *zk.SetDataRequest:
			path, version = o.Path, o.Version
		case *zk.CheckVersionRequest:
			path, version = o.Path, o.Version
		default:
			panic("unexpected op")
		}
		var err error
		if _, ok := f.data[path]; !ok {
			err = zk.ErrNoNode
		} else if version != -1 && version != f.version[path] {
			err = zk.ErrBadVersion
		}
		if err != nil {
			res[i].Error = err
			return res, err
		}
	}
	for _, op := range ops {
		if o, ok := op.(*zk.SetDataRequest); ok {
			f.data[o.Path] = o.Data
			f.version[o.Path]++
		}
	}
	return res, nil
}

func TestZNodeGuard(t *testing.T) {
	type step struct {
		token int64
		ok    bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first token creates the guard node", []step{{5, true}}},
		{"equal and higher accepted", []step{{5, true}, {5, true}, {9, true}}},
		{"lower refused", []step{{9, true}, {5, false}, {8, false}, {9, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeZK()
			f.data["/res"] = []byte("v0")
			g := ZNodeGuard{Conn: f, Node: "/guard", ACL: zk.WorldACL(zk.PermAll)}
			var highest int64
			for i, s := range tc.steps {
				value := []byte{byte('a' + i)}
				before := string(f.data["/res"])
				_, err := g.Do(s.token, &zk.SetDataRequest{Path: "/res", Data: value, Version: -1})
				if s.ok {
					require.NoError(t, err, "step %d", i)
					require.Equal(t, string(value), string(f.data["/res"]))
					highest = max(highest, s.token)
				} else {
					var stale *StaleTokenError
					require.True(t, errors.As(err, &stale), "step %d: %v", i, err)
					require.Equal(t, StaleTokenError{Resource: "/guard", Token: s.token, Highest: highest}, *stale)
					require.Equal(t, before, string(f.data["/res"]), "step %d: refused write applied", i)
				}
				require.Equal(t, []byte(strconv.FormatInt(highest, 10)), f.data["/guard"])
			}
		})
	}
}

// TestZNodeGuardRace: a higher token recorded between Do's read and its
// multi makes the multi fail on the version; Do reads again and refuses.
func TestZNodeGuardRace(t *testing.T) {
	f := newFakeZK()
	f.data["/res"] = []byte("v0")
	g := ZNodeGuard{Conn: f, Node: "/guard"}
	_, err := g.Do(5)
	require.NoError(t, err)
	f.beforeMulti = func(f *fakeZK) {
		f.data["/guard"] = []byte("20")
		f.data["/res"] = []byte("B")
		f.version["/guard"]++
	}
	_, err = g.Do(10, &zk.SetDataRequest{Path: "/res", Data: []byte("late"), Version: -1})
	require.ErrorIs(t, err, ErrStaleToken)
	require.Equal(t, "B", string(f.data["/res"]))

	// A failing operation of the caller comes back with its response.
	res, err := g.Do(20, &zk.CheckVersionRequest{Path: "/nosuch", Version: 0})
	require.ErrorIs(t, err, zk.ErrNoNode)
	require.Len(t, res, 1)
	require.ErrorIs(t, res[0].Error, zk.ErrNoNode)

	f.data["/guard"] = []byte("junk")
	_, err = g.Do(30)
	require.ErrorContains(t, err, "not a token")
	_, err = g.Do(0)
	require.Error(t, err)
}

// TestZNodeGuardACL: without an ACL the guard node is created world:anyone
// with every permission (the server refuses a create without ACL); a given
// ACL is used as it is.
func TestZNodeGuardACL(t *testing.T) {
	digest := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "app:x"}}
	tests := []struct {
		name string
		acl  []zk.ACL
		want []zk.ACL
	}{
		{"nil defaults to world:anyone all", nil, zk.WorldACL(zk.PermAll)},
		{"empty defaults to world:anyone all", []zk.ACL{}, zk.WorldACL(zk.PermAll)},
		{"given ACL kept", digest, digest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeZK()
			_, err := ZNodeGuard{Conn: f, Node: "/guard", ACL: tc.acl}.Do(7)
			require.NoError(t, err)
			require.Equal(t, tc.want, f.acl["/guard"])
			require.Equal(t, "7", string(f.data["/guard"]))
		})
	}
}
