// Package sim is a deterministic whole-cluster simulator of zkraft.
//
// Members run zkraft's real consensus.Core (the raft RawNode with zkraft's
// Ready handling: persist before send, apply, conf changes, snapshot
// decisions and recording, restart recovery) on a simulated disk (disk.go,
// a consensus.Storage with torn writes) and the simulated network as its
// consensus.Transport, with snapshot jobs run inline. Each applies its
// committed entries through zkraft's own replicated state machine
// (server.Replica: entry encoding, apply, sessions, the expiry fence, the
// znode tree) and runs the server's leader-side session logic
// (server.SessionLeader: leader change, expiry and lock-delay rounds,
// container and TTL removal) with a session.Tracker on the simulated clock.
// Clients run ZooKeeper operations, a Curator-style lock, containers and TTL
// nodes against the members over a simulated network.
//
// Invariants:
//   - One run depends only on its Config: one seeded PRNG draws every choice,
//     time is simulated, everything runs on the caller's goroutine, and no
//     decision depends on map iteration order. raft draws its randomized
//     election timeouts from crypto/rand.Reader, which Run replaces with a
//     reader seeded from the same PRNG for the duration of the run (so Run
//     must not be called concurrently, and nothing else in the process may
//     rely on crypto/rand meanwhile).
//   - Faults (crashes, torn writes, pauses, partitions, message loss,
//     duplication and reordering, reconfig, client pauses and broken client
//     connections) happen only in the first 70% of the simulated duration;
//     the rest is fault-free, but for one client that dies for good, so
//     progress and the end of its session can be checked.
package sim

import (
	"container/heap"
	crand "crypto/rand"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/zkraft/zkraft/session"
)

// Config is one simulation run.
type Config struct {
	Seed     uint64
	Members  int
	Clients  int
	Duration time.Duration // simulated
	Trace    io.Writer     // event log, nil for none
}

// Failure is one broken property.
type Failure struct {
	Checker string
	Detail  string
}

func (f Failure) String() string { return f.Checker + ": " + f.Detail }

// Timing of the simulated cluster.
const (
	raftTick        = 50 * time.Millisecond
	electionTicks   = 10
	sessionTimeout  = 6000 * time.Millisecond
	trackerTickMs   = 200
	pingEvery       = 500 * time.Millisecond
	clientSilence   = sessionTimeout * 2 / 3 // a client with no answer for this long reconnects (ZooKeeper's read timeout)
	requestTimeout  = sessionTimeout * 2 / 3
	expiryEvery     = 100 * time.Millisecond
	livenessEvery   = 100 * time.Millisecond
	compactEvery    = 300 // applied entries between snapshots
	keepEntries     = 50  // log entries kept behind a snapshot
	expiryRetry     = 2 * time.Second
	containerTicks  = 10 // raft ticks between container and TTL rounds (500 ms)
	faultFraction   = 0.7
	drainTime       = 3 * time.Second
	simEpochSeconds = 1_767_225_600 // 2026-01-01, the simulated clock's zero
)

// One run in tightLogOdds has a tight log: it snapshots every
// tightCompactEvery applied entries, keeps 1..tightKeepMax entries behind,
// and runs each snapshot job before the next Ready
// (snapshotBeforeNextReady). Followers then often need snapshots, and
// compaction runs close to the indexes raft still reads.
const (
	tightLogOdds      = 3
	tightCompactEvery = 3
	tightKeepMax      = 2
)

type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// world is one run.
type world struct {
	cfg       Config
	rng       *rand.Rand
	passwords prngReader // session passwords (a PRNG of their own: drawing them changes no other draw)
	giveUps   *rand.Rand // early give-ups of additions (a PRNG of their own, as passwords)
	now       time.Duration
	seq       uint64
	queue     eventQueue
	members   []*member
	clients   []*client
	net       *network
	chk       *checks
	faulty    bool // faults are being injected
	draining  bool // the run is over: clients start nothing new
	profile   int  // which faults this run injects
	connCount uint64
	failed    []Failure
	current   *member // the member whose code runs, for a panic's report
	rc        reconfigState
	pipe      pipeStats
	// The members' SnapshotEvery and KeepEntries: compactEvery and
	// keepEntries, or a tight log's.
	snapEvery, keepEntries uint64
	tightLog               bool // tightLogOdds
}

// pipeStats counts what the members did while a write ran (test evidence
// that the Core's pipelined paths run).
type pipeStats struct {
	steps        int // peer messages stepped while writing (StepWhileWriting)
	stepApplies  int // entries applied from the mirror by such a step
	forwards     int // proposals a follower forwarded itself (Core.Forward)
	crashWrites  int // crashes during a write
	queuedDuring int // work that waited for a write to end (whenIdle)
}

