package recipe_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/faultproxy"
	"github.com/zkraft/zkraft/internal/recipe"
	"github.com/zkraft/zkraft/internal/zktest"
)

var serverOptions = zktest.Options{TickMs: 500} // sessions of 1-10 s

// TestAcquireRecoversLostCreateReply: the create of the lock node is
// applied but its reply is lost with the connection. Acquire must find its
// node by the protected prefix instead of creating a second one, which
// would queue behind the first, owned by the same live session, forever.
func TestAcquireRecoversLostCreateReply(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			for _, layout := range []recipe.Layout{recipe.Curator, recipe.Kazoo} {
				t.Run(layout.String(), func(t *testing.T) {
					srv := zktest.Start(t, target, serverOptions)
					direct, _ := srv.Connect(t)
					dir := "/recover"
					if _, err := direct.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatal(err)
					}
					px, err := faultproxy.Listen(srv.Addr)
					if err != nil {
						t.Fatal(err)
					}
					defer px.Close()
					s, err := recipe.Connect(px.Addr(), 2*time.Second, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					if err := s.WaitConnected(10 * time.Second); err != nil {
						t.Fatal(err)
					}
					<-s.Changes() // Connected

					// Answers stop: the create goes through, its reply does not.
					// Once the client has given up on the connection, answers
					// flow again and it reconnects to the same session.
					px.Block(faultproxy.Down, true)
					unblocked := make(chan error, 1)
					go func() {
						timeout := time.After(15 * time.Second)
						for {
							select {
							case c := <-s.Changes():
								if c.State == recipe.Suspended {
									px.Block(faultproxy.Down, false)
									unblocked <- nil
									return
								}
							case <-timeout:
								px.Block(faultproxy.Down, false)
								unblocked <- errors.New("the client never saw its connection drop")
								return
							}
						}
					}()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					n, err := recipe.Acquire(ctx, s.Conn, layout, dir, nil)
					if uerr := <-unblocked; uerr != nil {
						t.Fatal(uerr)
					}
					if err != nil {
						kids, _, _ := direct.Children(dir)
						t.Fatalf("Acquire: %v (children %v)", err, kids)
					}
					kids, _, err := direct.Children(dir)
					if err != nil {
						t.Fatal(err)
					}
					if len(kids) != 1 || kids[0] != n.Name {
						t.Errorf("children %v, want only the acquired %s", kids, n.Name)
					}
					if n.SessionID != s.Conn.SessionID() {
						t.Errorf("node owned by %#x, session %#x", n.SessionID, s.Conn.SessionID())
					}
				})
			}
		})
	}
}

// TestSessionTimeoutNegotiated: the Lost deadline uses the timeout the
// server granted, read from its ConnectResponse, not the one asked for.
func TestSessionTimeoutNegotiated(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, serverOptions)
			tests := []struct {
				ask, want time.Duration
			}{
				{60 * time.Second, 10 * time.Second}, // 20 ticks at most
				{4 * time.Second, 4 * time.Second},
				{100 * time.Millisecond, time.Second}, // 2 ticks at least
			}
			for _, tc := range tests {
				s, err := recipe.Connect(srv.Addr, tc.ask, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = s.WaitConnected(10 * time.Second)
				got := s.Timeout()
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("asked for %v: Timeout() = %v, want %v", tc.ask, got, tc.want)
				}
			}
		})
	}
}

// TestWatchNodeOwner: a node that is not owned by the connection's session
// is not held. After an expiry go-zookeeper opens a new session while the
// dead session's node may still be there (lock-delay): WatchNode must
// report it at once rather than watch it as ours, and Owns must be false.
func TestWatchNodeOwner(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, serverOptions)
			owner, _ := srv.Connect(t)
			other, _ := srv.Connect(t)
			const p = "/owned"
			if _, err := owner.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			n := &recipe.Node{Path: p, SessionID: owner.SessionID()}
			if !recipe.Owns(owner, n) || recipe.Owns(other, n) {
				t.Errorf("Owns: %v for the owner, %v for another session; want true, false", recipe.Owns(owner, n), recipe.Owns(other, n))
			}

			stop := make(chan struct{})
			defer close(stop)
			select {
			case err, ok := <-recipe.WatchNode(other, p, stop):
				if !ok || !strings.Contains(err.Error(), "not this one") {
					t.Errorf("WatchNode from another session: %v, %v", err, ok)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("WatchNode from another session reported nothing within 5 s")
			}

			// The owner's own watch reports nothing until the node goes.
			w := recipe.WatchNode(owner, p, stop)
			select {
			case err := <-w:
				t.Fatalf("WatchNode from the owner: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := other.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-w:
				if err == nil || !strings.Contains(err.Error(), "was deleted") {
					t.Errorf("after the delete: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no report of the delete within 5 s")
			}
		})
	}
}
