//go:build unix

package lockcmd

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		path string
		cmd  []string
		wait time.Duration
		err  bool
	}{
		{"flags before PATH", []string{"--wait", "5s", "/a/b", "--", "echo", "-n", "x"}, "/a/b", []string{"echo", "-n", "x"}, 5 * time.Second, false},
		{"flags after PATH", []string{"/a", "--wait", "2s", "--", "true"}, "/a", []string{"true"}, 2 * time.Second, false},
		{"no --", []string{"/a", "true", "--wait", "1s"}, "/a", []string{"true", "--wait", "1s"}, 0, false},
		{"CMD flags after --", []string{"/a", "--", "ls", "--wait"}, "/a", []string{"ls", "--wait"}, 0, false},
		{"no CMD", []string{"/a"}, "/a", []string{}, 0, false},
		{"no PATH", []string{"--wait", "1s"}, "", nil, 0, true},
		{"relative PATH", []string{"a", "--", "true"}, "", nil, 0, true},
		{"root PATH", []string{"/", "--", "true"}, "", nil, 0, true},
		{"trailing slash", []string{"/a/", "--", "true"}, "", nil, 0, true},
		{"bad flag", []string{"--nope", "/a", "--", "true"}, "", nil, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("lock", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var c common
			c.register(fs)
			p, cmd, err := parseArgs(fs, tc.args)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if p != tc.path || !reflect.DeepEqual(cmd, tc.cmd) || c.wait != tc.wait {
				t.Errorf("got %q %q wait %v; want %q %q wait %v", p, cmd, c.wait, tc.path, tc.cmd, tc.wait)
			}
		})
	}
}

func TestServerDefault(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "127.0.0.1:2181"}, {"h1:1,h2:2", "h1:1,h2:2"}} {
		t.Setenv(ServerEnv, tc.env)
		fs := flag.NewFlagSet("lock", flag.ContinueOnError)
		var c common
		c.register(fs)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if c.server != tc.want {
			t.Errorf("%s=%q: --server defaults to %q, want %q", ServerEnv, tc.env, c.server, tc.want)
		}
	}
}

func TestChildStatus(t *testing.T) {
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 143},
		{"kill -KILL $$", 137},
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			c, err := startChild([]string{"sh", "-c", tc.script}, nil)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.done:
			case <-time.After(10 * time.Second):
				c.signal(9)
				<-c.done
				t.Fatal("child still running after 10 s")
			}
			if got := c.status(); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// TestHelpExitsZero: --help prints the usage and exits 0, a bad flag exits
// with ExitUsage, for both commands (zkraft's other commands do the same).
func TestHelpExitsZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(args []string, stderr io.Writer) int
	}{
		{"lock", func(a []string, e io.Writer) int { return Lock(a, e) }},
		{"elect", func(a []string, e io.Writer) int { return Elect(a, io.Discard, e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut strings.Builder
			if got := tc.run([]string{"--help"}, &errOut); got != 0 {
				t.Fatalf("--help exited %d, want 0", got)
			}
			if !strings.Contains(errOut.String(), "usage: zkraft "+tc.name) {
				t.Fatalf("--help printed %q", errOut.String())
			}
			if got := tc.run([]string{"--nope"}, io.Discard); got != ExitUsage {
				t.Fatalf("a bad flag exited %d, want %d", got, ExitUsage)
			}
		})
	}
}
