//go:build unix

// Package lockcmd implements `zkraft lock` and `zkraft elect`: run a command
// while holding a ZooKeeper lock (Curator InterProcessMutex or kazoo Lock
// layout) or while leader of a Curator LeaderLatch, as a plain ZooKeeper
// client (go-zookeeper) of any ZooKeeper-compatible server.
//
// Invariants:
//   - CMD runs only after the node is first in the queue and owned by the
//     connection's current, established session (checked again after the
//     wait: an expiry makes go-zookeeper open a new session); it gets the
//     node's czxid (the fencing token) and path in its environment.
//   - Once the hold is lost (session expired, node deleted or owned by
//     another session, or no contact with the server for the whole session
//     timeout since the last read from it) CMD's process group gets SIGTERM,
//     SIGKILL after --kill-after (also if CMD itself has exited and others
//     of its group remain), and the command exits with ExitLost. While
//     merely disconnected (SUSPENDED) CMD keeps running.
//   - The hold ends when no process of CMD's group is left: when CMD exits,
//     the rest of its group gets SIGTERM, SIGKILL after --kill-after.
//   - Signals to the command are passed to CMD's process group; if stdin is
//     the terminal and zkraft is in its foreground, CMD's group is given the
//     terminal while it runs, and it is taken back when CMD exits.
//   - The node is deleted on exit only if the hold was not lost and its
//     session is still the connection's (never from a new session: that
//     would remove a node lock-delay keeps for the dead one); the session is
//     always closed on exit, so a node whose delete could not be sent goes
//     with the session.
//   - Every goroutine started here is waited for before the command returns.
package lockcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/recipe"
)

// Exit statuses of the commands themselves (otherwise CMD's status, or 128 +
// the signal that ended CMD or ended the wait).
const (
	ExitFailure = 1   // cannot connect, a ZooKeeper error
	ExitUsage   = 2   // bad arguments
	ExitTimeout = 124 // --wait passed before the lock was taken (as timeout(1))
	ExitLost    = 125 // the lock or leadership was lost while CMD ran; CMD was stopped
	ExitNoStart = 127 // CMD could not be started
)

// ServerEnv names the default server list.
const ServerEnv = "ZKRAFT_SERVER"

// releaseTimeout bounds the delete of the node on exit; past it the
// session close (or, if the server is unreachable, its expiry) removes it.
const releaseTimeout = 3 * time.Second

// forwarded are the signals passed to CMD.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

const lockUsage = "usage: zkraft lock [--server HOSTS] [--layout curator|kazoo] [--session-timeout DUR] [--wait DUR] [--kill-after DUR] [--log-level LEVEL] PATH -- CMD [ARGS...]"
const electUsage = "usage: zkraft elect [--server HOSTS] [--id ID] [--session-timeout DUR] [--wait DUR] [--kill-after DUR] [--log-level LEVEL] PATH -- CMD [ARGS...]\n       zkraft elect --watch [--server HOSTS] [--log-level LEVEL] PATH"

// common are the flags of both commands.
type common struct {
	server         string
	sessionTimeout time.Duration
	wait           time.Duration
	killAfter      time.Duration
	logLevel       string
}

func (c *common) register(fs *flag.FlagSet) {
	def := os.Getenv(ServerEnv)
	if def == "" {
		def = "127.0.0.1:2181"
	}
	fs.StringVar(&c.server, "server", def, "ZooKeeper servers, host:port[,host:port...] (default $"+ServerEnv+" or 127.0.0.1:2181)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Second, "session timeout to ask for")
	fs.DurationVar(&c.wait, "wait", 0, "give up (exit 124) if not holding after this long; 0 waits forever")
	fs.DurationVar(&c.killAfter, "kill-after", 10*time.Second, "SIGKILL CMD this long after the SIGTERM sent when the hold is lost")
	fs.StringVar(&c.logLevel, "log-level", "", "JSON logs on stderr at this level (debug, info, warn, error); default: plain messages")
}

// parseArgs parses flags before and after PATH and returns PATH and the
// arguments after it (CMD).
func parseArgs(fs *flag.FlagSet, args []string) (string, []string, error) {
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", nil, errors.New("missing PATH")
	}
	p := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return "", nil, err
	}
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") {
		return "", nil, fmt.Errorf("PATH %q must be an absolute znode path other than /", p)
	}
	return p, fs.Args(), nil
}

