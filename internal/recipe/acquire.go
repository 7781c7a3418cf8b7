package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Node is a contender node that holds its lock (or latch).
type Node struct {
	Path      string // full path
	Name      string // last component
	Czxid     int64  // the fencing token: it grows with every new holder
	SessionID int64  // the session that owns it
}

// retryPause is the pause before retrying a request that failed on a
// dropped connection (go-zookeeper itself pauses 1 s after trying every
// server).
const retryPause = 100 * time.Millisecond

// errGone means our contender node is gone (session expired, or deleted):
// the acquisition starts over with a new node.
var errGone = errors.New("contender node gone")

// Acquire creates a contender node of layout l under dir (with data) and
// waits until it is first in the queue. If the node is lost while waiting
// (its session expired, or someone deleted it) it starts over with a new
// one, as Curator does. It returns ctx's error when ctx ends; the caller
// then closes the connection, which removes the node with the session.
func Acquire(ctx context.Context, conn *zk.Conn, l Layout, dir string, data []byte) (*Node, error) {
	dir = strings.TrimSuffix(dir, "/")
	for {
		name, err := create(ctx, conn, l, dir, data)
		if err != nil {
			return nil, err
		}
		n, err := wait(ctx, conn, l, dir, name)
		if errors.Is(err, errGone) {
			continue
		}
		return n, err
	}
}

// pause sleeps retryPause unless ctx ends first.
func pause(ctx context.Context) error {
	t := time.NewTimer(retryPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// create makes the ephemeral-sequential contender node and returns its
// name, recovering a create whose reply was lost (protected mode).
func create(ctx context.Context, conn *zk.Conn, l Layout, dir string, data []byte) (string, error) {
	prefix, err := l.NewPrefix()
	if err != nil {
		return "", err
	}
	mayExist := false // a create with this prefix may have been applied
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if mayExist {
			children, _, err := conn.Children(dir)
			switch {
			case err == nil:
				if name, ok := FindByPrefix(children, prefix); ok {
					return name, nil
				}
			case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
				// Nothing of ours can be there.
			case IsConnectionError(err):
				if err := pause(ctx); err != nil {
					return "", err
				}
				continue
			default:
				return "", fmt.Errorf("list %s: %w", dir, err)
			}
			mayExist = false
		}
		created, err := conn.Create(dir+"/"+prefix, data, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil:
			return path.Base(created), nil
		case errors.Is(err, zk.ErrNoNode):
			if err := ensureParents(conn, l, dir); err != nil {
				return "", err
			}
		case errors.Is(err, zk.ErrSessionExpired):
			// The node, if made, went with the session.
		case IsConnectionError(err):
			mayExist = true
			if err := pause(ctx); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("create %s/%s: %w", dir, prefix, err)
		}
	}
}

// ensureParents creates dir and its missing ancestors: containers for
// Curator's layouts (creatingParentContainersIfNeeded), persistent nodes
// for kazoo's (ensure_path).
func ensureParents(conn *zk.Conn, l Layout, dir string) error {
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		var err error
		if l == Kazoo {
			_, err = conn.Create(p, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
		} else {
			_, err = conn.CreateContainer(p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			if IsConnectionError(err) {
				return nil // the create is retried, and this with it
			}
			return fmt.Errorf("create parent %s: %w", p, err)
		}
	}
	return nil
}

// wait waits until name is the first contender of dir.
func wait(ctx context.Context, conn *zk.Conn, l Layout, dir, name string) (*Node, error) {
	own := dir + "/" + name
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		children, _, err := conn.Children(dir)
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
			return nil, errGone
		case IsConnectionError(err):
			if err := pause(ctx); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
		pred, found := l.Predecessor(children, name)
		if !found {
			return nil, errGone
		}
		if pred == "" {
			ok, st, err := conn.Exists(own)
			switch {
			case err == nil && ok && st.EphemeralOwner == conn.SessionID():
				return &Node{Path: own, Name: name, Czxid: st.Czxid, SessionID: st.EphemeralOwner}, nil
			case err == nil || errors.Is(err, zk.ErrSessionExpired):
				return nil, errGone
			case IsConnectionError(err):
				if err := pause(ctx); err != nil {
					return nil, err
				}
				continue
			default:
				return nil, fmt.Errorf("stat %s: %w", own, err)
			}
		}
		// Wait for the node just ahead to go, with a data watch as both
		// recipes set it; then look at the whole queue again.
		_, _, ev, err := conn.GetW(dir + "/" + pred)
		switch {
		case err == nil:
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-ev:
			}
		case errors.Is(err, zk.ErrNoNode):
		case IsConnectionError(err), errors.Is(err, zk.ErrSessionExpired):
			if err := pause(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("watch %s/%s: %w", dir, pred, err)
		}
	}
}

// WatchNode reports on the returned channel (once, then closes it) why
// the node at p stopped being held: it was deleted, its session ended, or
// it is not owned by conn's current session (after an expiry go-zookeeper
// opens a new session, and with lock-delay the dead session's node stays).
// It stops, without a report, once stop is closed and the request in flight
// (if any) has returned: close the connection too, to end a request that
// waits for a dropped connection to come back.
func WatchNode(conn *zk.Conn, p string, stop <-chan struct{}) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		for {
			ok, st, ev, err := conn.ExistsW(p)
			switch {
			case err == nil && !ok:
				out <- fmt.Errorf("lock node %s was deleted", p)
				return
			case err == nil && st.EphemeralOwner != conn.SessionID():
				out <- fmt.Errorf("lock node %s is owned by session %#x, not this one (%#x): the session expired", p, st.EphemeralOwner, conn.SessionID())
				return
			case err == nil:
			case errors.Is(err, zk.ErrSessionExpired):
				out <- errors.New("session expired")
				return
			case errors.Is(err, zk.ErrClosing):
				return
			default:
				// A dropped connection: the session's own state changes
				// tell when it is lost; look again once it is back.
				select {
				case <-stop:
					return
				case <-time.After(retryPause):
				}
				continue
			}
			select {
			case <-stop:
				return
			case e := <-ev:
				if e.Type == zk.EventNodeDeleted {
					out <- fmt.Errorf("lock node %s was deleted", p)
					return
				}
				if e.Type == zk.EventNotWatching && errors.Is(e.Err, zk.ErrSessionExpired) {
					out <- errors.New("session expired")
					return
				}
			}
		}
	}()
	return out
}

