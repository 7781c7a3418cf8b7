package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

func TestDigestID(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"super:test", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="},
		{"bob:secret", "bob:fyVmFCwVbTJYrznoSu1koqYEYF0="},
		{"bob:", "bob:tK1fpNO1hB0F++FhHpSq0Fa4tv0="},
	} {
		require.Equal(t, tt.want, DigestID(tt.in), "DigestID(%q)", tt.in)
	}
}

func acl(perms int32, scheme, id string) jute.ACL {
	return jute.ACL{Perms: perms, ID: jute.Id{Scheme: scheme, ID: id}}
}

func TestCheckACL(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	for _, tt := range []struct {
		name string
		acl  []jute.ACL
		perm int32
		ids  []jute.Id
		want bool
	}{
		{"empty acl allows all", nil, jute.PermAdmin, nil, true},
		{"world anyone", []jute.ACL{acl(jute.PermRead, "world", "anyone")}, jute.PermRead, nil, true},
		{"world anyone wrong perm", []jute.ACL{acl(jute.PermRead, "world", "anyone")}, jute.PermWrite, local, false},
		{"world other id", []jute.ACL{acl(jute.PermAll, "world", "bob")}, jute.PermRead, local, false},
		{"super passes all", []jute.ACL{acl(jute.PermRead, "world", "anyone")}, jute.PermWrite, []jute.Id{{Scheme: "super", ID: ""}}, true},
		{"digest exact", []jute.ACL{acl(jute.PermAll, "digest", bob.ID)}, jute.PermWrite, []jute.Id{local[0], bob}, true},
		{"digest other", []jute.ACL{acl(jute.PermAll, "digest", bob.ID)}, jute.PermWrite, []jute.Id{{Scheme: "digest", ID: DigestID("bob:x")}}, false},
		{"digest no perm", []jute.ACL{acl(jute.PermRead, "digest", bob.ID)}, jute.PermWrite, []jute.Id{bob}, false},
		{"ip exact", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.1")}, jute.PermRead, local, true},
		{"ip other", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.2")}, jute.PermRead, local, false},
		{"ip /8", []jute.ACL{acl(jute.PermAll, "ip", "127.9.9.9/8")}, jute.PermRead, local, true},
		{"ip /32 other", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.2/32")}, jute.PermRead, local, false},
		{"ip /31", []jute.ACL{acl(jute.PermAll, "ip", "10.0.0.4/31")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "10.0.0.5"}}, true},
		{"ip /30 out", []jute.ACL{acl(jute.PermAll, "ip", "10.0.0.4/30")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "10.0.0.8"}}, false},
		{"ip /0", []jute.ACL{acl(jute.PermAll, "ip", "0.0.0.0/0")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "8.8.8.8"}}, true},
		{"ip v6 exact", []jute.ACL{acl(jute.PermAll, "ip", "::1")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "0:0:0:0:0:0:0:1"}}, true},
		{"ip v6 /64", []jute.ACL{acl(jute.PermAll, "ip", "2001:db8::/64")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "2001:db8::42"}}, true},
		{"ip v6 /64 out", []jute.ACL{acl(jute.PermAll, "ip", "2001:db8::/64")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "2001:db8:0:1::42"}}, false},
		{"ip v4 vs v6", []jute.ACL{acl(jute.PermAll, "ip", "::1")}, jute.PermRead, local, false},
		{"ip bad expr", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.1/33")}, jute.PermRead, local, false},
		{"ip id not an ip", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.1")}, jute.PermRead, []jute.Id{{Scheme: "ip", ID: "localhost"}}, false},
		{"scheme must match", []jute.ACL{acl(jute.PermAll, "digest", "127.0.0.1")}, jute.PermRead, local, false},
		{"no ids", []jute.ACL{acl(jute.PermAll, "ip", "127.0.0.1")}, jute.PermRead, nil, false},
		{"any entry may grant", []jute.ACL{acl(jute.PermRead, "ip", "10.0.0.1"), acl(jute.PermRead, "ip", "127.0.0.1")}, jute.PermRead, local, true},
	} {
		require.Equal(t, tt.want, CheckACL(tt.acl, tt.perm, tt.ids), tt.name)
	}
}