// Lock runs `zkraft lock` with args (after the subcommand name).
func Lock(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("lock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, lockUsage); fs.PrintDefaults() }
	var c common
	c.register(fs)
	layoutName := fs.String("layout", "curator", "node layout: curator (InterProcessMutex) or kazoo (Lock)")
	p, argv, err := parseArgs(fs, args)
	if err == nil && len(argv) == 0 {
		err = errors.New("missing CMD after --")
	}
	if err == nil {
		_, err = recipe.ParseLayout(*layoutName)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help: the usage went to stderr
		}
		fmt.Fprintf(stderr, "zkraft lock: %v\n%s\n", err, lockUsage)
		return ExitUsage
	}
	layout, _ := recipe.ParseLayout(*layoutName)
	rep, err := newReporter("zkraft lock", stderr, c.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "zkraft lock: %v\n", err)
		return ExitUsage
	}
	return hold(holdSpec{
		common: c, layout: layout, path: p, argv: argv, what: "lock",
		env: func(n *recipe.Node) []string {
			return []string{"ZKRAFT_LOCK_TOKEN=" + strconv.FormatInt(n.Czxid, 10), "ZKRAFT_LOCK_NODE=" + n.Path}
		},
	}, rep)
}

// Elect runs `zkraft elect` with args (after the subcommand name).
func Elect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("elect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, electUsage); fs.PrintDefaults() }
	var c common
	c.register(fs)
	host, _ := os.Hostname()
	id := fs.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "participant id (the latch node's data, as Curator's LeaderLatch id)")
	watch := fs.Bool("watch", false, "print the leader's id on every change instead of taking part")
	p, argv, err := parseArgs(fs, args)
	if err == nil && !*watch && len(argv) == 0 {
		err = errors.New("missing CMD after --")
	}
	if err == nil && *watch && len(argv) > 0 {
		err = fmt.Errorf("--watch takes no CMD, got %q", argv)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // --help: the usage went to stderr
		}
		fmt.Fprintf(stderr, "zkraft elect: %v\n%s\n", err, electUsage)
		return ExitUsage
	}
	rep, err := newReporter("zkraft elect", stderr, c.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "zkraft elect: %v\n", err)
		return ExitUsage
	}
	if *watch {
		return watchLeader(c, p, stdout, rep)
	}
	return hold(holdSpec{
		common: c, layout: recipe.Latch, path: p, argv: argv, data: []byte(*id), what: "leadership",
		env: func(n *recipe.Node) []string {
			return []string{"ZKRAFT_LEADER_ID=" + *id, "ZKRAFT_LEADER_TOKEN=" + strconv.FormatInt(n.Czxid, 10), "ZKRAFT_LEADER_NODE=" + n.Path}
		},
	}, rep)
}

// holdSpec is what hold takes and runs.
type holdSpec struct {
	common
	layout recipe.Layout
	path   string
	data   []byte
	argv   []string
	what   string // "lock" or "leadership", for messages
	env    func(*recipe.Node) []string
}

// connect opens the session and waits for it, within the session timeout
// (or --wait, if longer); a signal ends the wait (status 128+signal).
func connect(c common, rep *reporter, sigC <-chan os.Signal) (*recipe.Session, int) {
	var logger zk.Logger
	if rep.log != nil {
		logger = zkLogger{rep}
	}
	s, err := recipe.Connect(c.server, c.sessionTimeout, logger)
	if err != nil {
		rep.error(nil, "%v", err)
		return nil, ExitFailure
	}
	bound := max(c.sessionTimeout, c.wait)
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.Conn.State() != zk.StateHasSession {
		select {
		case <-deadline.C:
			s.Close()
			rep.error(map[string]any{"server": c.server}, "cannot connect to %s: no session within %v", c.server, bound)
			return nil, ExitFailure
		case sig := <-sigC:
			s.Close()
			rep.warn(nil, "%v while connecting to %s: gave up", sig, c.server)
			return nil, 128 + int(sig.(syscall.Signal))
		case <-tick.C:
		}
	}
	rep.debug(map[string]any{"session": fmt.Sprintf("%#x", s.Conn.SessionID()), "timeout": s.Timeout().String()},
		"session established")
	return s, 0
}

