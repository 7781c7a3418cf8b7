package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

type endpointHooks struct{ applied []Applied }

func (h *endpointHooks) Applied(a Applied)             { h.applied = append(h.applied, a) }
func (*endpointHooks) SessionCreated(session.Session)  {}
func (*endpointHooks) SessionClosed(int64, bool)       {}
func (*endpointHooks) SessionTouched(int64)            {}
func (*endpointHooks) ExpiryRefused(s session.Session) {}

// endpointRig is a Replica with one session and an Endpoint on it; apply
// commits a proposal at the next index.
type endpointRig struct {
	t     *testing.T
	rep   *Replica
	hooks *endpointHooks
	ep    *Endpoint
	index uint64
}

const endpointSession = 0x77

func newEndpointRig(t *testing.T, auth []jute.Id) *endpointRig {
	h := &endpointHooks{}
	g := &endpointRig{t: t, rep: NewReplica(znode.Options{}, h, zerolog.Nop()), hooks: h}
	g.apply(&Proposal{Type: ProposalCreateSession, SessionID: endpointSession,
		Body: CreateSessionBody(endpointSession, 10000, make([]byte, 16))})
	g.apply(&Proposal{Type: ProposalAttachSession, SessionID: endpointSession, ConnID: 5})
	g.ep = g.rep.NewEndpoint(endpointSession, 5, auth, znode.Options{ExtendedTypesEnabled: true}, jute.DefaultMaxBuffer, nil)
	return g
}

func (g *endpointRig) apply(p *Proposal) Applied {
	g.t.Helper()
	g.index++
	p.Proposer, p.ReqID = 1, g.index
	n := len(g.hooks.applied)
	if err := g.rep.Apply(g.index, 1, p.Encode()); err != nil {
		g.t.Fatalf("apply: %v", err)
	}
	if len(g.hooks.applied) != n+1 {
		g.t.Fatalf("apply reported %d results", len(g.hooks.applied)-n)
	}
	return g.hooks.applied[n]
}

// request sends one request and, if it is proposed, applies it and returns
// its reply.
func (g *endpointRig) request(xid, op int32, body jute.Record) (Step, []byte) {
	g.t.Helper()
	frame := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
	if body != nil {
		frame = append(frame, jute.Marshal(body)...)
	}
	g.ep.Receive(frame)
	steps, handled, err := g.ep.Next()
	if err != nil || handled != 1 || len(steps) > 1 {
		g.t.Fatalf("request: %d handled, steps %+v, err %v", handled, steps, err)
	}
	var s Step
	if len(steps) == 1 {
		s = steps[0]
	}
	if s.Close {
		return s, nil
	}
	if s.Propose != nil {
		g.ep.Applied(s, g.apply(s.Propose))
	}
	wire, _ := g.ep.Replies()
	return s, wire
}

// decodeReplyFrame checks a reply frame's length prefix and decodes its
// header, then body (if not nil and the reply succeeded).
func decodeReplyFrame(t *testing.T, f []byte, body jute.Record) jute.ReplyHeader {
	t.Helper()
	if len(f) < 4 || int(binary.BigEndian.Uint32(f)) != len(f)-4 {
		t.Fatalf("bad frame % x", f)
	}
	d := jute.NewDecoder(f[4:], len(f))
	var h jute.ReplyHeader
	if err := d.ReadRecord(&h); err != nil {
		t.Fatalf("reply header: %v", err)
	}
	if body != nil && h.Err == 0 {
		if err := d.ReadRecord(body); err != nil {
			t.Fatalf("reply body: %v", err)
		}
	}
	return h
}

