package znode

import (
	"strings"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

func TestBuild(t *testing.T) {
	open := []jute.ACL{openEntry}
	root := BuiltNode{Path: "/", Data: []byte{}, ACL: open, Creates: 2, Pzxid: 7}
	for _, tc := range []struct {
		name    string
		nodes   []BuiltNode
		wantErr string
		check   func(t *testing.T, tr *Tree)
	}{
		{"tree with every kind", []BuiltNode{
			root,
			{Path: "/a", Data: []byte("d"), ACL: open, Czxid: 5, Mzxid: 9, Pzxid: 11, Version: 3, Aversion: 1, Creates: 4},
			{Path: "/a/box", ACL: open, Container: true, Czxid: 6, Mzxid: 6, Pzxid: 6},
			{Path: "/ttl", ACL: open, TTL: 1000, Czxid: 7, Mzxid: 7, Pzxid: 7},
		}, "", func(t *testing.T, tr *Tree) {
			_, st, ok := tr.GetData("/a")
			if !ok || st.Cversion != 2*4-1 || st.Pzxid != 11 || st.Version != 3 || st.Aversion != 1 || st.Mzxid != 9 {
				t.Errorf("/a stat %+v, found %v", st, ok)
			}
		}},
		{"child before its parent", []BuiltNode{root, {Path: "/a/b", ACL: open}}, "before its parent", nil},
		{"no root", []BuiltNode{{Path: "/a", ACL: open}}, "not the root", nil},
		{"container with a TTL", []BuiltNode{root, {Path: "/a", ACL: open, Container: true, TTL: 5}}, "both a container and a TTL", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Build(Options{}, tc.nodes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, tr)
		})
	}
}