// hold takes the lock (or leadership), runs CMD while holding it and
// releases it; it returns the exit status.
func hold(spec holdSpec, rep *reporter) int {
	sigC := make(chan os.Signal, 8)
	signal.Notify(sigC, forwarded...)
	defer signal.Stop(sigC)

	started := time.Now()
	sess, code := connect(spec.common, rep, sigC)
	if sess == nil {
		return code
	}
	defer sess.Close()

	// Wait for the lock.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		n   *recipe.Node
		err error
	}
	resC := make(chan result, 1)
	acquire := func() {
		go func() {
			n, err := recipe.Acquire(ctx, sess.Conn, spec.layout, spec.path, spec.data)
			resC <- result{n, err}
		}()
	}
	acquire()
	// abandon stops the wait: the session's close removes the node, if any.
	abandon := func() {
		cancel()
		sess.Close()
		<-resC
	}
	var timeoutC <-chan time.Time
	if spec.wait > 0 {
		t := time.NewTimer(spec.wait - time.Since(started))
		defer t.Stop()
		timeoutC = t.C
	}
	// taken is the node Acquire returned, held only once its session is
	// the connection's current, established one: the session may have
	// expired meanwhile (go-zookeeper then opens a new one) while the node
	// is still there (lock-delay keeps it).
	var node, taken *recipe.Node
	recheck := time.NewTicker(10 * time.Millisecond)
	defer recheck.Stop()
	for node == nil {
		var recheckC <-chan time.Time
		if taken != nil {
			switch {
			case sess.Conn.SessionID() != taken.SessionID:
				rep.warn(nil, "session expired as the %s was taken; trying again with a new session", spec.what)
				taken = nil
				acquire()
			case recipe.Owns(sess.Conn, taken):
				node = taken
				continue
			default: // disconnected, same session: wait for it to come back
				recheckC = recheck.C
			}
		}
		select {
		case r := <-resC:
			if r.err != nil {
				rep.error(nil, "cannot take the %s at %s: %v", spec.what, spec.path, r.err)
				return ExitFailure
			}
			taken = r.n
		case <-recheckC:
		case <-timeoutC:
			abandon()
			rep.error(map[string]any{"path": spec.path}, "gave up waiting for the %s at %s after %v", spec.what, spec.path, spec.wait)
			return ExitTimeout
		case sig := <-sigC:
			abandon()
			rep.warn(nil, "%v while waiting for the %s at %s: gave up", sig, spec.what, spec.path)
			return 128 + int(sig.(syscall.Signal))
		case c := <-sess.Changes():
			switch c.State {
			case recipe.Suspended:
				rep.warn(nil, "disconnected from ZooKeeper while waiting for the %s; reconnecting", spec.what)
			case recipe.Expired:
				rep.warn(nil, "session expired while waiting for the %s; trying again with a new session", spec.what)
			case recipe.Connected:
				rep.debug(map[string]any{"session": fmt.Sprintf("%#x", c.SessionID)}, "connected")
			case recipe.Lost:
				rep.debug(nil, "no contact with ZooKeeper for the session timeout while waiting")
			}
		}
	}
	fields := map[string]any{"node": node.Path, "token": node.Czxid, "session": fmt.Sprintf("%#x", node.SessionID)}
	rep.info(fields, "holding the %s at %s (token %d)", spec.what, node.Path, node.Czxid)

	// Run CMD while holding it.
	ch, err := startChild(spec.argv, spec.env(node))
	if err != nil {
		rep.error(nil, "%v", err)
		release(sess, node, false, rep)
		return ExitNoStart
	}
	stopWatch := make(chan struct{})
	watchDone := recipe.WatchNode(sess.Conn, node.Path, stopWatch)
	nodeLost := watchDone // nil once read to its close
	var lost string
	killTimer := time.NewTimer(time.Hour)
	killTimer.Stop()
	defer killTimer.Stop()
	var killC <-chan time.Time
	var killedAt time.Time // when SIGKILL was sent
	// stop sends SIGTERM to CMD's group and arms the SIGKILL, once.
	stop := func() {
		if killC != nil || !killedAt.IsZero() {
			return
		}
		ch.signal(syscall.SIGTERM)
		killTimer.Reset(spec.killAfter)
		killC = killTimer.C
	}
	lose := func(why string) {
		if lost != "" {
			return
		}
		lost = why
		rep.error(fields, "lost the %s at %s: %s; stopping CMD (SIGTERM, SIGKILL after %v)", spec.what, node.Path, why, spec.killAfter)
		stop()
	}
	// Once CMD itself has exited, the hold ends when no process of its
	// group is left: they are stopped as CMD would be on a loss.
	cmdDone := (<-chan struct{})(ch.done)
	var status int
	var pollC <-chan time.Time
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	finish := func() int {
		// Stop watching: the session's close ends a request in flight.
		release(sess, node, lost != "", rep)
		close(stopWatch)
		for range watchDone {
		}
		if lost != "" {
			rep.error(fields, "CMD stopped (status %d) after the %s was lost: %s", status, spec.what, lost)
			return ExitLost
		}
		rep.info(map[string]any{"status": status}, "CMD exited with status %d; released the %s", status, spec.what)
		return status
	}
	for {
		select {
		case <-cmdDone:
			cmdDone = nil
			status = ch.status()
			if !ch.groupAlive() {
				return finish()
			}
			if lost == "" {
				rep.warn(map[string]any{"status": status}, "CMD exited with status %d but processes of its group remain: stopping them (SIGTERM, SIGKILL after %v) before releasing the %s",
					status, spec.killAfter, spec.what)
				stop()
			}
			pollC = poll.C
		case <-pollC:
			if !ch.groupAlive() {
				return finish()
			}
			if !killedAt.IsZero() && time.Since(killedAt) > releaseTimeout {
				rep.warn(nil, "processes of CMD's group still there %v after SIGKILL; releasing the %s", releaseTimeout, spec.what)
				return finish()
			}
		case sig := <-sigC:
			rep.debug(map[string]any{"signal": sig.String()}, "passing %v to CMD", sig)
			ch.signal(sig.(syscall.Signal))
		case err, ok := <-nodeLost:
			if !ok {
				nodeLost = nil
				continue
			}
			lose(err.Error())
		case c := <-sess.Changes():
			switch c.State {
			case recipe.Suspended:
				if lost == "" {
					rep.warn(fields, "disconnected from ZooKeeper (SUSPENDED); CMD keeps running; the %s is taken as lost at %s (in %v) unless the connection comes back",
						spec.what, c.Deadline.Format(time.RFC3339Nano), time.Until(c.Deadline).Round(time.Millisecond))
				}
			case recipe.Connected:
				if lost == "" {
					rep.warn(fields, "reconnected to ZooKeeper, session alive: still holding the %s", spec.what)
				}
			case recipe.Expired:
				lose("session expired")
			case recipe.Lost:
				lose(fmt.Sprintf("no contact with ZooKeeper for the session timeout (%v); the session may have expired", sess.Timeout()))
			}
		case <-killC:
			killC = nil
			killedAt = time.Now()
			if cmdDone != nil {
				rep.error(nil, "CMD still running %v after SIGTERM: sending SIGKILL", spec.killAfter)
			} else {
				rep.error(nil, "processes of CMD's group still running %v after SIGTERM: sending SIGKILL", spec.killAfter)
			}
			ch.signal(syscall.SIGKILL)
		}
	}
}