func TestEndpointWrites(t *testing.T) {
	auth := []jute.Id{{Scheme: "ip", ID: "10.0.0.1"}}
	g := newEndpointRig(t, auth)
	open := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	onlyIP := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "ip", ID: "10.0.0.1"}}}
	tests := []struct {
		name     string
		op       int32
		body     jute.Record
		wantProp bool
		wantErr  int32
		resp     jute.Record
		check    func(t *testing.T, resp jute.Record, h jute.ReplyHeader)
	}{
		{name: "create", op: jute.OpCreate, body: &jute.CreateRequest{Path: "/a", Data: []byte("1"), ACL: open},
			wantProp: true, resp: &jute.CreateResponse{}, check: func(t *testing.T, r jute.Record, _ jute.ReplyHeader) {
				if p := r.(*jute.CreateResponse).Path; p != "/a" {
					t.Errorf("path %q", p)
				}
			}},
		{name: "create2 under an ip ACL the connection's ip id passes", op: jute.OpCreate2,
			body: &jute.CreateRequest{Path: "/ip", ACL: onlyIP}, wantProp: true, resp: &jute.Create2Response{}},
		{name: "setData returns the stat", op: jute.OpSetData, body: &jute.SetDataRequest{Path: "/a", Data: []byte("2"), Version: 0},
			wantProp: true, resp: &jute.StatResponse{}, check: func(t *testing.T, r jute.Record, h jute.ReplyHeader) {
				if st := r.(*jute.StatResponse).Stat; st.Version != 1 || st.Mzxid != h.Zxid {
					t.Errorf("stat %+v, reply zxid %#x", st, h.Zxid)
				}
			}},
		{name: "bad version: refused at apply", op: jute.OpSetData, body: &jute.SetDataRequest{Path: "/a", Version: 7},
			wantProp: true, wantErr: jute.ErrBadVersion},
		{name: "TTL node with the endpoint's options", op: jute.OpCreateTTL,
			body:     &jute.CreateTTLRequest{Path: "/ttl", ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: 1000},
			wantProp: true, resp: &jute.Create2Response{}},
		{name: "undecodable body: refused before proposing", op: jute.OpSetData, body: &jute.PathRequest{Path: "/a"},
			wantErr: jute.ErrMarshallingError},
		{name: "deleteContainer from a client", op: jute.OpDeleteContainer, body: &jute.PathRequest{Path: "/a"},
			wantErr: jute.ErrBadArguments},
		{name: "delete", op: jute.OpDelete, body: &jute.DeleteRequest{Path: "/ip", Version: -1}, wantProp: true},
	}
	seq := uint64(0)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xid := int32(100 + i)
			s, f := g.request(xid, tt.op, tt.body)
			if (s.Propose != nil) != tt.wantProp {
				t.Fatalf("proposed %v, want %v", s.Propose != nil, tt.wantProp)
			}
			if p := s.Propose; p != nil {
				seq++
				if p.SessionID != endpointSession || p.ConnID != 5 || p.Seq != seq || p.Cxid != xid ||
					!slicesEqualIDs(p.Auth, auth) || !p.Options.ExtendedTypesEnabled {
					t.Errorf("proposal %+v", p)
				}
			}
			h := decodeReplyFrame(t, f, tt.resp)
			if h.Xid != xid || h.Err != tt.wantErr {
				t.Fatalf("reply xid %d err %d, want %d %d", h.Xid, h.Err, xid, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, tt.resp, h)
			}
		})
	}
}

