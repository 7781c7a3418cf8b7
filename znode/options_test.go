package znode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/jute"
)

// TestTxnOptionsOverrideTree: a txn that carries Options is decided by
// them, whatever the tree was built with, so trees built from different
// configurations decide the same txn the same way.
func TestTxnOptionsOverrideTree(t *testing.T) {
	x509ACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "x509", ID: "CN=alice,O=example"}}}
	authACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "auth"}}}
	saslACL := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "sasl", ID: "alice"}}}
	writes := []struct {
		name string
		w    *Write
		auth []jute.Id
		on   int32 // code with the option on
		off  int32 // code with it off
	}{
		{"ttl", &Write{Type: jute.OpCreateTTL, Create: &jute.CreateTTLRequest{Path: "/ttl", ACL: open,
			Flags: jute.FlagPersistentWithTTL, TTL: 1000}}, nil, 0, jute.ErrUnimplemented},
		{"x509 acl", &Write{Type: jute.OpCreate, Create: &jute.CreateTTLRequest{Path: "/x", ACL: x509ACL, Flags: jute.FlagPersistent, TTL: -1}},
			nil, 0, jute.ErrInvalidACL},
		{"auth acl from an x509 identity", &Write{Type: jute.OpCreate, Create: &jute.CreateTTLRequest{Path: "/a", ACL: authACL, Flags: jute.FlagPersistent, TTL: -1}},
			[]jute.Id{{Scheme: "x509", ID: "CN=alice,O=example"}}, 0, jute.ErrInvalidACL},
		{"sasl acl", &Write{Type: jute.OpCreate, Create: &jute.CreateTTLRequest{Path: "/s", ACL: saslACL, Flags: jute.FlagPersistent, TTL: -1}},
			nil, 0, jute.ErrInvalidACL},
		{"auth acl from a sasl identity", &Write{Type: jute.OpCreate, Create: &jute.CreateTTLRequest{Path: "/a", ACL: authACL, Flags: jute.FlagPersistent, TTL: -1}},
			[]jute.Id{{Scheme: "sasl", ID: "alice"}}, 0, jute.ErrInvalidACL},
		{"setACL x509", &Write{Type: jute.OpSetACL, SetACL: &jute.SetACLRequest{Path: "/", ACL: x509ACL, Version: -1}},
			nil, 0, jute.ErrInvalidACL},
	}
	on, off := Options{ExtendedTypesEnabled: true, X509Enabled: true, SASLEnabled: true}, Options{}
	for _, w := range writes {
		for _, tc := range []struct {
			name       string
			tree, txn  Options
			wantCode   int32
			overridden bool
		}{
			{"txn on, tree off", off, on, w.on, true},
			{"txn off, tree on", on, off, w.off, true},
			{"no txn options, tree on", on, Options{}, w.on, false},
			{"no txn options, tree off", off, Options{}, w.off, false},
		} {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				tree := mustNewTree(t, tc.tree)
				ctx := TxnContext{Zxid: 1, Time: 1, SessionID: 1, Auth: w.auth}
				if tc.overridden {
					ctx.Options = &tc.txn
				}
				res, _ := tree.Apply(ctx, w.w)
				require.Equal(t, tc.wantCode, res.Err)
			})
		}
	}
}
