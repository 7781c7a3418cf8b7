package differential_test

import (
	"slices"
	"testing"

	"github.com/zkraft/zkraft/jute"
)

// TestNormaliser checks the normalisation rules without any server.
func TestNormaliser(t *testing.T) {
	n := newNormaliser()
	n.at(1, 2)
	steps := []struct {
		got, want string
	}{
		{n.zxid(0), "0"},
		{n.zxid(-1), "-1"},
		{n.zxid(0x10), "Z1.2.0(new)"},
		{n.zxid(0x12), "Z1.2.1(new)"},
		{n.zxid(0x11), "Z1.2.2(new<max!)"},
		{n.zxid(0x10), "Z1.2.0"},
		{n.header(0x12), "max"},
		{n.header(0x10), "Z1.2.0"},
		{n.session(0), "0"},
		{n.session(77), "S1"},
		{n.session(99), "S2"},
		{n.session(77), "S1"},
		{n.passwd(nil), "null"},
		{n.passwd(make([]byte, 16)), "zeros(16)"},
		{n.passwd([]byte{1, 2}), "P1(2)"},
		{n.passwd([]byte{1, 2}), "P1(2)"},
		{data(nil), "null"},
		{data([]byte{}), `""`},
		{strs(nil, true), "null"},
		{strs([]string{"b", "a"}, true), "[a b]"},
		{strs([]string{"b", "a"}, false), "[b a]"},
		{n.stat(jute.Stat{Czxid: 0x10, Mzxid: 0x10, Ctime: 5, Mtime: 5, Pzxid: 0x12, EphemeralOwner: 99}),
			"stat{cz=Z1.2.0 mz=Z1.2.0 ct=nz mt==ct v=0 cv=0 av=0 eo=S2 dl=0 nc=0 pz=Z1.2.1}"},
		{n.stat(jute.Stat{Czxid: 0x10, Mzxid: 0x10, Ctime: 5, Mtime: 6}),
			"stat{cz=Z1.2.0 mz=Z1.2.0 ct=nz mt=!=ct-with-mzxid=czxid v=0 cv=0 av=0 eo=0 dl=0 nc=0 pz=0}"},
		{n.stat(jute.Stat{Czxid: 0x10, Mzxid: 0x11, Ctime: 5, Mtime: 5}),
			"stat{cz=Z1.2.0 mz=Z1.2.2 ct=nz mt=>=ct v=0 cv=0 av=0 eo=0 dl=0 nc=0 pz=0}"},
		{n.body(jute.OpDelete, nil, false), ""},
		{n.body(jute.OpAddWatch, []byte{0, 0, 0, 0}, false), "errbody=0"},
		{n.body(jute.OpGetChildren, jute.Marshal(&jute.GetChildrenResponse{Children: []string{"z", "a"}}), false), "children=[a z]"},
		{n.body(jute.OpSync, append(jute.Marshal(&jute.PathRequest{Path: "/"}), 9), false), "path=/ +1 trailing bytes"},
	}
	for i, s := range steps {
		if s.got != s.want {
			t.Errorf("case %d: got %q, want %q", i, s.got, s.want)
		}
	}
}

func TestSortEvents(t *testing.T) {
	obs := []string{"event b", "event a", "reply 1", "event d", "event c"}
	sortEvents(obs)
	if want := []string{"event a", "event b", "reply 1", "event c", "event d"}; !slices.Equal(obs, want) {
		t.Fatalf("sortEvents = %v, want %v", obs, want)
	}
}

func TestExistsNoReadException(t *testing.T) {
	rec := func(lines ...string) record { return record{obs: lines} }
	ap := rec("reply xid=4 zxid=max err=0 stat{cz=Z1.1.0 mz=Z1.1.0 ct=nz mt==ct v=0 cv=0 av=0 eo=0 dl=1 nc=0 pz=Z1.1.0}")
	tests := []struct {
		name string
		exc  string
		zk   record
		want bool
	}{
		{"noauth", excExistsNoRead, rec("reply xid=4 zxid=max err=-102"), true},
		{"not marked", "", rec("reply xid=4 zxid=max err=-102"), false},
		{"other error", excExistsNoRead, rec("reply xid=4 zxid=max err=-101"), false},
		{"other xid", excExistsNoRead, rec("reply xid=5 zxid=max err=-102"), false},
		{"other zxid", excExistsNoRead, rec("reply xid=4 zxid=Z1.1.0 err=-102"), false},
		{"extra event", excExistsNoRead, rec("event zxid=-1 type=NodeCreated state=3 path=/x", "reply xid=4 zxid=max err=-102"), false},
		{"lone check is never matched", excLoneCheck, rec("reply xid=4 zxid=max err=-102"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := exceptionCounts{}
			if got := c.allowed(&step{exc: tt.exc}, tt.zk, ap); got != tt.want {
				t.Fatalf("allowed = %v, want %v", got, tt.want)
			}
		})
	}
}
