package differential_test

import (
	"strings"
	"testing"
)

// TestExceptionMatchers checks, without any server, that each matcher
// accepts the shape its decision describes (taken from real transcripts)
// and rejects every variant that changes anything else.
func TestExceptionMatchers(t *testing.T) {
	rec := func(desc string, lines ...string) record { return record{desc: desc, obs: lines} }
	const (
		reconfig   = "[0] xid=45 reconfig {JoiningServers: LeavingServers: NewMembers: CurConfigID:0}"
		rawMulti   = "[10] raw multi with an op of type 9"
		multiFlav  = "[0] xid=24 multi[create /m/c1 data=\"1\" acl=[31:world:anyone] flags=0; create2 /m/c15 data=\"15\" acl=[31:world:anyone] flags=0; createContainer /m/c19 data=null acl=[31:world:anyone] flags=4]"
		stat       = "stat{cz=Z4.28.0 mz=Z4.28.0 ct=nz mt==ct v=0 cv=0 av=0 eo=0 dl=2 nc=0 pz=Z4.28.0}"
		ttlMulti   = "[0] xid=31 multi[createTTL /m/badttl data=null acl=[31:world:anyone] flags=0 ttl=10]"
		ttlMulti5  = "[0] xid=31 multi[createTTL /m/badttl data=null acl=[31:world:anyone] flags=5 ttl=10]"
		kids       = "[1] xid=5 getChildren {Path:/m Watch:true}"
		kids2      = "[0] xid=39 getChildren2 {Path:/m Watch:false}"
		multiRead  = "[0] xid=36 multiRead[check {Path:/m/a Version:-1}]"
		checkW     = "[0] xid=22 checkWatches {Path:/w/b Type:3}"
		setW       = "[1] xid=5 setWatches rel=0x0 data=[/sw/same] exist=null child=[/sw]"
		barrier    = "[0] barrier (ping)"
		createSess = "[2] xid=1 createSession"
		evSame     = "event zxid=-1 type=NodeDataChanged state=3 path=/sw/same"
		evSw       = "event zxid=-1 type=NodeChildrenChanged state=3 path=/sw"
		evMix      = "event zxid=-1 type=NodeDataChanged state=3 path=" + mixPath
		ping       = "reply xid=-2 zxid=max err=0"
	)
	c2 := "reply xid=24 zxid=Z4.28.0(new) err=0 results[create path=/m/c1; create2 path=/m/c15 " + stat + "; create2 path=/m/c19 " + stat + "]"
	c1 := "reply xid=24 zxid=Z4.28.0(new) err=0 results[create path=/m/c1; create path=/m/c15; create2 path=/m/c19 " + stat + "]"
	st := func(cv, nc int) string {
		return strings.NewReplacer("CV", string(rune('0'+cv)), "NC", string(rune('0'+nc))).Replace(
			" stat{cz=Z4.2.0 mz=Z4.2.0 ct=nz mt==ct v=0 cv=CV av=0 eo=0 dl=1 nc=NC pz=Z4.46.0}")
	}
	tests := []struct {
		name   string
		exc    string
		zk, ap record
		want   bool
	}{
		// early-reject-zxid
		{"reattach: new zxid on zkraft", excReattachZxid, rec(reconfig, "reply xid=1 zxid=Z10.24.0(new) err=0 paths=[/ss/eph]"), rec(reconfig, "reply xid=1 zxid=max err=0 paths=[/ss/eph]"), true},
		{"reattach: body differs", excReattachZxid, rec(reconfig, "reply xid=1 zxid=Z10.24.0(new) err=0 paths=[]"), rec(reconfig, "reply xid=1 zxid=max err=0 paths=[/ss/eph]"), false},
		{"reattach: reversed", excReattachZxid, rec(reconfig, "reply xid=1 zxid=max err=0"), rec(reconfig, "reply xid=1 zxid=Z10.24.0(new) err=0"), false},
		{"reconfig", excEarlyReject, rec(reconfig, "reply xid=45 zxid=max err=-123"), rec(reconfig, "reply xid=45 zxid=Z0.45.0(new) err=-123"), true},
		{"raw multi with probe", excEarlyReject, rec(rawMulti, "reply xid=1003 zxid=max err=-5", "probe: open"), rec(rawMulti, "reply xid=1003 zxid=Z12.26.0(new) err=-5", "probe: open"), true},
		{"probe differs", excEarlyReject, rec(rawMulti, "reply xid=1003 zxid=max err=-5", "probe: closed"), rec(rawMulti, "reply xid=1003 zxid=Z12.26.0(new) err=-5", "probe: open"), false},
		{"reconfig with -5", excEarlyReject, rec(reconfig, "reply xid=45 zxid=max err=-5"), rec(reconfig, "reply xid=45 zxid=Z0.45.0(new) err=-5"), false},
		{"-8 only for deleteContainer", excEarlyReject, rec(rawMulti, "reply xid=1 zxid=max err=-8"), rec(rawMulti, "reply xid=1 zxid=Z12.28.0(new) err=-8"), false},
		{"other err", excEarlyReject, rec(rawMulti, "reply xid=1003 zxid=max err=-8"), rec(rawMulti, "reply xid=1003 zxid=Z12.26.0(new) err=-5"), false},
		{"other xid", excEarlyReject, rec(rawMulti, "reply xid=1004 zxid=max err=-5"), rec(rawMulti, "reply xid=1003 zxid=Z12.26.0(new) err=-5"), false},
		{"reversed zxids", excEarlyReject, rec(rawMulti, "reply xid=1003 zxid=Z12.26.0(new) err=-5"), rec(rawMulti, "reply xid=1003 zxid=max err=-5"), false},
		{"old zxid on apache", excEarlyReject, rec(rawMulti, "reply xid=1003 zxid=max err=-5"), rec(rawMulti, "reply xid=1003 zxid=Z12.3.0 err=-5"), false},
		{"not marked", "", rec(reconfig, "reply xid=45 zxid=max err=-123"), rec(reconfig, "reply xid=45 zxid=Z0.45.0(new) err=-123"), false},
		// create2-in-multi
		{"create2 result", excCreate2InMulti, rec(multiFlav, c2), rec(multiFlav, c1), true},
		{"create result on zkraft too", excCreate2InMulti, rec(multiFlav, strings.Replace(c2, "create2 path=/m/c15 "+stat, "create path=/m/c16", 1)), rec(multiFlav, c1), false},
		{"type 15 for a plain create", excCreate2InMulti,
			rec(multiFlav, strings.Replace(c2, "create path=/m/c1;", "create2 path=/m/c1 "+stat+";", 1)), rec(multiFlav, c1), false},
		{"other path", excCreate2InMulti, rec(multiFlav, strings.Replace(c2, "create2 path=/m/c15", "create2 path=/m/c16", 1)), rec(multiFlav, c1), false},
		{"other zxid", excCreate2InMulti, rec(multiFlav, strings.Replace(c2, "zxid=Z4.28.0(new)", "zxid=max", 1)), rec(multiFlav, c1), false},
		// createttl-in-multi-flags
		{"ttl flags 0", excCreateTTLFlags, rec(ttlMulti, "reply xid=31 zxid=Z4.36.0(new) err=0 results[error err=-8]"),
			rec(ttlMulti, "reply xid=31 zxid=Z4.36.0(new) err=0 results[create path=/m/badttl]"), true},
		{"ttl flags 5", excCreateTTLFlags, rec(ttlMulti5, "reply xid=31 zxid=Z4.36.0(new) err=0 results[error err=-8]"),
			rec(ttlMulti5, "reply xid=31 zxid=Z4.36.0(new) err=0 results[create path=/m/badttl]"), false},
		{"ttl other code", excCreateTTLFlags, rec(ttlMulti, "reply xid=31 zxid=Z4.36.0(new) err=0 results[error err=-110]"),
			rec(ttlMulti, "reply xid=31 zxid=Z4.36.0(new) err=0 results[create path=/m/badttl]"), false},
		{"knock-on children", excCreateTTLFlags, rec(kids, "reply xid=5 zxid=max err=0 children=[a c1 eph]"),
			rec(kids, "reply xid=5 zxid=max err=0 children=[a badttl c1 eph]"), true},
		{"knock-on other child", excCreateTTLFlags, rec(kids, "reply xid=5 zxid=max err=0 children=[a c1 eph]"),
			rec(kids, "reply xid=5 zxid=max err=0 children=[a c1 eph other]"), false},
		{"knock-on two more", excCreateTTLFlags, rec(kids, "reply xid=5 zxid=max err=0 children=[a eph]"),
			rec(kids, "reply xid=5 zxid=max err=0 children=[a badttl c1 eph]"), false},
		{"knock-on children2", excCreateTTLFlags, rec(kids2, "reply xid=39 zxid=max err=0 children=[a eph]"+st(5, 2)),
			rec(kids2, "reply xid=39 zxid=max err=0 children=[a badttl eph]"+st(6, 3)), true},
		{"knock-on stat off by two", excCreateTTLFlags, rec(kids2, "reply xid=39 zxid=max err=0 children=[a eph]"+st(5, 2)),
			rec(kids2, "reply xid=39 zxid=max err=0 children=[a badttl eph]"+st(7, 3)), false},
		{"knock-on other stat field", excCreateTTLFlags, rec(kids2, "reply xid=39 zxid=max err=0 children=[a eph]"+st(5, 2)),
			rec(kids2, "reply xid=39 zxid=max err=0 children=[a badttl eph]"+strings.Replace(st(6, 3), "v=0", "v=1", 1)), false},
		{"knock-on other parent", excCreateTTLFlags, rec("[0] xid=39 getChildren2 {Path:/n Watch:false}", "reply xid=39 zxid=max err=0 children=[a eph]"+st(5, 2)),
			rec("[0] xid=39 getChildren2 {Path:/n Watch:false}", "reply xid=39 zxid=max err=0 children=[a badttl eph]"+st(6, 3)), false},
		// multiread-error-body
		{"multiRead body", excMultiReadErrorBody, rec(multiRead, "reply xid=36 zxid=max err=-5"), rec(multiRead, "reply xid=36 zxid=max err=-5 results[]"), true},
		{"multiRead non-empty body", excMultiReadErrorBody, rec(multiRead, "reply xid=36 zxid=max err=-5"), rec(multiRead, "reply xid=36 zxid=max err=-5 results[error err=-5]"), false},
		{"multiRead other code", excMultiReadErrorBody, rec(multiRead, "reply xid=36 zxid=max err=-6"), rec(multiRead, "reply xid=36 zxid=max err=-6 results[]"), false},
		// checkwatches-per-connection
		{"checkWatches", excCheckWatches, rec(checkW, "reply xid=22 zxid=max err=-121"), rec(checkW, "reply xid=22 zxid=max err=0"), true},
		{"checkWatches reversed", excCheckWatches, rec(checkW, "reply xid=22 zxid=max err=0"), rec(checkW, "reply xid=22 zxid=max err=-121"), false},
		{"checkWatches other code", excCheckWatches, rec(checkW, "reply xid=22 zxid=max err=-8"), rec(checkW, "reply xid=22 zxid=max err=0"), false},
		{"removeWatches", excCheckWatches, rec("[0] xid=22 removeWatches {Path:/w/b Type:3}", "reply xid=22 zxid=max err=-121"),
			rec("[0] xid=22 removeWatches {Path:/w/b Type:3}", "reply xid=22 zxid=max err=0"), false},
		// setwatches-null-list
		{"setWatches null", excSetWatchesNull, rec(setW, evSame, evSw, "reply xid=5 zxid=max err=0"), rec(setW, evSame, "reply xid=5 zxid=max err=-5"), true},
		{"setWatches event of an earlier list missing", excSetWatchesNull, rec(setW, evSw, "reply xid=5 zxid=max err=0"), rec(setW, evSame, "reply xid=5 zxid=max err=-5"), false},
		{"setWatches extra event of an earlier list", excSetWatchesNull, rec(setW, evSame, evSame, "reply xid=5 zxid=max err=0"), rec(setW, evSame, "reply xid=5 zxid=max err=-5"), false},
		{"setWatches other code", excSetWatchesNull, rec(setW, evSame, evSw, "reply xid=5 zxid=max err=0"), rec(setW, evSame, "reply xid=5 zxid=max err=-8"), false},
		{"setWatches without null", excSetWatchesNull, rec(strings.Replace(setW, "exist=null", "exist=[]", 1), evSame, evSw, "reply xid=5 zxid=max err=0"),
			rec(setW, evSame, "reply xid=5 zxid=max err=-5"), false},
		// persistent-and-oneshot
		{"persistent kept", excPersistentOneShot, rec(barrier, evMix, ping), rec(barrier, ping), true},
		{"persistent other event", excPersistentOneShot, rec(barrier, strings.Replace(evMix, "NodeDataChanged", "NodeDeleted", 1), ping), rec(barrier, ping), false},
		{"persistent two events", excPersistentOneShot, rec(barrier, evMix, evMix, ping), rec(barrier, ping), false},
		{"persistent lost on zkraft", excPersistentOneShot, rec(barrier, ping), rec(barrier, evMix, ping), false},
		// client-createsession-opcode
		{"createSession", excClientCreateSession, rec(createSess, "closed", "probe: closed"), rec(createSess, "reply xid=1 zxid=Z12.16.0(new) err=-5", "probe: open"), true},
		{"createSession other xid", excClientCreateSession, rec(createSess, "closed", "probe: closed"), rec(createSess, "reply xid=2 zxid=Z12.16.0(new) err=-5", "probe: open"), false},
		{"createSession apache closes", excClientCreateSession, rec(createSess, "closed", "probe: closed"), rec(createSess, "reply xid=1 zxid=Z12.16.0(new) err=-5", "probe: closed"), false},
		{"createSession zkraft answers", excClientCreateSession, rec(createSess, "reply xid=1 zxid=max err=-6", "probe: closed"), rec(createSess, "reply xid=1 zxid=Z12.16.0(new) err=-5", "probe: open"), false},
		// an exception never matches another's shape
		{"wrong exception", excCheckWatches, rec(multiRead, "reply xid=36 zxid=max err=-5"), rec(multiRead, "reply xid=36 zxid=max err=-5 results[]"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := exceptionCounts{}
			if got := c.allowed(&step{exc: tt.exc}, tt.zk, tt.ap); got != tt.want {
				t.Fatalf("allowed = %v, want %v", got, tt.want)
			}
			if tt.want && c[tt.exc] != 1 {
				t.Fatalf("count = %d, want 1", c[tt.exc])
			}
		})
	}
}

// TestExceptionTags checks that every tagged step names a listed exception
// that can match, and that every matching exception is used by some step.
func TestExceptionTags(t *testing.T) {
	used := map[string]bool{}
	for _, sc := range allScripts(randomSeed) {
		for i, st := range sc.steps {
			if st.exc == "" {
				continue
			}
			used[st.exc] = true
			known := false
			for _, e := range exceptions {
				known = known || (e.id == st.exc && e.match != nil)
			}
			if !known {
				t.Errorf("script %q step %d names exception %q, which is not listed or never matches", sc.name, i, st.exc)
			}
		}
	}
	for _, e := range exceptions {
		if e.match != nil && !used[e.id] {
			t.Errorf("exception %q has a matcher but no step names it", e.id)
		}
		if e.reason == "" {
			t.Errorf("exception %q has no reason", e.id)
		}
	}
}
