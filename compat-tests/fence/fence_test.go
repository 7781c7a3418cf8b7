package fence

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/fence"
	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/zktest"
)

const lockDir = "/locks/resource"

// holderNode returns the lock node of session in lockDir, its token (czxid)
// and version.
func holderNode(t *testing.T, c *zk.Conn, session int64) (string, int64, int32) {
	t.Helper()
	kids, _, err := c.Children(lockDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		_, st, err := c.Exists(lockDir + "/" + k)
		if err == nil && st != nil && st.EphemeralOwner == session {
			return lockDir + "/" + k, st.Czxid, st.Version
		}
	}
	t.Fatalf("no lock node of session 0x%x in %v", session, kids)
	return "", 0, 0
}

// TestPausedHolderIsFenced: see the package documentation.
func TestPausedHolderIsFenced(t *testing.T) {
	srv := zktest.Start(t, zktest.Zkraft, zktest.Options{TickMs: 200})
	proxy, err := faultproxy.Listen(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	acl := zk.WorldACL(zk.PermAll)
	observer, _ := srv.Connect(t)
	if _, err := observer.Create("/data", []byte("initial"), 0, acl); err != nil {
		t.Fatal(err)
	}

	guard, err := fence.OpenFileGuard(filepath.Join(t.TempDir(), "guard"))
	if err != nil {
		t.Fatal(err)
	}
	resource := filepath.Join(t.TempDir(), "resource.txt")
	write := func(token int64, value string) error {
		return guard.Do(resource, token, func() error { return os.WriteFile(resource, []byte(value), 0o644) })
	}

	// A holds the lock, through the proxy, with a short session.
	a, _ := zktest.ConnectHosts(t, []string{proxy.Addr()}, time.Second)
	if err := zk.NewLock(a, lockDir, acl).Lock(); err != nil {
		t.Fatal(err)
	}
	aNode, aToken, aVersion := holderNode(t, observer, a.SessionID())
	if err := write(aToken, "A1"); err != nil {
		t.Fatalf("A's write while holding: %v", err)
	}
	// The same resource scheme with the token record in a znode: A's guard
	// runs on A's own connection.
	if _, err := observer.Create("/data2", []byte("initial"), 0, acl); err != nil {
		t.Fatal(err)
	}
	set2 := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: "/data2", Data: []byte(v), Version: -1}
	}
	aGuard := fence.ZNodeGuard{Conn: a, Node: "/data2-token", ACL: acl}
	if _, err := aGuard.Do(aToken, set2("A1")); err != nil {
		t.Fatalf("A's znode-guarded write while holding: %v", err)
	}

	// A stalls: nothing of its connection moves, so its session expires and
	// its lock node goes.
	proxy.Block(faultproxy.Up, true)
	proxy.Block(faultproxy.Down, true)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, _, err := observer.Exists(aNode)
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's lock node %s still exists after 20 s", aNode)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// B acquires with a larger token and writes.
	b, _ := srv.Connect(t)
	lb := zk.NewLock(b, lockDir, acl)
	if err := lb.Lock(); err != nil {
		t.Fatal(err)
	}
	bNode, bToken, bVersion := holderNode(t, observer, b.SessionID())
	if bToken <= aToken {
		t.Fatalf("B's token %d is not above A's %d", bToken, aToken)
	}
	if err := write(bToken, "B"); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	t.Logf("A: node %s token %d; B: node %s token %d", aNode, aToken, bNode, bToken)
	bGuard := fence.ZNodeGuard{Conn: b, Node: "/data2-token", ACL: acl}
	if _, err := bGuard.Do(bToken, set2("B")); err != nil {
		t.Fatalf("B's znode-guarded write: %v", err)
	}

	// A resumes and writes late, still believing it holds the lock.
	proxy.Block(faultproxy.Up, false)
	proxy.Block(faultproxy.Down, false)
	err = write(aToken, "A2 (late)")
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("A's late write: got %v, want a stale-token refusal", err)
	}
	t.Logf("A's late write refused: %v", err)
	if got, _ := os.ReadFile(resource); string(got) != "B" {
		t.Fatalf("resource holds %q, want B's write", got)
	}
	if h, err := guard.Highest(resource); err != nil || h != bToken {
		t.Fatalf("guard's highest = %d, %v; want B's token %d", h, err, bToken)
	}

	// The znode guard refuses A's late write too (A on a new session: its
	// old one expired), and /data2 keeps B's value.
	a2, _ := srv.Connect(t)
	_, err = fence.ZNodeGuard{Conn: a2, Node: "/data2-token", ACL: acl}.Do(aToken, set2("A2 (late)"))
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("A's late znode-guarded write: got %v, want a stale-token refusal", err)
	}
	if got, _, err := observer.Get("/data2"); err != nil || string(got) != "B" {
		t.Fatalf("/data2 = %q, %v; want B's write", got, err)
	}

	// The zkraft-native form: a multi that checks the writer's lock node at
	// its version with the write. A still names its old lock node: refused,
	// nothing written.
	res, err := a2.Multi(fence.CheckedWrite(aNode, aVersion, &zk.SetDataRequest{Path: "/data", Data: []byte("A late"), Version: -1})...)
	if err == nil && (len(res) == 0 || res[0].Error == nil) {
		t.Fatalf("A's fenced multi succeeded: %v", res)
	}
	if len(res) > 0 && !errors.Is(res[0].Error, zk.ErrNoNode) {
		t.Fatalf("A's fenced multi: check op error %v, want %v", res[0].Error, zk.ErrNoNode)
	}
	t.Logf("A's fenced multi refused: err=%v ops=%+v", err, res)
	if got, _, err := observer.Get("/data"); err != nil || string(got) != "initial" {
		t.Fatalf("/data = %q, %v after A's refused multi; want it unchanged", got, err)
	}
	// B's multi with its own lock node goes through.
	if _, err := b.Multi(fence.CheckedWrite(bNode, bVersion, &zk.SetDataRequest{Path: "/data", Data: []byte("B"), Version: -1})...); err != nil {
		t.Fatalf("B's fenced multi: %v", err)
	}
	if got, _, err := observer.Get("/data"); err != nil || string(got) != "B" {
		t.Fatalf("/data = %q, %v after B's multi; want B", got, err)
	}
	// A check at the wrong version fails too (someone rewrote the lock node).
	if _, err := b.Multi(fence.CheckedWrite(bNode, bVersion+1, &zk.SetDataRequest{Path: "/data", Data: []byte("x"), Version: -1})...); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("multi with a wrong lock node version: %v, want %v", err, zk.ErrBadVersion)
	}
	if err := lb.Unlock(); err != nil {
		t.Fatal(err)
	}
}
