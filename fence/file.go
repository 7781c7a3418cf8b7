package fence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FileGuard keeps the highest accepted token of each resource in a file of
// its directory. See the package documentation for what it guarantees. The
// zero value is not usable; call OpenFileGuard.
type FileGuard struct {
	dir string

	mu    sync.Mutex             // guards locks
	locks map[string]*sync.Mutex // per resource; entries are never removed
}

// OpenFileGuard returns a guard recording in dir, which it creates if
// needed (mode 0o755).
func OpenFileGuard(dir string) (*FileGuard, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("fence: create guard directory: %w", err)
	}
	return &FileGuard{dir: dir, locks: map[string]*sync.Mutex{}}, nil
}

// Dir is the guard's directory.
func (g *FileGuard) Dir() string { return g.dir }

// fileName is the base name of resource's files: a hash, so any resource
// name (slashes, "..", very long) maps to one safe file name.
func fileName(resource string) string {
	sum := sha256.Sum256([]byte(resource))
	return "token-" + hex.EncodeToString(sum[:16])
}

func (g *FileGuard) resourceMutex(resource string) *sync.Mutex {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.locks[resource]
	if !ok {
		m = &sync.Mutex{}
		g.locks[resource] = m
	}
	return m
}

// Do runs op if token is at least the highest token accepted for resource,
// after recording token durably when it is higher. It returns a
// *StaleTokenError (errors.Is ErrStaleToken) without running op when token
// is lower, op's error (unwrapped) when op fails, or an error of the guard's
// own files. op runs while the resource's guard lock is held, in this
// process and (flock) across processes; it must not call Do for the same
// resource.
func (g *FileGuard) Do(resource string, token int64, op func() error) error {
	if token < 1 {
		return fmt.Errorf("fence: token %d for %q: must be a positive zxid", token, resource)
	}
	m := g.resourceMutex(resource)
	m.Lock()
	defer m.Unlock()
	unlock, err := lockFile(filepath.Join(g.dir, fileName(resource)+".lock"))
	if err != nil {
		return fmt.Errorf("fence: lock %q: %w", resource, err)
	}
	defer unlock()
	highest, err := g.read(resource)
	if err != nil {
		return err
	}
	if token < highest {
		return &StaleTokenError{Resource: resource, Token: token, Highest: highest}
	}
	if token > highest {
		if err := g.write(resource, token); err != nil {
			return err
		}
	}
	if op == nil {
		return nil
	}
	return op()
}

// Check accepts or refuses token like Do, with no operation: it records a
// higher token, so later lower ones are refused.
func (g *FileGuard) Check(resource string, token int64) error {
	return g.Do(resource, token, nil)
}

// Highest returns the highest token accepted for resource, 0 if none.
func (g *FileGuard) Highest(resource string) (int64, error) {
	m := g.resourceMutex(resource)
	m.Lock()
	defer m.Unlock()
	return g.read(resource)
}

// read returns the recorded token: the file holds "<token> <resource>\n".
func (g *FileGuard) read(resource string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, fileName(resource)))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fence: read token of %q: %w", resource, err)
	}
	tok, name, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), " ")
	if !ok || name != resource {
		return 0, fmt.Errorf("fence: token file of %q is corrupt: %q", resource, b)
	}
	v, err := ParseToken(tok)
	if err != nil {
		return 0, fmt.Errorf("fence: token file of %q: %w", resource, err)
	}
	return v, nil
}

// write replaces the recorded token crash-safely: a temporary file is
// written and fsynced, renamed over the record, and the directory fsynced,
// so after a crash the record holds either the old or the new token.
func (g *FileGuard) write(resource string, token int64) (err error) {
	final := filepath.Join(g.dir, fileName(resource))
	f, err := os.CreateTemp(g.dir, fileName(resource)+".tmp-*")
	if err != nil {
		return fmt.Errorf("fence: record token of %q: %w", resource, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = fmt.Fprintf(f, "%d %s\n", token, resource); err != nil {
		return fmt.Errorf("fence: record token of %q: write: %w", resource, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fence: record token of %q: fsync: %w", resource, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("fence: record token of %q: close: %w", resource, err)
	}
	if err = os.Rename(f.Name(), final); err != nil {
		return fmt.Errorf("fence: record token of %q: rename: %w", resource, err)
	}
	if err = syncDir(g.dir); err != nil {
		return fmt.Errorf("fence: record token of %q: fsync directory: %w", resource, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
