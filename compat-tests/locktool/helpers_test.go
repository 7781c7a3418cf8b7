package locktool_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zktest"
)

// procTimeout bounds every process a test starts; it is killed (with its
// process group) past it, and in the test's cleanup.
const procTimeout = 50 * time.Second

// proc is a process started by a test: its own process group, stdout lines
// on a channel, stderr kept, killed in the test's cleanup.
type proc struct {
	name   string
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.WriteCloser
	lines  chan string // stdout lines; closed at EOF

	mu     sync.Mutex
	stderr bytes.Buffer

	done chan struct{}
	code int // exit status (128+signal if killed); valid after done
}

// start runs argv with env added; withStdin gives it a pipe for send.
func start(t *testing.T, env []string, withStdin bool, argv ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	p := &proc{name: filepath.Base(argv[0]) + " " + strings.Join(argv[1:min(len(argv), 3)], " "), cmd: cmd, cancel: cancel,
		lines: make(chan string, 1024), done: make(chan struct{})}
	var err error
	if withStdin {
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{p}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %v: %v", argv, err)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody reads: drop
			}
		}
	}()
	go func() {
		<-readDone
		err := cmd.Wait()
		p.code = exitStatus(err)
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cancel()
		<-p.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.Stderr())
		}
	})
	return p
}

type lockedWriter struct{ p *proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stderr.Write(b)
}

// Stderr is what the process wrote on stderr so far.
func (p *proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// wait waits up to d for the process to exit and returns its status.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("%s still running after %v; stderr:\n%s", p.name, d, p.Stderr())
		return 0
	}
}

// signal sends sig to the process itself (not its group).
func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// send writes one line to the process's stdin.
func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("write to %s: %v", p.name, err)
	}
}

// expect reads stdout lines until one equals want, for at most d, and
// returns the lines read before it.
func (p *proc) expect(t *testing.T, d time.Duration, want string) []string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s: stdout ended without %q (saw %q); stderr:\n%s", p.name, want, seen, p.Stderr())
			}
			if l == want {
				return seen
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("%s: %s", p.name, l)
			}
			seen = append(seen, l)
		case <-timer.C:
			t.Fatalf("%s: no line %q within %v (saw %q); stderr:\n%s", p.name, want, d, seen, p.Stderr())
			return nil
		}
	}
}

// waitFor polls cond every 20 ms for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileText is the content of a file, "" if it does not exist yet.
func fileText(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// zkraftBin is the zkraft binary under test.
func zkraftBin(t *testing.T) string {
	t.Helper()
	bin, err := zktest.ZkraftBinary()
	if err != nil {
		t.Fatalf("zkraft binary: %v", err)
	}
	return bin
}

// javaPeer compiles LockPeer.java once per test process.
var javaPeer struct {
	once sync.Once
	dir  string
	err  error
}

// peerScript is the absolute path of peer/NAME.
func peerScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("peer", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// javaPeerEnv compiles the Java peer (once) and returns the environment
// peer.sh needs.
func javaPeerEnv(t *testing.T) []string {
	t.Helper()
	javaPeer.once.Do(func() {
		javaPeer.dir, javaPeer.err = os.MkdirTemp("", "locktool-peer-")
		if javaPeer.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, peerScript(t, "peer.sh"), "--build-only")
		cmd.Env = append(os.Environ(), "LOCKPEER_BUILD_DIR="+javaPeer.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			javaPeer.err = fmt.Errorf("peer.sh --build-only: %w\n%s", err, out)
		}
	})
	if javaPeer.err != nil {
		t.Fatalf("compile the Curator peer: %v", javaPeer.err)
	}
	return []string{"LOCKPEER_BUILD_DIR=" + javaPeer.dir}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if javaPeer.dir != "" {
		os.RemoveAll(javaPeer.dir)
	}
	os.Exit(code)
}

// children lists the children of p (none if p does not exist).
func children(t *testing.T, conn *zk.Conn, p string) []string {
	t.Helper()
	c, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("children of %s: %v", p, err)
	}
	return c
}

// section is one critical section read from the shared log.
type section struct {
	who   string
	token int64
	node  string // the lock node, for zkraft lock's holders
}

// checkLog reads the shared log of begin/end lines and checks that the
// critical sections never overlap and that their fencing tokens strictly
// increase. It returns the sections in order.
func checkLog(t *testing.T, path string) []section {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var out []section
	var inside *section
	var problems []string
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			problems = append(problems, fmt.Sprintf("line %d: %q", i+1, l))
			continue
		}
		tok, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("line %d: token %q", i+1, f[2]))
			continue
		}
		s := section{who: f[1], token: tok}
		if len(f) > 3 {
			s.node = f[3]
		}
		switch f[0] {
		case "begin":
			if inside != nil {
				problems = append(problems, fmt.Sprintf("line %d: %s entered while %s (token %d) is inside", i+1, s.who, inside.who, inside.token))
			}
			if n := len(out); n > 0 && tok <= out[n-1].token {
				problems = append(problems, fmt.Sprintf("line %d: %s has token %d, not above %s's %d", i+1, s.who, tok, out[n-1].who, out[n-1].token))
			}
			out = append(out, s)
			inside = &out[len(out)-1]
		case "end":
			if inside == nil || inside.who != s.who || inside.token != tok {
				problems = append(problems, fmt.Sprintf("line %d: %q does not close the section open (%v)", i+1, l, inside))
			}
			inside = nil
		default:
			problems = append(problems, fmt.Sprintf("line %d: %q", i+1, l))
		}
	}
	if inside != nil {
		problems = append(problems, fmt.Sprintf("%s's section (token %d) never ended", inside.who, inside.token))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = problems[:10]
		}
		t.Fatalf("critical sections of %s:\n%s", path, strings.Join(problems, "\n"))
	}
	return out
}

// countBy counts the sections of each holder name prefix.
func countBy(secs []section, prefix string) int {
	n := 0
	for _, s := range secs {
		if strings.HasPrefix(s.who, prefix) {
			n++
		}
	}
	return n
}

// nodeLayouts: the lock node names each layout must produce.
var nodeLayouts = map[string]*regexp.Regexp{
	"curator": regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$`),
	"kazoo":   regexp.MustCompile(`^[0-9a-f]{32}__lock__\d{10}$`),
}