func slicesEqualIDs(a, b []jute.Id) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEndpointReads(t *testing.T) {
	g := newEndpointRig(t, nil)
	open := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	secret := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "digest", ID: "u:h"}}}
	g.request(1, jute.OpCreate, &jute.CreateRequest{Path: "/r", Data: []byte("v"), ACL: open})
	g.request(2, jute.OpCreate, &jute.CreateRequest{Path: "/r/c", ACL: open})
	g.request(3, jute.OpCreate, &jute.CreateRequest{Path: "/s", ACL: secret})

	var data jute.GetDataResponse
	_, f := g.request(10, jute.OpGetData, &jute.PathWatchRequest{Path: "/r", Watch: true})
	if h := decodeReplyFrame(t, f, &data); h.Err != 0 || string(data.Data) != "v" || h.Zxid != g.rep.LastZxid() {
		t.Fatalf("getData: %+v %+v", h, data)
	}
	var ch jute.GetChildrenResponse
	_, f = g.request(11, jute.OpGetChildren, &jute.PathWatchRequest{Path: "/r"})
	if h := decodeReplyFrame(t, f, &ch); h.Err != 0 || len(ch.Children) != 1 || ch.Children[0] != "c" {
		t.Fatalf("getChildren: %+v %+v", h, ch)
	}
	for _, c := range []struct {
		path string
		want int32
	}{{"/missing", jute.ErrNoNode}, {"/s", jute.ErrNoAuth}} {
		_, f = g.request(12, jute.OpGetData, &jute.PathWatchRequest{Path: c.path})
		if h := decodeReplyFrame(t, f, nil); h.Err != c.want {
			t.Errorf("getData %s: err %d, want %d", c.path, h.Err, c.want)
		}
	}

	// The watch set by the read fires on the change, before its reply.
	_, f = g.request(13, jute.OpSetData, &jute.SetDataRequest{Path: "/r", Data: []byte("w"), Version: -1})
	want := notificationFrame(jute.EventNodeDataChanged, "/r")
	if !bytes.HasPrefix(f, want) {
		t.Fatalf("wire % x, want the event % x first", f, want)
	}
	if h := decodeReplyFrame(t, f[len(want):], nil); h.Xid != 13 {
		t.Fatalf("setData reply %+v", h)
	}
	g.ep.Close() // drops its watches
	_, f = g.request(14, jute.OpSetData, &jute.SetDataRequest{Path: "/r", Data: []byte("x"), Version: -1})
	if h := decodeReplyFrame(t, f, nil); h.Xid != 14 {
		t.Fatalf("setData after Close: reply %+v (one frame, no event)", h)
	}

	s, f := g.request(15, jute.OpSync, &jute.PathRequest{Path: "/r"})
	if !s.Sync || f != nil {
		t.Fatalf("sync: %+v, wire % x", s, f)
	}
	g.ep.Synced(s)
	f, _ = g.ep.Replies()
	var sp jute.PathRequest
	if h := decodeReplyFrame(t, f, &sp); h.Xid != 15 || sp.Path != "/r" || h.Zxid != g.rep.LastZxid() {
		t.Fatalf("sync reply %+v %+v", h, sp)
	}
	_, f = g.request(jute.XidPing, jute.OpPing, nil)
	if h := decodeReplyFrame(t, f, nil); h.Xid != jute.XidPing || h.Zxid != g.rep.LastZxid() {
		t.Fatalf("ping reply %+v", h)
	}
	g.ep.Receive(jute.Marshal(&jute.RequestHeader{Xid: 16, Type: jute.OpAuth}))
	if _, _, err := g.ep.Next(); !errors.Is(err, ErrNotInEndpoint) {
		t.Fatalf("auth: err %v", err)
	}
	g.ep.Receive([]byte{0, 1})
	if steps, _, _ := g.ep.Next(); len(steps) != 1 || !steps[0].Close {
		t.Fatal("short frame not closing")
	}
}

// TestEndpointSyncWithoutBarrier: under the sync-without-barrier mutation a
// sync is answered at once, with no barrier to wait for.
func TestEndpointSyncWithoutBarrier(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			if err := mutation.Set(mutation.SyncWithoutBarrier, on); err != nil {
				t.Fatal(err)
			}
			defer mutation.Reset()
			g := newEndpointRig(t, nil)
			s, f := g.request(1, jute.OpSync, &jute.PathRequest{Path: "/"})
			if s.Sync == on || (f != nil) != on {
				t.Fatalf("mutation %v: sync step %+v", on, s)
			}
		})
	}
}

// decodeConnectResponse decodes a ConnectResponse frame (length prefix
// included).
func decodeConnectResponse(t *testing.T, frame []byte) jute.ConnectResponse {
	t.Helper()
	if len(frame) < 4 || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		t.Fatalf("bad connect response frame % x", frame)
	}
	var resp jute.ConnectResponse
	resp.HasReadOnly = true // read the readOnly byte when present
	if err := jute.Unmarshal(frame[4:], &resp); err != nil {
		t.Fatalf("decode connect response: %v", err)
	}
	return resp
}

