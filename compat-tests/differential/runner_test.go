package differential_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// readTimeout bounds every read of a reply; a server that neither answers
// nor closes within it is recorded as "timeout".
const readTimeout = 5 * time.Second

// eventTimeout bounds a wait for a notification driven by a server timer.
const eventTimeout = 10 * time.Second

// record is what one side observed during one step.
type record struct {
	desc string   // the request as this side sent it
	obs  []string // normalised observations, in wire order
}

// slot is one connection of a side.
type slot struct {
	rc      *zktest.RawConn
	xid     int32
	session int64
	passwd  []byte
}

// side executes scripts against one server and keeps what later requests
// of that side may depend on.
type side struct {
	name   string
	addr   string
	norm   *normaliser
	slots  map[int]*slot
	labels map[string]int64 // step label -> zxid of its reply
	maxZx  int64            // largest zxid in any reply header
}

func newSide(name, addr string) *side {
	return &side{name: name, addr: addr, norm: newNormaliser(), slots: map[int]*slot{}, labels: map[string]int64{}}
}

// zxid returns the reply zxid remembered under label (0 if unknown).
func (sd *side) zxid(label string) int64 { return sd.labels[label] }

// sessionOf returns the session id and password last handed to slot.
func (sd *side) sessionOf(s int) (int64, []byte) {
	if sl := sd.slots[s]; sl != nil {
		return sl.session, sl.passwd
	}
	return 0, nil
}

// run executes every step of sc and returns one record per step.
func (sd *side) run(scriptIdx int, sc *script) []record {
	out := make([]record, len(sc.steps))
	for i, st := range sc.steps {
		sd.norm.at(scriptIdx, i)
		out[i] = sd.step(st)
	}
	// Leave nothing open for the next script.
	for k, sl := range sd.slots {
		if sl.rc != nil {
			sl.rc.Close()
		}
		delete(sd.slots, k)
	}
	return out
}

func (sd *side) step(st *step) record {
	switch st.kind {
	case kindConnect:
		return sd.connect(st)
	case kindCall:
		return sd.call(st)
	case kindRaw:
		return sd.raw(st)
	case kindBarrier:
		r := record{desc: fmt.Sprintf("[%d] barrier (ping)", st.slot)}
		r.obs = sd.ping(st.slot)
		if st.unorder {
			sortEvents(r.obs)
		}
		return r
	case kindProbe:
		return record{desc: fmt.Sprintf("[%d] probe (ping)", st.slot), obs: sd.probe(st.slot)}
	case kindWaitEvent:
		return record{desc: fmt.Sprintf("[%d] wait for a notification", st.slot), obs: sd.waitEvent(st.slot)}
	}
	panic(fmt.Sprintf("unknown step kind %d", st.kind))
}

func (sd *side) connect(st *step) record {
	c := st.conn
	req := jute.ConnectRequest{TimeOut: c.timeoutMs, Passwd: make([]byte, 16), HasReadOnly: !c.noReadOnly}
	desc := fmt.Sprintf("[%d] connect timeout=%d", st.slot, c.timeoutMs)
	if c.resume >= 0 {
		id, pw := sd.sessionOf(c.resume)
		req.SessionID, req.Passwd = id, slices.Clone(pw)
		if c.badPasswd && len(req.Passwd) > 0 {
			req.Passwd[0] ^= 0xff
		}
		desc += fmt.Sprintf(" resume=session of [%d] badPasswd=%v", c.resume, c.badPasswd)
	}
	if c.zxidAhead {
		req.LastZxidSeen = sd.maxZx + 1<<32
		desc += " lastZxidSeen=max+2^32"
	}
	if c.noReadOnly {
		desc += " (no readOnly byte)"
	}
	if old := sd.slots[st.slot]; old != nil && old.rc != nil {
		old.rc.Close()
	}
	rc, resp, err := zktest.DialRawRequest(sd.addr, req)
	if err != nil {
		sd.slots[st.slot] = &slot{}
		return record{desc: desc, obs: []string{"connect: " + errKind(err)}}
	}
	rc.SetTimeout(readTimeout)
	sd.slots[st.slot] = &slot{rc: rc, session: resp.SessionID, passwd: resp.Passwd}
	ro := "absent"
	if resp.HasReadOnly {
		ro = fmt.Sprint(resp.ReadOnly)
	}
	return record{desc: desc, obs: []string{fmt.Sprintf("connected proto=%d timeout=%d session=%s passwd=%s readOnly=%s",
		resp.ProtocolVersion, resp.TimeOut, sd.norm.session(resp.SessionID), sd.norm.passwd(resp.Passwd), ro)}}
}