// Owns reports whether n is held by conn's current, established session:
// false once that session expired (go-zookeeper then opens a new one, with
// another id), even if the node itself is still there (lock-delay).
func Owns(conn *zk.Conn, n *Node) bool {
	return conn.State() == zk.StateHasSession && conn.SessionID() == n.SessionID
}

// Leader returns the id (the data) of the first latch contender of dir, ""
// if there is none, and a channel that fires when the children of dir (or
// dir itself, if it does not exist) change.
func Leader(conn *zk.Conn, dir string) (string, <-chan zk.Event, error) {
	dir = strings.TrimSuffix(dir, "/")
	for {
		children, _, ev, err := conn.ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			ok, _, ev, err := conn.ExistsW(dir)
			if err != nil {
				return "", nil, fmt.Errorf("watch %s: %w", dir, err)
			}
			if ok {
				continue // created meanwhile
			}
			return "", ev, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("watch %s: %w", dir, err)
		}
		sorted := Latch.Contenders(children)
		if len(sorted) == 0 {
			return "", ev, nil
		}
		data, _, err := conn.Get(dir + "/" + sorted[0])
		if errors.Is(err, zk.ErrNoNode) {
			continue // it went meanwhile
		}
		if err != nil {
			return "", nil, fmt.Errorf("read %s/%s: %w", dir, sorted[0], err)
		}
		return string(data), ev, nil
	}
}