func TestEndpointConnect(t *testing.T) {
	passwd := bytes.Repeat([]byte{7}, 16) // endpointSession's is 16 zeros
	cfg := ConnectConfig{MinSessionTimeoutMs: 4000, MaxSessionTimeoutMs: 40000,
		NewSessionID: func() int64 { return 0x99 }}
	tests := []struct {
		name    string
		req     jute.ConnectRequest
		frame   []byte // instead of req
		closing bool
		// after its entry applied, before the answer: another connection
		// takes the session over
		moved   bool
		wantErr error // nil: any error when errAny
		errAny  bool
		// wantPropose: the entry type proposed (0: answered at once)
		wantPropose int32
		wantSession int64
		wantTimeout int32
		wantPasswd  []byte
		wantOK      bool
		wantRO      bool
	}{
		{name: "new session, timeout below min", req: jute.ConnectRequest{TimeOut: 100},
			wantPropose: ProposalCreateSession, wantSession: 0x99, wantTimeout: 4000, wantOK: true},
		{name: "new session, timeout above max, read-only flag", req: jute.ConnectRequest{TimeOut: 90000, HasReadOnly: true},
			wantPropose: ProposalCreateSession, wantSession: 0x99, wantTimeout: 40000, wantOK: true, wantRO: true},
		{name: "new session, timeout within bounds", req: jute.ConnectRequest{TimeOut: 6000},
			wantPropose: ProposalCreateSession, wantSession: 0x99, wantTimeout: 6000, wantOK: true},
		{name: "reattach with password", req: jute.ConnectRequest{TimeOut: 5000, SessionID: endpointSession, Passwd: make([]byte, 16)},
			wantPropose: ProposalAttachSession, wantSession: endpointSession, wantTimeout: 5000, wantPasswd: make([]byte, 16), wantOK: true},
		{name: "reattach with wrong password", req: jute.ConnectRequest{TimeOut: 5000, SessionID: endpointSession, Passwd: passwd}},
		{name: "reattach without password", req: jute.ConnectRequest{TimeOut: 5000, SessionID: endpointSession}},
		{name: "reattach unknown session", req: jute.ConnectRequest{TimeOut: 5000, SessionID: 0x1234, Passwd: make([]byte, 16), HasReadOnly: true},
			wantRO: true},
		{name: "reattach closing session", req: jute.ConnectRequest{TimeOut: 5000, SessionID: endpointSession, Passwd: make([]byte, 16)},
			closing: true},
		{name: "session moved before the answer", req: jute.ConnectRequest{TimeOut: 5000, SessionID: endpointSession, Passwd: make([]byte, 16)},
			moved: true, wantPropose: ProposalAttachSession, wantSession: endpointSession, wantTimeout: 5000},
		{name: "client ahead", req: jute.ConnectRequest{LastZxidSeen: 1 << 40}, wantErr: errClientAhead},
		{name: "malformed", frame: []byte{0, 0, 0}, errAny: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newEndpointRig(t, nil)
			c := cfg
			c.Rand = bytes.NewReader(passwd)
			c.Closing = func(int64) bool { return tt.closing }
			frame := tt.frame
			if frame == nil {
				frame = jute.Marshal(&tt.req)
			}
			conn, err := g.rep.Connect(frame, 9, c)
			if tt.wantErr != nil || tt.errAny {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("Connect: err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if tt.wantPropose == 0 {
				if conn.Propose != nil || conn.Reply == nil {
					t.Fatalf("want the expired answer, got propose %+v", conn.Propose)
				}
				resp := decodeConnectResponse(t, conn.Reply)
				if resp.TimeOut != 0 || resp.SessionID != 0 || !bytes.Equal(resp.Passwd, make([]byte, 16)) || resp.HasReadOnly != tt.wantRO {
					t.Fatalf("expired answer %+v", resp)
				}
				return
			}
			p := conn.Propose
			if p == nil || p.Type != tt.wantPropose || p.SessionID != tt.wantSession || p.ConnID != 9 || conn.TimeoutMs != tt.wantTimeout {
				t.Fatalf("propose %+v timeout %d", p, conn.TimeoutMs)
			}
			a := g.apply(p)
			if tt.moved {
				g.apply(&Proposal{Type: ProposalAttachSession, SessionID: endpointSession, ConnID: 11})
			}
			frame, ok := g.rep.Connected(conn, a)
			if ok != tt.wantOK || frame == nil {
				t.Fatalf("Connected: ok %v frame %v (applied %+v)", ok, frame != nil, a)
			}
			resp := decodeConnectResponse(t, frame)
			if !ok {
				if resp.TimeOut != 0 || resp.SessionID != 0 {
					t.Fatalf("want the expired answer, got %+v", resp)
				}
				return
			}
			want := tt.wantPasswd
			if want == nil {
				want = passwd // read from Rand
			}
			if resp.SessionID != tt.wantSession || resp.TimeOut != tt.wantTimeout || !bytes.Equal(resp.Passwd, want) || resp.HasReadOnly != tt.wantRO {
				t.Fatalf("answer %+v", resp)
			}
			if !g.rep.HasSession(tt.wantSession) {
				t.Fatalf("session %#x not live", tt.wantSession)
			}
		})
	}
}