// call sends the step's requests back to back and reads until each has its
// reply (or the connection ends).
func (sd *side) call(st *step) record {
	sl := sd.slots[st.slot]
	var descs []string
	pending := map[int32]int32{} // xid -> op
	var sendErr error
	for _, rq := range st.reqs {
		body := rq.body
		if rq.bodyFn != nil {
			body = rq.bodyFn(sd)
		}
		xid := rq.xid
		if xid == 0 {
			sl.xid++
			xid = sl.xid
		}
		descs = append(descs, fmt.Sprintf("xid=%d %s", xid, describe(rq.op, body)))
		if rq.op == jute.OpPing {
			pending[jute.XidPing] = rq.op
		}
		pending[xid] = rq.op
		if sendErr == nil {
			if sl == nil || sl.rc == nil {
				sendErr = errors.New("no connection")
			} else {
				sendErr = sl.rc.Send(xid, rq.op, body)
			}
		}
	}
	r := record{desc: fmt.Sprintf("[%d] %s", st.slot, strings.Join(descs, " | "))}
	if sendErr != nil {
		r.obs = []string{"send: " + errKind(sendErr)}
		return r
	}
	r.obs = sd.collect(sl, len(st.reqs), pending, st.label, st.aclSet)
	if st.unorder {
		sortEvents(r.obs)
	}
	if st.probe {
		r.obs = append(r.obs, sd.probe(st.slot)...)
	}
	if st.closes {
		r.obs = append(r.obs, sd.awaitClose(st.slot)...)
	}
	return r
}

func (sd *side) raw(st *step) record {
	sl := sd.slots[st.slot]
	r := record{desc: fmt.Sprintf("[%d] raw %s", st.slot, st.rawDesc)}
	if sl == nil || sl.rc == nil {
		r.obs = []string{"send: no connection"}
		return r
	}
	if err := sl.rc.WriteRaw(st.raw(sd)); err != nil {
		r.obs = []string{"send: " + errKind(err)}
		return r
	}
	if st.replies > 0 {
		r.obs = sd.collect(sl, st.replies, st.rawOps, st.label, false)
	}
	if st.probe {
		r.obs = append(r.obs, sd.probe(st.slot)...)
	}
	if st.closes {
		r.obs = append(r.obs, sd.awaitClose(st.slot)...)
	}
	return r
}

// ping sends a ping and records every frame up to its reply.
func (sd *side) ping(s int) []string {
	sl := sd.slots[s]
	if sl == nil || sl.rc == nil {
		return []string{"send: no connection"}
	}
	if err := sl.rc.Send(jute.XidPing, jute.OpPing, nil); err != nil {
		return []string{"send: " + errKind(err)}
	}
	return sd.collect(sl, 1, map[int32]int32{jute.XidPing: jute.OpPing}, "", false)
}

// waitEvent reads frames until a notification arrives (at most
// eventTimeout); no reply is expected meanwhile.
func (sd *side) waitEvent(s int) []string {
	sl := sd.slots[s]
	if sl == nil || sl.rc == nil {
		return []string{"no connection"}
	}
	sl.rc.SetTimeout(eventTimeout)
	defer sl.rc.SetTimeout(readTimeout)
	hdr, body, err := sl.rc.Recv()
	switch {
	case err != nil:
		return []string{errKind(err)}
	case hdr.Xid != jute.XidNotification:
		return []string{fmt.Sprintf("unexpected frame xid=%d err=%d", hdr.Xid, hdr.Err)}
	}
	return []string{fmt.Sprintf("event zxid=%s %s", sd.norm.zxid(hdr.Zxid), event(body))}
}

