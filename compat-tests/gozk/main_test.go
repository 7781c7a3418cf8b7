package gozk

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
)

// superUser is the digest user that the shared servers treat as super.
const superUser = "super:s3cret"

// sharedOptions configure the server shared by the ordinary tests.
var sharedOptions = zktest.Options{SuperDigest: zktest.DigestACLHash(superUser)}

// pool holds the servers shared by the ordinary tests of this binary.
var pool = &serverPool{servers: map[zktest.Target]*poolEntry{}}

func TestMain(m *testing.M) {
	code := m.Run()
	pool.closeAll()
	os.Exit(code)
}

type serverPool struct {
	mu      sync.Mutex
	servers map[zktest.Target]*poolEntry
}

type poolEntry struct {
	once   sync.Once
	dir    string
	s      *zktest.Server
	err    error
	failed atomic.Bool // a test using the server failed: print its log tail
}

// sharedServer returns the shared server of target, starting it on first
// use. Tests must keep to their own path prefix (see prefix).
func sharedServer(t *testing.T, target zktest.Target) *zktest.Server {
	t.Helper()
	pool.mu.Lock()
	e, ok := pool.servers[target]
	if !ok {
		e = &poolEntry{}
		pool.servers[target] = e
	}
	pool.mu.Unlock()
	e.once.Do(func() {
		e.dir, e.err = os.MkdirTemp("", "gozk-shared-"+string(target)+"-")
		if e.err == nil {
			e.s, e.err = zktest.Launch(target, e.dir, sharedOptions)
		}
	})
	if e.err != nil {
		t.Fatalf("shared %s server: %v", target, e.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.failed.Store(true)
		}
	})
	if !e.s.Running() {
		t.Fatalf("shared %s server is not running:\n%s", target, e.s.LogTail(40))
	}
	return e.s
}

func (p *serverPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for target, e := range p.servers {
		if e.s != nil {
			e.s.Close()
			if e.failed.Load() {
				fmt.Fprintf(os.Stderr, "--- tail of the shared %s server output (%s):\n%s\n", target, e.s.LogPath, e.s.LogTail(60))
			}
		}
		if e.dir != "" {
			os.RemoveAll(e.dir)
		}
	}
}

// eachTarget runs f as one subtest per target.
func eachTarget(t *testing.T, f func(t *testing.T, target zktest.Target)) {
	t.Helper()
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) { f(t, target) })
	}
}

// onShared runs f once per target against the shared server.
func onShared(t *testing.T, f func(t *testing.T, s *zktest.Server)) {
	t.Helper()
	eachTarget(t, func(t *testing.T, target zktest.Target) { f(t, sharedServer(t, target)) })
}

// prefixName is the node name a test works under: its name, flattened.
func prefixName(t *testing.T) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}