func TestEndpointConnectedFailedEntry(t *testing.T) {
	g := newEndpointRig(t, nil)
	// A createSession whose id is live fails: the connection is closed
	// without an answer.
	conn, err := g.rep.Connect(jute.Marshal(&jute.ConnectRequest{TimeOut: 5000}), 9, ConnectConfig{
		MinSessionTimeoutMs: 4000, MaxSessionTimeoutMs: 40000, Rand: bytes.NewReader(make([]byte, 16)),
		NewSessionID: func() int64 { return endpointSession }})
	if err != nil {
		t.Fatal(err)
	}
	a := g.apply(conn.Propose)
	if a.Err == 0 {
		t.Fatalf("createSession of a live id applied: %+v", a)
	}
	if frame, ok := g.rep.Connected(conn, a); frame != nil || ok {
		t.Fatalf("Connected: frame %v ok %v, want no answer", frame != nil, ok)
	}
}

// splitFrames splits a wire of reply frames into their headers and the
// getData bodies of successful getData replies (by xid).
func splitFrames(t *testing.T, wire []byte) (hdrs []jute.ReplyHeader, data map[int32]string) {
	t.Helper()
	data = map[int32]string{}
	for len(wire) > 0 {
		n := int(binary.BigEndian.Uint32(wire))
		d := jute.NewDecoder(wire[4:4+n], n)
		var h jute.ReplyHeader
		if err := d.ReadRecord(&h); err != nil {
			t.Fatal(err)
		}
		var r jute.GetDataResponse
		if h.Err == 0 && d.ReadRecord(&r) == nil {
			data[h.Xid] = string(r.Data)
		}
		hdrs = append(hdrs, h)
		wire = wire[4+n:]
	}
	return hdrs, data
}