// release deletes the node (bounded) and closes the session, which also
// removes the node if the delete could not be sent. The node is deleted
// only if the hold was not lost and the node's session is still the
// connection's: after an expiry go-zookeeper opens a new session, and a
// delete from it would remove the node the server keeps for the dead
// session (lock-delay) while a paused holder may still act on it.
func release(sess *recipe.Session, node *recipe.Node, lost bool, rep *reporter) {
	if lost || !recipe.Owns(sess.Conn, node) {
		// A delete would wait for the connection to come back, or remove
		// what is no longer ours.
		rep.debug(map[string]any{"lost": lost, "session": fmt.Sprintf("%#x", sess.Conn.SessionID())}, "closing the session without deleting %s", node.Path)
		sess.Close()
		return
	}
	done := make(chan error, 1)
	go func() { done <- sess.Conn.Delete(node.Path, -1) }()
	t := time.NewTimer(releaseTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			rep.debug(map[string]any{"err": err.Error()}, "delete %s", node.Path)
		}
		sess.Close()
	case <-t.C:
		rep.warn(nil, "could not delete %s within %v; closing the session (the node goes with it)", node.Path, releaseTimeout)
		sess.Close()
		<-done
	}
}

// watchLeader prints the leader's id of the latch at p on every change,
// until a signal; "" (an empty line) while there is no leader.
func watchLeader(c common, p string, stdout io.Writer, rep *reporter) int {
	sigC := make(chan os.Signal, 1)
	signal.Notify(sigC, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigC)
	sess, code := connect(c, rep, sigC)
	if sess == nil {
		return code
	}
	defer sess.Close()
	stop := make(chan struct{})
	done := make(chan int, 1)
	go func() {
		last, first := "", true
		for {
			id, ev, err := recipe.Leader(sess.Conn, p)
			if err != nil {
				select {
				case <-stop:
					done <- 0
					return
				case <-time.After(100 * time.Millisecond):
				}
				rep.debug(map[string]any{"err": err.Error()}, "reading the leader again")
				continue
			}
			if first || id != last {
				fmt.Fprintln(stdout, id)
				first, last = false, id
			}
			select {
			case <-stop:
				done <- 0
				return
			case <-ev:
			}
		}
	}()
	for {
		select {
		case <-sigC:
			close(stop)
			sess.Close()
			return <-done
		case code := <-done:
			return code
		case ch := <-sess.Changes():
			if ch.State != recipe.Connected {
				rep.warn(nil, "session %s; the leader is read again once reconnected", strings.ToLower(ch.State.String()))
			}
		}
	}
}