func TestFixupACL(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	tree := mustNewTree(t)
	for _, tt := range []struct {
		name string
		acl  []jute.ACL
		auth []jute.Id
		want []jute.ACL // nil: invalid
	}{
		{"nil", nil, local, nil},
		{"empty", []jute.ACL{}, local, nil},
		{"open", open, local, open},
		{"world other", []jute.ACL{acl(31, "world", "x")}, local, nil},
		{"auth without digest", []jute.ACL{acl(31, "auth", "")}, local, nil},
		{"auth expands", []jute.ACL{acl(5, "auth", "ignored")}, []jute.Id{local[0], bob}, []jute.ACL{{Perms: 5, ID: bob}}},
		{"auth super does not count", []jute.ACL{acl(5, "auth", "")}, []jute.Id{{Scheme: "super", ID: ""}}, nil},
		{"digest ok", []jute.ACL{acl(1, "digest", "bob:abc")}, nil, []jute.ACL{acl(1, "digest", "bob:abc")}},
		{"digest no colon", []jute.ACL{acl(1, "digest", "bob")}, nil, nil},
		{"digest two colons", []jute.ACL{acl(1, "digest", "a:b:c")}, nil, nil},
		{"digest trailing colon (Java split)", []jute.ACL{acl(1, "digest", "a:b:")}, nil, []jute.ACL{acl(1, "digest", "a:b:")}},
		{"digest empty hash", []jute.ACL{acl(1, "digest", "bob:")}, nil, nil},
		{"ip ok", []jute.ACL{acl(1, "ip", "10.0.0.0/8")}, nil, []jute.ACL{acl(1, "ip", "10.0.0.0/8")}},
		{"ip v6 refused, as ZooKeeper 3.8.0 does", []jute.ACL{acl(1, "ip", "fe80::/10")}, nil, nil},
		{"ip bad", []jute.ACL{acl(1, "ip", "10.0.0.256")}, nil, nil},
		{"ip bad bits", []jute.ACL{acl(1, "ip", "10.0.0.1/x")}, nil, nil},
		{"ip v6 bits too big", []jute.ACL{acl(1, "ip", "::1/129")}, nil, nil},
		{"unknown scheme", []jute.ACL{acl(1, "sasl", "bob")}, nil, nil},
		{"made-up scheme", []jute.ACL{acl(1, "kerberos", "bob")}, nil, nil},
		{"super scheme", []jute.ACL{acl(1, "super", "")}, nil, nil},
		{"duplicates removed", []jute.ACL{acl(1, "ip", "1.2.3.4"), acl(1, "ip", "1.2.3.4"), acl(2, "ip", "1.2.3.4")}, nil,
			[]jute.ACL{acl(1, "ip", "1.2.3.4"), acl(2, "ip", "1.2.3.4")}},
	} {
		got, ok := fixupACL(tt.acl, tt.auth, tree.open.entries, Options{})
		if tt.want == nil {
			require.False(t, ok, tt.name)
			continue
		}
		require.True(t, ok, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

func TestAuthACLStoredExpanded(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	c.auth = []jute.Id{local[0], bob}
	r, _ := c.apply(createW(jute.OpCreate, "/b", nil, []jute.ACL{acl(jute.PermAll, "auth", "")}, 0, 0))
	require.Zero(t, r.Err)
	got, _, ok := tree.GetACL("/b")
	require.True(t, ok)
	require.Equal(t, []jute.ACL{{Perms: jute.PermAll, ID: bob}}, got)

	// Another caller is refused; bob and super pass.
	c.auth = local
	require.Equal(t, jute.ErrNoAuth, c.setData("/b", nil, -1).Err)
	c.auth = []jute.Id{bob}
	require.Zero(t, c.setData("/b", nil, -1).Err)
	c.auth = []jute.Id{local[0], {Scheme: "super", ID: ""}}
	require.Zero(t, c.setData("/b", nil, -1).Err)

	exists, allowed := tree.CheckPermission("/b", jute.PermRead, local)
	require.True(t, exists)
	require.False(t, allowed)
	exists, allowed = tree.CheckPermission("/b", jute.PermRead, []jute.Id{bob})
	require.True(t, exists)
	require.True(t, allowed)
	exists, _ = tree.CheckPermission("/nope", jute.PermRead, []jute.Id{bob})
	require.False(t, exists)
}

func TestFixupACLX509(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	tree := mustNewTree(t)
	for _, tt := range []struct {
		name string
		acl  []jute.ACL
		auth []jute.Id
		want []jute.ACL // nil: invalid
		x509 bool       // authProvider.x509 configured
	}{
		{"x509 without the provider", []jute.ACL{acl(1, "x509", "CN=a,O=b")}, nil, nil, false},
		{"x509 ok", []jute.ACL{acl(1, "x509", "CN=a,O=b")}, nil, []jute.ACL{acl(1, "x509", "CN=a,O=b")}, true},
		{"x509 not a DN", []jute.ACL{acl(1, "x509", "just text")}, nil, nil, true},
		{"auth expands x509 and digest", []jute.ACL{acl(3, "auth", "")},
			[]jute.Id{local[0], {Scheme: "x509", ID: "CN=a"}, bob},
			[]jute.ACL{{Perms: 3, ID: jute.Id{Scheme: "x509", ID: "CN=a"}}, {Perms: 3, ID: bob}}, true},
		{"auth ignores x509 without the provider", []jute.ACL{acl(3, "auth", "")},
			[]jute.Id{{Scheme: "x509", ID: "CN=a"}}, nil, false},
	} {
		got, ok := fixupACL(tt.acl, tt.auth, tree.open.entries, Options{X509Enabled: tt.x509})
		if tt.want == nil {
			require.False(t, ok, tt.name)
			continue
		}
		require.True(t, ok, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
	x := []jute.Id{{Scheme: "x509", ID: "CN=a,O=b"}}
	require.True(t, CheckACL([]jute.ACL{acl(1, "x509", "CN=a,O=b")}, jute.PermRead, x))
	require.False(t, CheckACL([]jute.ACL{acl(1, "x509", "CN=a,O=c")}, jute.PermRead, x))
}

func TestFixupACLSASL(t *testing.T) {
	bob := jute.Id{Scheme: "digest", ID: DigestID("bob:secret")}
	alice := jute.Id{Scheme: "sasl", ID: "alice"}
	tree := mustNewTree(t)
	for _, tt := range []struct {
		name string
		acl  []jute.ACL
		auth []jute.Id
		want []jute.ACL // nil: invalid
		sasl bool       // authProvider.sasl configured
	}{
		{"sasl without the provider", []jute.ACL{acl(1, "sasl", "alice")}, nil, nil, false},
		{"sasl ok", []jute.ACL{acl(31, "sasl", "alice")}, nil, []jute.ACL{acl(31, "sasl", "alice")}, true},
		{"kerberos principal", []jute.ACL{acl(1, "sasl", "zk/host.example@EXAMPLE.COM")}, nil,
			[]jute.ACL{acl(1, "sasl", "zk/host.example@EXAMPLE.COM")}, true},
		{"slash without realm", []jute.ACL{acl(1, "sasl", "a/b/c")}, nil, []jute.ACL{acl(1, "sasl", "a/b/c")}, true},
		{"two realms", []jute.ACL{acl(1, "sasl", "a@B@C")}, nil, nil, true},
		{"two hosts", []jute.ACL{acl(1, "sasl", "a/b/c@R")}, nil, nil, true},
		{"slash in realm", []jute.ACL{acl(1, "sasl", "a@R/x")}, nil, nil, true},
		{"auth expands sasl and digest", []jute.ACL{acl(3, "auth", "")},
			[]jute.Id{local[0], alice, bob},
			[]jute.ACL{{Perms: 3, ID: alice}, {Perms: 3, ID: bob}}, true},
		{"auth ignores sasl without the provider", []jute.ACL{acl(3, "auth", "")}, []jute.Id{alice}, nil, false},
	} {
		got, ok := fixupACL(tt.acl, tt.auth, tree.open.entries, Options{SASLEnabled: tt.sasl})
		if tt.want == nil {
			require.False(t, ok, tt.name)
			continue
		}
		require.True(t, ok, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{{"alice", true}, {"bob", false}, {"super", true}, {"Alice", false}} {
		require.Equal(t, tt.want, CheckACL([]jute.ACL{acl(1, "sasl", "alice")}, jute.PermRead,
			[]jute.Id{{Scheme: "sasl", ID: tt.id}}), tt.id)
	}
	// A digest id named like the sasl user does not match.
	require.False(t, CheckACL([]jute.ACL{acl(1, "sasl", "alice")}, jute.PermRead, []jute.Id{{Scheme: "digest", ID: "alice"}}))
}
