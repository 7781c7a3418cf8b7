package sim

import (
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// network carries raft messages and liveness reports between members. A
// link from a to b is cut while cut[a][b]; a message also needs both ends up
// at delivery. Paused members keep what arrives and handle it on resume.
type network struct {
	w        *world
	cut      [][]bool
	dropP    float64
	dupP     float64
	maxDelay time.Duration
}

func newNetwork(w *world) *network {
	n := &network{w: w, maxDelay: 10 * time.Millisecond}
	n.cut = make([][]bool, w.cfg.Members+maxAdded)
	for i := range n.cut {
		n.cut[i] = make([]bool, w.cfg.Members+maxAdded)
	}
	return n
}

// send delivers fn at member to after a random delay, unless the message
// is lost. It reports whether the message was (first) scheduled; for each
// copy scheduled and then not handled (the link cut at arrival, the
// receiver down then or crashing while paused with it waiting), lost is
// called if set.
func (n *network) send(from, to int, fn, lost func()) bool {
	if n.cut[from][to] || n.w.chance(n.dropP) {
		return false
	}
	copies := 1
	if n.w.chance(n.dupP) {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		n.w.after(n.w.between(500*time.Microsecond, n.maxDelay), func() {
			if n.cut[from][to] {
				if lost != nil {
					lost()
				}
				return
			}
			n.w.members[to].deliver(fn, lost)
		})
	}
	return true
}

// sendRaft sends a raft message from member index from.
func (n *network) sendRaft(from int, m *pb.Message) {
	to := int(m.GetTo()) - 1
	if to < 0 || to >= len(n.w.members) {
		return
	}
	if m.GetType() != pb.MsgSnap {
		n.send(from, to, func() { n.w.members[to].step(m) }, nil)
		return
	}
	// The leader must learn whether a snapshot arrived, or it waits for
	// that follower forever (raft's StateSnapshot): as the Transport, it
	// reports every MsgSnap, failed when it was not handled.
	sender := n.w.members[from]
	inc := sender.incarnation
	report := func(failed bool) {
		if sender.up && sender.incarnation == inc && sender.core != nil {
			sender.whenIdle(func() {
				sender.core.ReportSnapshot(m.GetTo(), failed)
				sender.process()
			})
		}
	}
	lost := func() {
		// From the event that lost it: the leader hears of it later.
		n.w.after(n.maxDelay, func() { report(true) })
	}
	if !n.send(from, to, func() {
		dst := n.w.members[to]
		if dst.core == nil {
			lost()
			return
		}
		dst.step(m)
		report(false)
	}, lost) {
		lost()
	}
}

// injectFault starts one fault and schedules the next.
func (w *world) injectFault() {
	if !w.faulty {
		return
	}
	w.net.dropP, w.net.dupP = 0.01, 0.01
	w.net.maxDelay = w.between(2*time.Millisecond, 30*time.Millisecond)
	n := len(w.members)
	m := w.members[w.rng.IntN(n)]
	if !m.inEnsemble() {
		w.after(w.between(300*time.Millisecond, 2*time.Second), w.injectFault)
		return
	}
	k := w.rng.IntN(10)
	switch w.profile {
	case profileMembers:
		k = []int{0, 1, 2, 3, 7, 8, 9}[w.rng.IntN(7)]
	case profileClients:
		k = 4 + w.rng.IntN(3)
	case profileLeader:
		k = 7
	}
	switch k {
	case 0: // crash and restart
		if m.up {
			m.crash()
			w.after(w.between(300*time.Millisecond, 3*time.Second), m.restart)
			if inc, at := m.incarnation, w.now; w.chance(0.5) {
				w.after(probeAfter, func() { w.probeRemoval(m, inc, at) })
			}
		}
	case 1: // pause (a stopped process: it neither ticks nor handles messages)
		if m.up && !m.paused {
			m.pause()
			d := w.between(200*time.Millisecond, 3*time.Second)
			w.notePause(m, w.now+d)
			w.after(d, m.resume)
		}
	case 2: // isolate a member both ways
		w.tracef("partition: member %d isolated", m.id)
		for j := 0; j < n; j++ {
			if j != m.idx {
				w.net.cut[m.idx][j], w.net.cut[j][m.idx] = true, true
			}
		}
		w.after(w.between(300*time.Millisecond, 3*time.Second), w.healLinks)
	case 3: // one-way link
		j := w.rng.IntN(n)
		if j != m.idx {
			w.tracef("partition: link %d->%d cut", m.id, j+1)
			w.net.cut[m.idx][j] = true
			w.after(w.between(300*time.Millisecond, 3*time.Second), w.healLinks)
		}
	case 4: // a client stops (GC pause) for about its session timeout
		c := w.clients[w.rng.IntN(len(w.clients))]
		c.pause(w.between(sessionTimeout-1500*time.Millisecond, sessionTimeout+1500*time.Millisecond))
	case 5: // a client stops until just about when the leader decides its expiry
		w.clients[w.rng.IntN(len(w.clients))].pauseUntilExpiry()
	case 7: // the leader stops, cut off from its peers, for longer than an election (issue 9)
		for _, l := range w.members {
			if l.up && !l.paused && l.isLeader {
				w.tracef("partition: leader %d isolated while paused", l.id)
				for j := 0; j < n; j++ {
					if j != l.idx {
						w.net.cut[l.idx][j], w.net.cut[j][l.idx] = true, true
					}
				}
				l.pause()
				pause := w.between(1500*time.Millisecond, 2500*time.Millisecond)
				w.notePause(l, w.now+pause)
				w.after(pause, l.resume)
				w.after(pause+w.between(200*time.Millisecond, 900*time.Millisecond), w.healLinks)
				break
			}
		}
	case 8: // reconfig: remove a voter (perhaps the leader), or add a new member
		w.reconfigure()
	case 9: // crash during the next disk write (torn write)
		if m.up && !m.paused {
			if w.chance(0.5) {
				m.disk.tear = true // at its end: after what overlapped it
			} else {
				m.crashMidWrite = true // at a random point while it runs
			}
		}
	case 6: // a client's connection breaks: it reattaches to a member
		c := w.clients[w.rng.IntN(len(w.clients))]
		if c.connID != 0 && !c.paused {
			c.disconnect("connection broken")
		}
	}
	next := w.between(300*time.Millisecond, 2*time.Second)
	if w.profile == profileLeader {
		next = w.between(2*time.Second, 4*time.Second) // one paused leader at a time
	}
	w.after(next, w.injectFault)
}

// Fault profiles: each seed draws one, so some runs are dominated by member
// faults (elections) and some by client pauses (session expiry races).
const (
	profileAll = iota
	profileMembers
	profileClients
	profileLeader
	profileCount
)

// maxAdded bounds the members reconfig adds in one run.
const maxAdded = 8

func (w *world) healLinks() {
	for i := range w.net.cut {
		for j := range w.net.cut[i] {
			w.net.cut[i][j] = false
		}
	}
	w.tracef("partitions healed")
}

// heal ends the fault period: every member up and running, no partitions,
// a reliable network.
func (w *world) heal() {
	w.faulty = false
	w.tracef("faults stop")
	w.healLinks()
	w.net.dropP, w.net.dupP, w.net.maxDelay = 0, 0, 5*time.Millisecond
	for _, m := range w.members {
		m.disk.tear, m.crashMidWrite = false, false // an armed torn write does not fire after the faults
		if !m.up {
			m.restart()
		}
		if m.paused {
			m.resume()
		}
	}
	w.chk.healedAt = w.now
	// One client dies for good once the faults stop: its session must
	// expire, and its ephemerals go, within the timeout plus a detection
	// bound (checks.final).
	if len(w.clients) > 1 && w.cfg.Duration+drainTime-w.now >= sessionTimeout+ephemeralBound+2*time.Second {
		c := w.clients[w.rng.IntN(len(w.clients))]
		w.after(w.between(0, 500*time.Millisecond), c.die)
	}
}
