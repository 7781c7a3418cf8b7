package fence

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFileGuardSequence: table-driven sequences of tokens on one guard; each
// step is accepted or refused, and a refusal names the highest token.
func TestFileGuardSequence(t *testing.T) {
	type step struct {
		resource string
		token    int64
		ok       bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first token accepted", []step{{"r", 7, true}}},
		{"equal token accepted again", []step{{"r", 7, true}, {"r", 7, true}}},
		{"higher accepted", []step{{"r", 7, true}, {"r", 8, true}, {"r", 1 << 40, true}}},
		{"lower refused", []step{{"r", 7, true}, {"r", 6, false}, {"r", 1, false}}},
		{"refusal does not lower the record", []step{{"r", 9, true}, {"r", 3, false}, {"r", 8, false}, {"r", 9, true}}},
		{"resources are independent", []step{{"a", 9, true}, {"b", 3, true}, {"a", 3, false}, {"b", 4, true}}},
		{"odd resource names", []step{{"/locks/x/../y", 5, true}, {"", 2, true}, {"/locks/x/../y", 4, false}, {string(make([]byte, 300)), 1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := OpenFileGuard(t.TempDir())
			require.NoError(t, err)
			highest := map[string]int64{}
			for i, s := range tc.steps {
				ran := false
				err := g.Do(s.resource, s.token, func() error { ran = true; return nil })
				if s.ok {
					require.NoError(t, err, "step %d", i)
					require.True(t, ran, "step %d: op not run", i)
					highest[s.resource] = max(highest[s.resource], s.token)
				} else {
					require.ErrorIs(t, err, ErrStaleToken, "step %d", i)
					var stale *StaleTokenError
					require.True(t, errors.As(err, &stale))
					require.Equal(t, StaleTokenError{Resource: s.resource, Token: s.token, Highest: highest[s.resource]}, *stale)
					require.False(t, ran, "step %d: op ran on a stale token", i)
				}
				h, err := g.Highest(s.resource)
				require.NoError(t, err)
				require.Equal(t, highest[s.resource], h, "step %d", i)
			}
		})
	}
}

func TestFileGuardBadInput(t *testing.T) {
	dir := t.TempDir()
	g, err := OpenFileGuard(dir)
	require.NoError(t, err)
	for _, tok := range []int64{0, -1} {
		require.Error(t, g.Check("r", tok))
	}
	// A record that is not "<token> <resource>" is an error, never 0.
	require.NoError(t, os.WriteFile(filepath.Join(dir, fileName("r")), []byte("garbage"), 0o644))
	require.ErrorContains(t, g.Check("r", 5), "corrupt")
	// op's error comes back unwrapped and the token stays recorded.
	boom := errors.New("boom")
	require.Equal(t, boom, g.Do("s", 5, func() error { return boom }))
	h, err := g.Highest("s")
	require.NoError(t, err)
	require.Equal(t, int64(5), h)
}

func TestParseToken(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4294967298", 4294967298, true}, {" 12\n", 12, true}, {"0", 0, false}, {"-3", 0, false},
		{"0x10", 0, false}, {"", 0, false}, {"99999999999999999999", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseToken(tc.in)
		if tc.ok {
			require.NoError(t, err, tc.in)
			require.Equal(t, tc.want, got)
		} else {
			require.Error(t, err, tc.in)
		}
	}
	t.Setenv(TokenEnv, "42")
	got, err := TokenFromEnv()
	require.NoError(t, err)
	require.Equal(t, int64(42), got)
}

// TestFileGuardSurvivesReopen: the record is in the directory, not in
// memory, and a leftover temporary file (a crash between write and rename)
// changes nothing.
func TestFileGuardSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	g, err := OpenFileGuard(dir)
	require.NoError(t, err)
	require.NoError(t, g.Check("/r", 100))
	require.NoError(t, os.WriteFile(filepath.Join(dir, fileName("/r")+".tmp-123"), []byte("5 /r\n"), 0o644))
	g2, err := OpenFileGuard(dir)
	require.NoError(t, err)
	require.ErrorIs(t, g2.Check("/r", 99), ErrStaleToken)
	require.NoError(t, g2.Check("/r", 100))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var temps []string // only the planted one: the guard leaves none behind
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			temps = append(temps, e.Name())
		}
	}
	require.Equal(t, []string{fileName("/r") + ".tmp-123"}, temps)
}

// TestFileGuardPausedHolder: holder A (token 5) checks in, then stalls
// before its write; B (token 9) writes; A's late write is refused and the
// resource keeps B's value.
func TestFileGuardPausedHolder(t *testing.T) {
	g, err := OpenFileGuard(t.TempDir())
	require.NoError(t, err)
	resource := filepath.Join(t.TempDir(), "value")
	write := func(v string) func() error {
		return func() error { return os.WriteFile(resource, []byte(v), 0o644) }
	}
	require.NoError(t, g.Do(resource, 5, write("A1")))
	// A pauses here; its lock is lost and B acquires with a larger token.
	require.NoError(t, g.Do(resource, 9, write("B")))
	err = g.Do(resource, 5, write("A2 (late)"))
	require.ErrorIs(t, err, ErrStaleToken)
	got, err := os.ReadFile(resource)
	require.NoError(t, err)
	require.Equal(t, "B", string(got))
}

// TestFileGuardConcurrent: goroutines with random tokens; the operations
// that ran did so one at a time and in non-decreasing token order, and
// every refused token was lower than one already accepted.
func TestFileGuardConcurrent(t *testing.T) {
	g, err := OpenFileGuard(t.TempDir())
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		ran     []int64
		refused []int64
		inOp    int
	)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				tok := int64((w*7919+i*104729)%97 + 1)
				err := g.Do("r", tok, func() error {
					mu.Lock()
					inOp++
					concurrent := inOp
					ran = append(ran, tok)
					mu.Unlock()
					if concurrent != 1 {
						return fmt.Errorf("%d operations at once", concurrent)
					}
					mu.Lock()
					inOp--
					mu.Unlock()
					return nil
				})
				mu.Lock()
				if errors.Is(err, ErrStaleToken) {
					refused = append(refused, tok)
				} else if err != nil {
					t.Error(err)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	require.NotEmpty(t, ran)
	require.NotEmpty(t, refused)
	for i := 1; i < len(ran); i++ {
		require.LessOrEqual(t, ran[i-1], ran[i], "operations ran out of token order: %v", ran)
	}
	require.Less(t, refused[0], ran[len(ran)-1])
	require.Equal(t, 8*40, len(ran)+len(refused))
}

// TestFileGuardAcrossProcesses: two processes (this test binary re-run as
// a helper) increment a counter file under the guard; flock makes their
// read-modify-write steps exclusive, so no increment is lost.
func TestFileGuardAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("FENCE_HELPER_DIR"); dir != "" {
		helperIncrement(t, dir)
		return
	}
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0"), 0o644))
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileGuardAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FENCE_HELPER_DIR="+dir)
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range cmds {
		require.NoError(t, errs[i], string(outs[i]))
	}
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(2*helperIncrements), string(b))
}

const helperIncrements = 300

func helperIncrement(t *testing.T, dir string) {
	g, err := OpenFileGuard(filepath.Join(dir, "guard"))
	require.NoError(t, err)
	counter := filepath.Join(dir, "counter")
	for i := 0; i < helperIncrements; i++ {
		require.NoError(t, g.Do("counter", 1, func() error {
			b, err := os.ReadFile(counter)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(string(b))
			if err != nil {
				return err
			}
			return os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644)
		}))
	}
}