// awaitClose reads frames until the server closes the connection or
// closeTimeout passes, recording every frame read and the outcome.
func (sd *side) awaitClose(s int) []string {
	sl := sd.slots[s]
	if sl == nil || sl.rc == nil {
		return []string{"no connection"}
	}
	sl.rc.SetTimeout(closeTimeout)
	defer sl.rc.SetTimeout(readTimeout)
	var obs []string
	for {
		hdr, _, err := sl.rc.Recv()
		switch {
		case err == nil:
			obs = append(obs, fmt.Sprintf("frame xid=%d err=%d", hdr.Xid, hdr.Err))
		case zktest.IsClosed(err):
			return append(obs, "closed by the server")
		case zktest.IsTimeout(err):
			return append(obs, fmt.Sprintf("still open after %v", closeTimeout))
		default:
			return append(obs, "error: "+err.Error())
		}
	}
}

// closeTimeout bounds awaitClose.
const closeTimeout = 3 * time.Second

// probe records whether the connection is still served.
func (sd *side) probe(s int) []string {
	obs := sd.ping(s)
	last := obs[len(obs)-1]
	if strings.HasPrefix(last, "reply xid=-2 ") {
		obs[len(obs)-1] = "probe: open"
	} else if last == "closed" || strings.HasPrefix(last, "send: closed") {
		obs[len(obs)-1] = "probe: closed"
	}
	return obs
}

// collect reads frames until n replies (frames other than notifications)
// arrived, recording each one.
func (sd *side) collect(sl *slot, n int, pending map[int32]int32, label string, aclSet bool) []string {
	var obs []string
	for got := 0; got < n; {
		hdr, body, err := sl.rc.Recv()
		if err != nil {
			obs = append(obs, errKind(err))
			return obs
		}
		if hdr.Xid == jute.XidNotification {
			obs = append(obs, fmt.Sprintf("event zxid=%s %s", sd.norm.zxid(hdr.Zxid), event(body)))
			continue
		}
		got++
		if hdr.Zxid > sd.maxZx {
			sd.maxZx = hdr.Zxid
		}
		if label != "" {
			sd.labels[label] = hdr.Zxid
		}
		line := fmt.Sprintf("reply xid=%d zxid=%s err=%d", hdr.Xid, sd.norm.header(hdr.Zxid), hdr.Err)
		op, known := pending[hdr.Xid]
		switch {
		case !known:
			line += fmt.Sprintf(" unexpected xid, body %d bytes", len(body))
		case hdr.Err == 0 || op == jute.OpMulti || op == jute.OpMultiRead:
			if hdr.Err != 0 && len(body) == 0 {
				break
			}
			if b := sd.norm.body(op, body, aclSet); b != "" {
				line += " " + b
			}
		case len(body) > 0:
			line += fmt.Sprintf(" +%d body bytes on error", len(body))
		}
		obs = append(obs, line)
	}
	return obs
}

// errKind reduces a transport error to what both servers must agree on.
func errKind(err error) string {
	switch {
	case zktest.IsClosed(err):
		return "closed"
	case zktest.IsTimeout(err):
		return fmt.Sprintf("timeout (nothing within %v)", readTimeout)
	default:
		return "error: " + err.Error()
	}
}

// sortEvents sorts runs of consecutive notifications, leaving replies where
// they are.
func sortEvents(obs []string) {
	for i := 0; i < len(obs); {
		j := i
		for j < len(obs) && strings.HasPrefix(obs[j], "event ") {
			j++
		}
		slices.Sort(obs[i:j])
		if j == i {
			j++
		}
		i = j
	}
}
