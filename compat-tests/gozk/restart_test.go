package gozk

import (
	"fmt"
	"testing"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// TestKillRestart writes acknowledged nodes, kills the server with SIGKILL
// and restarts it: every acknowledged write is there with the same stat,
// new zxids are larger than every old one, and a session that was live
// reattaches (within its timeout) with its ephemerals.
func TestKillRestart(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		s := zktest.Start(t, target, zktest.Options{})
		const nodes = 60
		const sessionMs = 30000 // the restart must fit in it

		w, resp := zktest.DialRaw(t, s.Addr, 0, nil, sessionMs, false)
		eq(t, resp.TimeOut, sessionMs, "session timeout")
		rawCreate(t, w, "/durable", nil, jute.FlagPersistent)
		eph := rawCreate(t, w, "/durable/eph", []byte("e"), jute.FlagEphemeral)
		rawCreate(t, w, "/seq", nil, jute.FlagPersistent)
		want := map[string]jute.GetDataResponse{}
		var maxZxid int64
		for i := 0; i < nodes; i++ {
			path := fmt.Sprintf("/durable/n%03d", i)
			cr := rawCreate(t, w, path, []byte(fmt.Sprintf("v%d", i)), jute.FlagPersistent)
			st := cr.Stat
			data := []byte(fmt.Sprintf("v%d", i))
			if i%3 == 0 { // some nodes also get a setData
				var sr jute.StatResponse
				data = []byte(fmt.Sprintf("w%d", i))
				callOK(t, w, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: data, Version: 0}, &sr)
				st = sr.Stat
			}
			want[path] = jute.GetDataResponse{Data: data, Stat: st}
			maxZxid = max(maxZxid, st.Mzxid)
		}
		seq := rawCreate(t, w, "/seq/s-", nil, jute.FlagPersistentSequential)
		eq(t, seq.Path, "/seq/s-0000000000", "first sequential")
		parentBefore := rawGetData(t, w, "/durable", false)
		maxZxid = max(maxZxid, w.LastZxid())

		s.Kill()
		w.Close()
		s.Restart(t)

		r := dial(t, s)
		for path, wd := range want {
			got := rawGetData(t, r, path, false)
			deepEq(t, got, wd, "data and stat of %s after restart", path)
		}
		deepEq(t, rawGetData(t, r, "/durable", false), parentBefore, "parent after restart")

		// The session that was live reattaches and keeps its ephemeral.
		w2, resp2 := zktest.DialRaw(t, s.Addr, resp.SessionID, resp.Passwd, sessionMs, false)
		eq(t, resp2.SessionID, resp.SessionID, "session id after restart")
		var sr jute.StatResponse
		callOK(t, w2, jute.OpExists, &jute.PathWatchRequest{Path: "/durable/eph"}, &sr)
		eq(t, sr.Stat, eph.Stat, "ephemeral after restart")

		// New zxids are larger than all before the crash, and the sequence
		// counter survived.
		cr := rawCreate(t, w2, "/durable/after", nil, jute.FlagEphemeral)
		isTrue(t, cr.Stat.Czxid > maxZxid, "zxid after restart %#x > %#x", cr.Stat.Czxid, maxZxid)
		eq(t, cr.Stat.EphemeralOwner, resp.SessionID, "owner of a new ephemeral")
		seq = rawCreate(t, w2, "/seq/s-", nil, jute.FlagPersistentSequential)
		eq(t, seq.Path, "/seq/s-0000000001", "sequential after restart")

		// A clean stop and start keeps everything as well.
		_, err := w2.CloseSession()
		noErr(t, err, "closeSession")
		s.Restart(t)
		r = dial(t, s)
		eq(t, call(t, r, jute.OpExists, &jute.PathWatchRequest{Path: "/durable/eph"}, nil), jute.ErrNoNode, "ephemeral of a closed session after restart")
		var n jute.IntResponse
		callOK(t, r, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/durable"}, &n)
		eq(t, n.Value, nodes, "nodes after a clean restart")
	})
}
