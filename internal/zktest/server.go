package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/freeport"
)

// Time bounds of the process life cycle.
const (
	readyTimeout = 30 * time.Second // from exec until srvr answers "Mode:"
	stopGrace    = 5 * time.Second  // SIGTERM to SIGKILL
	reapTimeout  = 10 * time.Second // SIGKILL to exit; beyond it something is badly wrong
)

// Server is one running (or stopped) server process. Its address, port and
// data directory stay the same across Restart.
type Server struct {
	Target  Target
	Addr    string // 127.0.0.1:port
	Port    int
	Dir     string // working directory: zoo.cfg, server.log, data/
	DataDir string
	LogPath string // process stdout and stderr, appended across restarts
	Opts    Options

	cfgPath string
	bin     string
	args    []string
	// probe, when set, replaces the readiness check of start (srvr answers
	// a "Mode:" line); it reports whether the server is ready and what it saw.
	probe func(s *Server) (bool, string)

	mu   sync.Mutex
	proc *process
}

// process is one exec of the server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been reaped
	err  error         // Wait's result, valid after done
}

// Start launches a server of target in a fresh t.TempDir(), waits until it
// serves, and registers a cleanup that stops it (logging the tail of its
// output if the test failed). It fails the test on any error.
func Start(t testing.TB, target Target, opts Options) *Server {
	t.Helper()
	s, err := Launch(target, t.TempDir(), opts)
	if err != nil {
		t.Fatalf("zktest: start %s: %v", target, err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("zktest: tail of %s output (%s):\n%s", s.Target, s.LogPath, s.LogTail(80))
		}
	})
	return s
}

// Launch starts a server of target in dir (which must exist and be owned by
// the caller) and waits until it serves. Unlike Start it is not tied to a
// test: the caller must call Close. It suits servers shared by many tests,
// started from TestMain or lazily.
func Launch(target Target, dir string, opts Options) (*Server, error) {
	s := &Server{
		Target:  target,
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		LogPath: filepath.Join(dir, "server.log"),
		cfgPath: filepath.Join(dir, "zoo.cfg"),
		Opts:    opts,
	}
	switch target {
	case Zkraft:
		bin, err := zkraftBinary()
		if err != nil {
			return nil, err
		}
		s.bin, s.args = bin, []string{"serve", "--config", s.cfgPath}
	case Apache:
		java, args, err := apacheCommand(opts)
		if err != nil {
			return nil, err
		}
		s.bin, s.args = java, append(args, s.cfgPath)
	default:
		return nil, fmt.Errorf("unknown target %q (want %q or %q)", target, Zkraft, Apache)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Port = port
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.WriteFile(s.cfgPath, opts.zooCfg(target, s.DataDir, port), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// freePort picks a free loopback port (see package freeport).
func freePort() (int, error) {
	return freeport.Port()
}

// start execs the server and waits until it serves; on failure the process
// is killed and reaped.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	fmt.Fprintf(logf, "=== zktest: %s %s at %s\n", s.bin, strings.Join(s.args, " "), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group (killed as a whole); and killed by the kernel if the
	// test binary dies before its cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if err := s.waitReady(p); err != nil {
		s.Kill()
		return fmt.Errorf("%w\n--- tail of %s:\n%s", err, s.LogPath, s.LogTail(40))
	}
	return nil
}

// waitReady polls srvr until it reports a Mode: line.
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(readyTimeout)
	var last string
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s server exited before serving: %v", s.Target, p.err)
		default:
		}
		probe := s.probe
		if probe == nil {
			probe = probeMode
		}
		ok, seen := probe(s)
		if ok {
			return nil
		}
		last = seen
		if time.Now().After(deadline) {
			return fmt.Errorf("%s server on %s not serving after %v (last srvr: %s)", s.Target, s.Addr, readyTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeMode is the default readiness check: srvr answers a "Mode:" line.
func probeMode(s *Server) (bool, string) {
	// A short deadline: a server still starting may accept a connection and
	// never answer it.
	out, err := s.fourLetter("srvr", 500*time.Millisecond)
	if err != nil {
		return false, err.Error()
	}
	return strings.Contains(out, "Mode:"), strings.TrimSpace(out)
}

// current returns the live process, or nil.
func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// signalAndWait sends sig to the process group and waits up to d for the
// process to be reaped. It reports whether it was.
func (p *process) signalAndWait(sig syscall.Signal, d time.Duration) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	// The negative pid addresses the process group (Setpgid), so children of
	// the server, if any, get the signal too.
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Kill sends SIGKILL and waits for the process to exit: a crash.
func (s *Server) Kill() {
	if p := s.current(); p != nil {
		p.signalAndWait(syscall.SIGKILL, reapTimeout)
	}
}

// Stop sends SIGTERM and waits up to 5 s for a clean exit, then kills.
func (s *Server) Stop() {
	p := s.current()
	if p == nil {
		return
	}
	if !p.signalAndWait(syscall.SIGTERM, stopGrace) {
		p.signalAndWait(syscall.SIGKILL, reapTimeout)
	}
}

// Close stops the server; it is what Start's cleanup calls. It is safe to
// call more than once.
func (s *Server) Close() { s.Stop() }

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	p := s.current()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Restart stops the server if it is still running (SIGTERM) and starts it
// again on the same port with the same data directory, then waits until it
// serves. Call Kill first to simulate a crash.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	// The old listening socket is gone with the process; both servers set
	// SO_REUSEADDR, so TIME_WAIT connections do not block the port.
	if err := s.start(); err != nil {
		t.Fatalf("zktest: restart %s: %v", s.Target, err)
	}
}

// Pid returns the process id of the running server (the java process for
// Apache), or 0 if none is running.
func (s *Server) Pid() int {
	if !s.Running() {
		return 0
	}
	return s.current().cmd.Process.Pid
}

// Relaunch is Restart for callers without a testing.TB (zkbench): it stops
// the server if it is still running and starts it again with the same port
// and data directory, rewriting zoo.cfg with extra (nil keeps the current
// file; keys override Opts.Extra).
func (s *Server) Relaunch(extra map[string]string) error {
	s.Stop()
	if extra != nil {
		o := s.Opts
		o.Extra = map[string]string{}
		for k, v := range s.Opts.Extra {
			o.Extra[k] = v
		}
		for k, v := range extra {
			o.Extra[k] = v
		}
		if err := os.WriteFile(s.cfgPath, o.zooCfg(s.Target, s.DataDir, s.Port), 0o644); err != nil {
			return fmt.Errorf("write zoo.cfg: %w", err)
		}
	}
	if err := s.start(); err != nil {
		return fmt.Errorf("relaunch %s: %w", s.Target, err)
	}
	return nil
}

// FourLetter sends a four-letter word (srvr, ruok, mntr, ...) and returns
// the whole answer.
func (s *Server) FourLetter(cmd string) (string, error) {
	return s.fourLetter(cmd, 5*time.Second)
}

func (s *Server) fourLetter(cmd string, timeout time.Duration) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("four-letter word %q is not 4 bytes", cmd)
	}
	c, err := net.DialTimeout("tcp", s.Addr, timeout)
	if err != nil {
		return "", fmt.Errorf("4lw %s: %w", cmd, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("4lw %s: %w", cmd, err)
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("4lw %s: %w", cmd, err)
	}
	out, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		return string(out), fmt.Errorf("4lw %s: %w", cmd, err)
	}
	return string(out), nil
}

// LogTail returns about the last n lines of the process output.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", s.LogPath, err)
	}
	const maxBytes = 16 << 10
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