// TestEndpointFifo drives pipelined requests through the Endpoint's queue:
// replies in request order, a read after a write on the connection sees it,
// a write waits behind earlier reads and syncs, a failed proposal closes
// the connection without a reply; and, under read-overtakes-write, the
// read pipelined behind a write does not see it.
func TestEndpointFifo(t *testing.T) {
	open := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}}
	frame := func(xid, op int32, body jute.Record) []byte {
		f := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
		if body != nil {
			f = append(f, jute.Marshal(body)...)
		}
		return f
	}
	set := func(xid int32, v string) []byte {
		return frame(xid, jute.OpSetData, &jute.SetDataRequest{Path: "/r", Data: []byte(v), Version: -1})
	}
	get := func(xid int32) []byte { return frame(xid, jute.OpGetData, &jute.PathWatchRequest{Path: "/r"}) }
	sync := func(xid int32) []byte { return frame(xid, jute.OpSync, &jute.PathRequest{Path: "/r"}) }
	tests := []struct {
		name    string
		mutated bool
		run     func(t *testing.T, g *endpointRig)
	}{
		{name: "a read pipelined behind a write sees it", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(set(1, "new"))
			g.ep.Receive(get(2))
			steps, handled, err := g.ep.Next()
			require.NoError(t, err)
			require.Equal(t, 2, handled)
			require.Len(t, steps, 1)
			wire, closed := g.ep.Replies()
			require.Empty(t, wire, "nothing before the write applied")
			require.False(t, closed)
			a := g.apply(steps[0].Propose)
			g.ep.Applied(steps[0], a)
			wire, _ = g.ep.Replies()
			hdrs, data := splitFrames(t, wire)
			require.Len(t, hdrs, 2)
			require.Equal(t, []int32{1, 2}, []int32{hdrs[0].Xid, hdrs[1].Xid})
			require.Equal(t, a.Zxid, hdrs[1].Zxid)
			require.Equal(t, "new", data[2])
		}},
		{name: "read-overtakes-write: the read misses the write before it", mutated: true, run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(set(1, "new"))
			g.ep.Receive(get(2))
			steps, _, err := g.ep.Next()
			require.NoError(t, err)
			a := g.apply(steps[0].Propose)
			g.ep.Applied(steps[0], a)
			wire, _ := g.ep.Replies()
			hdrs, data := splitFrames(t, wire)
			require.Equal(t, []int32{1, 2}, []int32{hdrs[0].Xid, hdrs[1].Xid}, "still in order")
			require.Less(t, hdrs[1].Zxid, a.Zxid)
			require.Equal(t, "old", data[2])
		}},
		{name: "a write waits until the read before it was answered", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(get(1))
			g.ep.Receive(set(2, "new"))
			g.ep.Receive(get(3))
			steps, handled, err := g.ep.Next()
			require.NoError(t, err)
			require.Equal(t, 1, handled, "the write and what follows it wait")
			require.Empty(t, steps)
			wire, _ := g.ep.Replies()
			_, data := splitFrames(t, wire)
			require.Equal(t, "old", data[1])
			steps, handled, err = g.ep.Next()
			require.NoError(t, err)
			require.Equal(t, 2, handled)
			require.Len(t, steps, 1)
			g.ep.Applied(steps[0], g.apply(steps[0].Propose))
			wire, _ = g.ep.Replies()
			hdrs, data := splitFrames(t, wire)
			require.Equal(t, []int32{2, 3}, []int32{hdrs[0].Xid, hdrs[1].Xid})
			require.Equal(t, "new", data[3])
		}},
		{name: "sync, read, write: the read waits for the barrier, the write for both", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(sync(1))
			g.ep.Receive(get(2))
			g.ep.Receive(set(3, "new"))
			steps, handled, err := g.ep.Next()
			require.NoError(t, err)
			require.Equal(t, 2, handled)
			require.Len(t, steps, 1)
			require.True(t, steps[0].Sync)
			wire, _ := g.ep.Replies()
			require.Empty(t, wire)
			g.ep.Synced(steps[0])
			wire, _ = g.ep.Replies()
			hdrs, _ := splitFrames(t, wire)
			require.Equal(t, []int32{1, 2}, []int32{hdrs[0].Xid, hdrs[1].Xid})
			steps, _, err = g.ep.Next()
			require.NoError(t, err)
			require.Len(t, steps, 1)
			require.NotNil(t, steps[0].Propose)
		}},
		{name: "a failed proposal closes the connection without a reply", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(set(1, "new"))
			g.ep.Receive(get(2))
			steps, _, err := g.ep.Next()
			require.NoError(t, err)
			g.ep.Failed(steps[0])
			wire, closed := g.ep.Replies()
			require.Empty(t, wire)
			require.True(t, closed)
		}},
		{name: "a ping reply waits behind a reply with a lower zxid in flight", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(set(1, "new"))
			steps, _, err := g.ep.Next()
			require.NoError(t, err)
			a := g.apply(steps[0].Propose)
			g.apply(&Proposal{Type: jute.OpSetData, SessionID: endpointSession,
				Body: jute.Marshal(&jute.SetDataRequest{Path: "/r", Data: []byte("other"), Version: -1})})
			g.ep.Receive(frame(jute.XidPing, jute.OpPing, nil))
			_, _, err = g.ep.Next()
			require.NoError(t, err)
			g.ep.Applied(steps[0], a)
			wire, _ := g.ep.Replies()
			hdrs, _ := splitFrames(t, wire)
			require.Len(t, hdrs, 2)
			require.Equal(t, []int32{1, jute.XidPing}, []int32{hdrs[0].Xid, hdrs[1].Xid})
			require.LessOrEqual(t, hdrs[0].Zxid, hdrs[1].Zxid)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer mutation.Reset()
			require.NoError(t, mutation.Set(mutation.ReadOvertakesWrite, tt.mutated))
			g := newEndpointRig(t, nil)
			g.request(100, jute.OpCreate, &jute.CreateRequest{Path: "/r", Data: []byte("old"), ACL: open})
			tt.run(t, g)
		})
	}
}

