package fence

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// ZKConn is what ZNodeGuard needs of a ZooKeeper client; go-zookeeper's
// *zk.Conn has it.
type ZKConn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

// ZNodeGuard keeps the highest accepted token of a resource in a znode
// (its data: the token in decimal) and admits a write with a versioned
// multi: setData(guard node, token, the version read) together with the
// caller's operations. A concurrent writer that got in first changes the
// version, so the multi fails and Do reads again: the check and the write
// are atomic on the server, for any number of processes and hosts. Use it
// for a resource kept in zkraft that writers reach without holding the lock
// node themselves (for example a service that writes on behalf of lock
// holders and receives their tokens); a lock holder writing its own
// resource can use CheckedWrite instead.
type ZNodeGuard struct {
	Conn ZKConn
	// Node is the guard znode; Do creates it (persistent, with ACL) if
	// it is missing. Its parent must exist.
	Node string
	// ACL is the guard node's ACL when Do creates it; nil means
	// world:anyone with every permission (zk.WorldACL(zk.PermAll)), as the
	// server refuses a create without ACL (InvalidACL). Whoever can write
	// the guard node can raise the recorded token and so lock out holders:
	// restrict it where other clients are not trusted.
	ACL []zk.ACL
}

// acl is the ACL Do creates the guard node with.
func (g ZNodeGuard) acl() []zk.ACL {
	if len(g.ACL) == 0 {
		return zk.WorldACL(zk.PermAll)
	}
	return g.ACL
}

// maxGuardRetries bounds Do's retries when other writers keep changing the
// guard node.
const maxGuardRetries = 16

// Do applies ops (go-zookeeper multi operations; none is allowed) in one
// multi with the guard's update if token is at least the recorded token,
// and returns the responses of ops. A lower token gives a *StaleTokenError
// and applies nothing.
func (g ZNodeGuard) Do(token int64, ops ...any) ([]zk.MultiResponse, error) {
	if token < 1 {
		return nil, fmt.Errorf("fence: token %d for %q: must be a positive zxid", token, g.Node)
	}
	for range maxGuardRetries {
		data, st, err := g.Conn.Get(g.Node)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = g.Conn.Create(g.Node, []byte("0"), 0, g.acl())
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return nil, fmt.Errorf("fence: create guard node %s: %w", g.Node, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fence: read guard node %s: %w", g.Node, err)
		}
		highest, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil || highest < 0 {
			return nil, fmt.Errorf("fence: guard node %s holds %q, not a token", g.Node, data)
		}
		if token < highest {
			return nil, &StaleTokenError{Resource: g.Node, Token: token, Highest: highest}
		}
		all := append([]any{&zk.SetDataRequest{Path: g.Node, Data: []byte(strconv.FormatInt(token, 10)), Version: st.Version}}, ops...)
		res, err := g.Conn.Multi(all...)
		if err == nil {
			return res[1:], nil
		}
		if len(res) > 0 && errors.Is(res[0].Error, zk.ErrBadVersion) {
			continue // another writer got in between: read again
		}
		if len(res) > 1 {
			return res[1:], err
		}
		return nil, fmt.Errorf("fence: guarded multi on %s: %w", g.Node, err)
	}
	return nil, fmt.Errorf("fence: guard node %s kept changing (%d attempts)", g.Node, maxGuardRetries)
}