// clock is the simulated clock, as session.Clock.
type clock struct{ w *world }

func (c clock) Now() time.Time { return time.Unix(simEpochSeconds, 0).Add(c.w.now) }

var _ session.Clock = clock{}

func (w *world) after(d time.Duration, fn func()) {
	w.seq++
	heap.Push(&w.queue, &event{at: w.now + d, seq: w.seq, fn: fn})
}

func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *world) chance(p float64) bool { return w.rng.Float64() < p }

func (w *world) tracef(format string, args ...any) {
	if w.cfg.Trace != nil {
		fmt.Fprintf(w.cfg.Trace, "%12.3fms ", float64(w.now)/float64(time.Millisecond))
		fmt.Fprintf(w.cfg.Trace, format, args...)
		fmt.Fprintln(w.cfg.Trace)
	}
}

func (w *world) fail(checker, format string, args ...any) {
	f := Failure{Checker: checker, Detail: fmt.Sprintf(format, args...)}
	w.tracef("FAILURE %s", f)
	for _, g := range w.failed {
		if g.Checker == checker {
			return // the first failure of a checker is reported
		}
	}
	w.failed = append(w.failed, f)
}

// loop runs the events until the end of the run. A panic in the code under
// test (raft panics when it finds its log lost or corrupted, which a real
// member would die of) ends the run as a failure; loop then returns false.
func (w *world) loop() (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if w.current != nil {
				w.fail(chkPanic, "member %d: %v", w.current.id, r)
			} else {
				w.fail(chkPanic, "%v", r)
			}
			ok = false
		}
	}()
	for w.queue.Len() > 0 {
		e := heap.Pop(&w.queue).(*event)
		if e.at > w.cfg.Duration+drainTime {
			break
		}
		w.now = e.at
		w.current = nil
		e.fn()
	}
	return true
}

// prngReader feeds raft's crypto/rand draws from the run's PRNG.
type prngReader struct{ rng *rand.Rand }

func (r prngReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(r.rng.Uint32())
	}
	return len(b), nil
}

// Run runs one simulation and returns the properties it found broken, in
// the order found (at most one per checker).
func Run(cfg Config) []Failure {
	_, failed := run(cfg)
	return failed
}

func run(cfg Config) (*world, []Failure) {
	if cfg.Members < 1 {
		cfg.Members = 3
	}
	if cfg.Clients < 1 {
		cfg.Clients = 3
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 30 * time.Second
	}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	w.passwords = prngReader{rand.New(rand.NewPCG(cfg.Seed^0x70617373, cfg.Seed))}
	w.giveUps = rand.New(rand.NewPCG(cfg.Seed^0x67697665, cfg.Seed))
	saved := crand.Reader
	crand.Reader = prngReader{rand.New(rand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))}
	defer func() { crand.Reader = saved }()
	// From a PRNG of its own: choosing changes no other draw.
	w.snapEvery, w.keepEntries = compactEvery, keepEntries
	if logRng := rand.New(rand.NewPCG(cfg.Seed^0x6c6f67, cfg.Seed)); logRng.IntN(tightLogOdds) == 0 {
		w.tightLog = true
		w.snapEvery, w.keepEntries = tightCompactEvery, 1+logRng.Uint64N(tightKeepMax)
		w.tracef("tight log: snapshot every %d entries, keep %d", w.snapEvery, w.keepEntries)
	}

	w.net = newNetwork(w)
	w.chk = newChecks(w)
	w.startMembers()
	for i := 0; i < cfg.Clients; i++ {
		c := newClient(w, i)
		w.clients = append(w.clients, c)
		w.after(w.between(0, 200*time.Millisecond), c.reconnect)
	}
	faultEnd := time.Duration(float64(cfg.Duration) * faultFraction)
	w.faulty = true
	w.profile = w.rng.IntN(profileCount)
	w.after(w.between(500*time.Millisecond, 2*time.Second), w.injectFault)
	w.after(faultEnd, w.heal)
	// After the duration, clients start nothing new and the members get
	// drainTime to finish what is in flight before the final checks.
	w.after(cfg.Duration, func() {
		w.draining = true
		w.tracef("run ends: clients stop, members drain")
	})
	if !w.loop() {
		return w, w.failed
	}
	w.chk.final()
	w.finalMembership()
	w.tracef("%d register operations, %d lock holds, %d acknowledged writes, %d expiries",
		len(w.chk.history), w.chk.increments, len(w.chk.ackedAt), len(w.chk.expiryDone))
	return w, w.failed
}