// TestEndpointClose: Endpoint handles a session's end as the server's
// connection does: nothing received after a closeSession is handled (the
// reader stops reading there), and a write of a session its member marked
// closing is refused with SessionExpired, not proposed.
func TestEndpointClose(t *testing.T) {
	set := func(xid int32) []byte {
		return append(jute.Marshal(&jute.RequestHeader{Xid: xid, Type: jute.OpSetData}),
			jute.Marshal(&jute.SetDataRequest{Path: "/", Data: []byte("after close"), Version: -1})...)
	}
	tests := []struct {
		name    string
		closing bool
		run     func(t *testing.T, g *endpointRig)
	}{
		{name: "nothing after a closeSession is handled", run: func(t *testing.T, g *endpointRig) {
			g.ep.Receive(jute.Marshal(&jute.RequestHeader{Xid: 1, Type: jute.OpCloseSession}))
			g.ep.Receive(set(2))
			steps, handled, err := g.ep.Next()
			require.NoError(t, err)
			require.Equal(t, 1, handled, "the write after the closeSession was handled")
			require.Len(t, steps, 1)
			require.Equal(t, jute.OpCloseSession, steps[0].Op)
			g.ep.Applied(steps[0], g.apply(steps[0].Propose))
			wire, closed := g.ep.Replies()
			hdrs, _ := splitFrames(t, wire)
			require.Len(t, hdrs, 1)
			require.Equal(t, int32(1), hdrs[0].Xid)
			require.True(t, closed)
			steps, handled, err = g.ep.Next()
			require.NoError(t, err)
			require.Zero(t, handled, "handled after the connection closed")
			require.Empty(t, steps)
		}},
		{name: "a write of a closing session is refused", closing: true, run: func(t *testing.T, g *endpointRig) {
			s, wire := g.request(2, jute.OpSetData, &jute.SetDataRequest{Path: "/", Data: []byte("x"), Version: -1})
			require.Nil(t, s.Propose, "a closing session's write proposed")
			hdrs, _ := splitFrames(t, wire)
			require.Len(t, hdrs, 1)
			require.Equal(t, jute.ErrSessionExpired, hdrs[0].Err)
			_, wire = g.request(3, jute.OpExists, &jute.PathWatchRequest{Path: "/"})
			hdrs, _ = splitFrames(t, wire)
			require.Len(t, hdrs, 1)
			require.Zero(t, hdrs[0].Err, "reads of a closing session go on, as on the server")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newEndpointRig(t, nil)
			closing := func(id int64) bool { return tt.closing && id == endpointSession }
			g.ep = g.rep.NewEndpoint(endpointSession, 5, nil, znode.Options{}, jute.DefaultMaxBuffer, closing)
			tt.run(t, g)
		})
	}
}

// TestConnectResponseFrame: the frame holds the response, with the readOnly
// byte only when the request had it, and takes no more allocations than the
// encoder and its buffer (a growing encoder took four, on every handshake).
func TestConnectResponseFrame(t *testing.T) {
	tests := []struct {
		name     string
		readOnly bool
		wantLen  int
	}{
		{"client without the readOnly byte", false, connectResponseFrameSize - 1},
		{"client with the readOnly byte", true, connectResponseFrameSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &jute.ConnectResponse{TimeOut: 4000, SessionID: 0x1234, Passwd: bytes.Repeat([]byte{7}, 16), HasReadOnly: tt.readOnly}
			frame := connectResponseFrame(resp)
			if len(frame) != tt.wantLen {
				t.Fatalf("frame of %d bytes, want %d", len(frame), tt.wantLen)
			}
			got := decodeConnectResponse(t, frame)
			if got.TimeOut != resp.TimeOut || got.SessionID != resp.SessionID || !bytes.Equal(got.Passwd, resp.Passwd) {
				t.Fatalf("decoded %+v, want %+v", got, resp)
			}
			if n := testing.AllocsPerRun(100, func() { _ = connectResponseFrame(resp) }); n > 2 {
				t.Fatalf("%v allocations per frame, want at most 2", n)
			}
		})
	}
}
