package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/server"
)

// connRig is one member with one client connection on it, outside a run:
// entries are applied to the member's Replica directly, and the world's
// events (the member's pumps, the client's receipts) run on loop.
type connRig struct {
	t     *testing.T
	w     *world
	m     *member
	c     *client
	conn  *mconn
	index uint64
}

const rigSession = 0x77

func newConnRig(t *testing.T) *connRig {
	w := &world{cfg: Config{Members: 1, Duration: time.Minute}, rng: rand.New(rand.NewPCG(1, 2))}
	w.chk = newChecks(w)
	m := &member{w: w, id: 1, up: true, conns: map[uint64]*mconn{},
		rep: server.NewReplica(treeOptions, nopHooks{}, zerolog.Nop())}
	g := &connRig{t: t, w: w, m: m, c: newClient(w, 0)}
	g.apply(&server.Proposal{Type: server.ProposalCreateSession, SessionID: rigSession,
		Body: server.CreateSessionBody(rigSession, 10000, make([]byte, 16))})
	g.apply(&server.Proposal{Type: server.ProposalAttachSession, SessionID: rigSession, ConnID: 7})
	g.c.connID = 7
	g.conn = &mconn{id: 7, client: g.c, session: rigSession, active: true, notes: map[int32]string{},
		ep: m.rep.NewEndpoint(rigSession, 7, nil, treeOptions, juteMaxBuffer, nil)}
	m.conns[7] = g.conn
	return g
}

// apply applies p on the member as stateMachine.Apply does after its
// checkers: the Replica's apply, then the writers it wakes.
func (g *connRig) apply(p *server.Proposal) {
	g.t.Helper()
	g.index++
	p.Proposer, p.ReqID = 1, g.index
	if err := g.m.rep.Apply(g.index, 1, p.Encode()); err != nil {
		g.t.Fatalf("apply: %v", err)
	}
	g.m.wakeWriters()
}

// watch sends a getData of path with a watch on the connection and runs
// the world until the client has the reply.
func (g *connRig) watch(path string) {
	g.c.inflight = append(g.c.inflight, &call{xid: 1, op: jute.OpGetData, path: path, watch: true})
	f := append(jute.Marshal(&jute.RequestHeader{Xid: 1, Type: jute.OpGetData}),
		jute.Marshal(&jute.PathWatchRequest{Path: path, Watch: true})...)
	g.conn.ep.Receive(f) // as member.handle
	g.m.pump(g.conn)
	g.w.loop()
	if _, ok := g.c.order.armed[path]; len(g.c.inflight) != 0 || !ok {
		g.t.Fatalf("the watching read was not answered (checkers: %v)", g.w.failed)
	}
}

// setData changes path by an entry of another connection of the session.
func (g *connRig) setData(path string) {
	g.apply(&server.Proposal{Type: jute.OpSetData, SessionID: rigSession,
		Body: jute.Marshal(&jute.SetDataRequest{Path: path, Data: []byte("x"), Version: -1})})
}

// TestMemberWakesWriters: a notification an apply queued on a connection
// is written to its client without the client sending anything, as the
// server's notify wakes the connection's writer; and a connection the
// member closed keeps no watch.
func TestMemberWakesWriters(t *testing.T) {
	t.Run("an event reaches an idle client", func(t *testing.T) {
		g := newConnRig(t)
		g.watch("/")
		g.setData("/")
		g.w.loop()
		if _, ok := g.c.order.armed["/"]; ok {
			t.Fatal("the watch's event did not reach the client, which sent nothing after its read")
		}
		if len(g.w.failed) > 0 {
			t.Fatalf("checkers failed: %v", g.w.failed)
		}
	})
	t.Run("a closed connection keeps no watch", func(t *testing.T) {
		g := newConnRig(t)
		g.watch("/")
		g.m.closeConn(g.conn)
		g.setData("/")
		if g.conn.ep.Wake() {
			t.Fatal("a change queued a notification on a closed connection: its watch was kept")
		}
	})
}
