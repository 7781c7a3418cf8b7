package differential_test

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/jute"
)

// exception is one deliberate, documented difference between zkraft and
// Apache ZooKeeper 3.8.0 (the reference build the test runs). Each applies
// only to steps that name it (step.ex) and only when the two records have
// exactly the shape described; every other difference fails the test.
type exception struct {
	id     string
	reason string
	// match reports whether zk (zkraft) and ap (Apache) differ exactly as
	// allowed; nil means the case is avoided by the scripts, not matched.
	match func(zk, ap record) bool
}

const (
	excLoneCheck           = "lone-check"
	excExistsNoRead        = "exists-no-read"
	excEarlyReject         = "early-reject-zxid"
	excCreate2InMulti      = "create2-in-multi"
	excCreateTTLFlags      = "createttl-in-multi-flags"
	excMultiReadErrorBody  = "multiread-error-body"
	excCheckWatches        = "checkwatches-per-connection"
	excSetWatchesNull      = "setwatches-null-list"
	excPersistentOneShot   = "persistent-and-oneshot"
	excClientCreateSession = "client-createsession-opcode"
	excReattachZxid        = "reattach-spends-zxid"
)

// exceptions is the whole list; the lead decides what goes in it.
var exceptions = []exception{
	{
		id: excReattachZxid,
		reason: "a session reattaching on a new connection: zkraft fences the session through the log " +
			"(one entry, one zxid) before answering, so every write the client sent on its old connection " +
			"is settled first; the first reply after it carries that new zxid where ZooKeeper's carries " +
			"the last one. Same xid, error and body.",
		match: matchReattachZxid,
	},
	{
		id: excLoneCheck,
		reason: "check (13) outside a multi: ZooKeeper 3.8.0 drops the connection (and logs a txn it " +
			"cannot replay), zkraft answers -6 Unimplemented and keeps it. The scripts never send a lone " +
			"check, so this entry is never applied.",
	},
	{
		id: excExistsNoRead,
		reason: "exists on a node the caller cannot READ: ZooKeeper 3.8.0 answers the stat, zkraft answers " +
			"-102 NoAuth with no body, as 3.8.4 does. Only watch-less exists are sent.",
		match: matchExistsNoRead,
	},
	{
		id: excEarlyReject,
		reason: "writes refused before they reach the log (reconfig while disabled -123, multi containing a " +
			"read op or an unknown op type -5, a write with an undecodable body -5, deleteContainer (20) sent by " +
			"a client -8): ZooKeeper 3.8.0 logs an " +
			"error txn and its reply carries a new zxid; zkraft does not spend a log entry on them, so its " +
			"reply carries the last zxid. Same xid and error; only the reply zxid differs.",
		match: matchEarlyReject,
	},
	{
		id: excCreate2InMulti,
		reason: "create2 (15) inside multi: ZooKeeper 3.8.0/3.8.1 answer result type 1 (path only); zkraft " +
			"answers type 15 (path + stat) as ZooKeeper 3.8.2+ does (ZOOKEEPER-4026). A plain create (1) " +
			"still gets type 1.",
		match: matchCreate2InMulti,
	},
	{
		id: excCreateTTLFlags,
		reason: "createTTL inside multi with a non-TTL flag (0): ZooKeeper 3.8.0 creates a plain node (its " +
			"multi prepare step skips the flag check); zkraft answers -8 BadArguments, as 3.8.0 itself does " +
			"for the same request outside a multi. Knock-on: later listings of the parent lack the node on " +
			"zkraft (one child fewer, cversion and numChildren one lower).",
		match: matchCreateTTLFlags,
	},
	{
		id: excMultiReadErrorBody,
		reason: "multiRead with a non-read op: both answer -5; ZooKeeper 3.8.0 also appends an empty multi " +
			"response body, zkraft sends the header only, as for every error reply (clients skip the body " +
			"of an error reply).",
		match: matchMultiReadErrorBody,
	},
	{
		id: excCheckWatches,
		reason: "checkWatches (17): ZooKeeper 3.8.0 answers 0 when any connection holds a matching watch on " +
			"the path; zkraft answers for the asking connection only (-121 NoWatcher otherwise), as " +
			"removeWatches does on both and as the API documents.",
		match: matchCheckWatches,
	},
	{
		id: excSetWatchesNull,
		reason: "setWatches with a null (-1) list: zkraft treats null as empty; ZooKeeper 3.8.0 fires the " +
			"events of the lists before it and answers -5. Real clients never send null lists.",
		match: matchSetWatchesNull,
	},
	{
		id: excPersistentOneShot,
		reason: "a connection holding both a persistent and a one-shot watch on a path: ZooKeeper 3.8.0 " +
			"loses the persistent watch when the one-shot fires; zkraft keeps it (the persistent watch's " +
			"contract), so the next change still notifies it.",
		match: matchPersistentOneShot,
	},
	{
		id: excClientCreateSession,
		reason: "opcode -10 (createSession) from a client: zkraft closes the connection without a reply; " +
			"ZooKeeper 3.8.0 answers -5 and keeps the connection. The step runs just before a write, as " +
			"ZooKeeper's reply spends a zxid that only a write makes both sides agree on again.",
		match: matchClientCreateSession,
	},
}

// ---- parsing the normalised observations ----

// replyLine matches a reply observation (see side.collect).
var replyLine = regexp.MustCompile(`^reply xid=(-?\d+) zxid=(\S+) err=(-?\d+)(.*)$`)

// eventLine matches a notification observation.
var eventLine = regexp.MustCompile(`^event zxid=\S+ type=\S+ state=-?\d+ path=(.*)$`)

// newZxid matches the label of a zxid seen for the first time, in order.
var newZxid = regexp.MustCompile(`^Z\d+\.\d+\.\d+\(new\)$`)

// reply is one parsed reply observation; rest is the rendered body with its
// leading space ("" if none).
type reply struct {
	xid, zxid string
	err       int32
	rest      string
}

func parseReply(line string) (reply, bool) {
	m := replyLine.FindStringSubmatch(line)
	if m == nil {
		return reply{}, false
	}
	code, err := strconv.ParseInt(m[3], 10, 32)
	if err != nil {
		return reply{}, false
	}
	return reply{xid: m[1], zxid: m[2], err: int32(code), rest: m[4]}, true
}

// twoReplies parses records that each hold exactly one reply with the same
// xid and the same (normalised) zxid.
func twoReplies(zk, ap record) (z, a reply, ok bool) {
	if len(zk.obs) != 1 || len(ap.obs) != 1 {
		return z, a, false
	}
	z, zok := parseReply(zk.obs[0])
	a, aok := parseReply(ap.obs[0])
	return z, a, zok && aok && z.xid == a.xid && z.zxid == a.zxid
}

// multiOps splits the description of a multi (or multiRead) request into
// the descriptions of its ops; nil if desc is no multi.
func multiOps(desc string) []string {
	i := strings.Index(desc, " multi[")
	if i < 0 || !strings.HasSuffix(desc, "]") {
		return nil
	}
	return splitList(desc[i+len(" multi[") : len(desc)-1])
}

// multiResults splits a rendered multi response body into its results;
// nil if rest is not one.
func multiResults(rest string) []string {
	inner, ok := strings.CutPrefix(rest, " results[")
	if !ok || !strings.HasSuffix(inner, "]") {
		return nil
	}
	return splitList(inner[:len(inner)-1])
}

func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "; ")
}

// ---- matchers, one per exception ----

// matchExistsNoRead allows: Apache "err=0 stat{...}", zkraft "err=-102" with
// no body, same xid and same (normalised) reply zxid, nothing else seen.
func matchExistsNoRead(zk, ap record) bool {
	z, a, ok := twoReplies(zk, ap)
	return ok && a.err == 0 && statOnly.MatchString(a.rest) && z.err == jute.ErrNoAuth && z.rest == ""
}

var statOnly = regexp.MustCompile(`^ stat\{[^{}]*\}$`)

// matchEarlyReject allows: the same error reply (-123 for a reconfig, -5
// otherwise) with the same xid and no body on both sides, where Apache's
// reply zxid is a new one and zkraft's the last one ("max"); whatever
// follows the reply (a probe) is identical.
func matchEarlyReject(zk, ap record) bool {
	if len(zk.obs) == 0 || len(zk.obs) != len(ap.obs) || !slices.Equal(zk.obs[1:], ap.obs[1:]) {
		return false
	}
	z, zok := parseReply(zk.obs[0])
	a, aok := parseReply(ap.obs[0])
	want := jute.ErrMarshallingError
	switch {
	case strings.Contains(zk.desc, " reconfig "):
		want = jute.ErrReconfigDisabled
	case strings.Contains(zk.desc, " deleteContainer "):
		want = jute.ErrBadArguments // internal opcode refused from a client
	}
	return zok && aok && z.xid == a.xid && z.err == want && a.err == want && z.rest == "" && a.rest == "" &&
		z.zxid == "max" && newZxid.MatchString(a.zxid)
}

var (
	plainCreateResult = regexp.MustCompile(`^create path=(.*)$`)
	create2Result     = regexp.MustCompile(`^create2 path=(.*) stat\{[^{}]*\}$`)
)

// matchCreate2InMulti allows: the same multi reply, except that results of
// create2 ops read "create2 path=P stat{...}" on zkraft where Apache has
// "create path=P"; every other result is identical.
func matchCreate2InMulti(zk, ap record) bool {
	z, a, ok := twoReplies(zk, ap)
	if !ok || z.err != 0 || a.err != 0 {
		return false
	}
	ops, zr, ar := multiOps(zk.desc), multiResults(z.rest), multiResults(a.rest)
	if ops == nil || zr == nil || len(zr) != len(ops) || len(ar) != len(ops) {
		return false
	}
	differs := false
	for i := range ops {
		if zr[i] == ar[i] {
			continue
		}
		zm, am := create2Result.FindStringSubmatch(zr[i]), plainCreateResult.FindStringSubmatch(ar[i])
		if !strings.HasPrefix(ops[i], "create2 ") || zm == nil || am == nil || zm[1] != am[1] {
			return false
		}
		differs = true
	}
	return differs
}

// ttlFlag0Op matches the description of a createTTL op with flags 0.
var ttlFlag0Op = regexp.MustCompile(`^createTTL (\S+) data=\S+ acl=\[[^\]]*\] flags=0 ttl=-?\d+$`)

// childrenRequest matches the description of a getChildren(2) request.
var childrenRequest = regexp.MustCompile(`\] xid=-?\d+ getChildren2? \{Path:(\S+) Watch:(?:true|false)\}$`)

// childrenBody matches the rendering of a getChildren(2) reply body.
var childrenBody = regexp.MustCompile(`^ children=\[([^\]]*)\]( stat\{[^{}]*\})?$`)

// matchCreateTTLFlags allows, for the multi holding the one createTTL op on
// ttlFlagsPath with flags 0: zkraft "results[error err=-8]" where Apache
// has "results[create path=P]", same header. And, as its knock-on, a
// listing of P's parent where Apache has exactly one more child, P's name,
// and (getChildren2) a cversion and numChildren one higher, all else equal.
func matchCreateTTLFlags(zk, ap record) bool {
	z, a, ok := twoReplies(zk, ap)
	if !ok || z.err != a.err {
		return false
	}
	if ops := multiOps(zk.desc); ops != nil {
		m := ttlFlag0Op.FindStringSubmatch(strings.Join(ops, "; "))
		return m != nil && m[1] == ttlFlagsPath &&
			z.rest == " results[error err=-8]" && a.rest == " results[create path="+ttlFlagsPath+"]"
	}
	rq := childrenRequest.FindStringSubmatch(zk.desc)
	if rq == nil || rq[1] != path.Dir(ttlFlagsPath) || z.err != 0 {
		return false
	}
	zb, ab := childrenBody.FindStringSubmatch(z.rest), childrenBody.FindStringSubmatch(a.rest)
	if zb == nil || ab == nil {
		return false
	}
	zkids, akids := strings.Fields(zb[1]), strings.Fields(ab[1])
	name := path.Base(ttlFlagsPath)
	i := slices.Index(akids, name)
	if i < 0 || slices.Contains(zkids, name) || !slices.Equal(zkids, slices.Delete(slices.Clone(akids), i, i+1)) {
		return false
	}
	if zb[2] == "" || ab[2] == "" {
		return zb[2] == ab[2]
	}
	return statsOneMoreChild(zb[2], ab[2])
}

// statsOneMoreChild reports whether rendered stats zs and as are equal but
// for cv and nc, which are one higher in as.
func statsOneMoreChild(zs, as string) bool {
	zf, af := statFields(zs), statFields(as)
	if zf == nil || len(zf) != len(af) {
		return false
	}
	bumped := 0
	for i := range zf {
		zk, zv, _ := strings.Cut(zf[i], "=")
		ak, av, _ := strings.Cut(af[i], "=")
		if zk != ak {
			return false
		}
		if zk != "cv" && zk != "nc" {
			if zv != av {
				return false
			}
			continue
		}
		zn, err1 := strconv.Atoi(zv)
		an, err2 := strconv.Atoi(av)
		if err1 != nil || err2 != nil || an != zn+1 {
			return false
		}
		bumped++
	}
	return bumped == 2
}

// statFields splits " stat{k=v ...}" into its k=v fields (nil if no stat).
func statFields(s string) []string {
	inner, ok := strings.CutPrefix(s, " stat{")
	if !ok {
		return nil
	}
	inner, ok = strings.CutSuffix(inner, "}")
	if !ok {
		return nil
	}
	return strings.Fields(inner)
}

// matchMultiReadErrorBody allows: a multiRead answered -5 on both sides
// with the same xid and zxid, Apache appending an empty result list.
func matchMultiReadErrorBody(zk, ap record) bool {
	z, a, ok := twoReplies(zk, ap)
	return ok && strings.Contains(zk.desc, " multiRead[") &&
		z.err == jute.ErrMarshallingError && a.err == jute.ErrMarshallingError && z.rest == "" && a.rest == " results[]"
}

// matchCheckWatches allows: a checkWatches answered -121 by zkraft and 0 by
// Apache, same xid and zxid, no body on either side.
func matchCheckWatches(zk, ap record) bool {
	z, a, ok := twoReplies(zk, ap)
	return ok && strings.Contains(zk.desc, " checkWatches ") &&
		z.err == jute.ErrNoWatcher && a.err == 0 && z.rest == "" && a.rest == ""
}

// setWatchesLists matches the three lists of a setWatches description.
var setWatchesLists = regexp.MustCompile(` setWatches rel=\S+ data=(null|\[[^\]]*\]) exist=(null|\[[^\]]*\]) child=(null|\[[^\]]*\])$`)

// matchSetWatchesNull allows, for a setWatches with a null list: Apache's
// events are a prefix of zkraft's, every further zkraft event is on a path
// of a list after the null one, and the final reply has the same xid and
// zxid, 0 on zkraft and -5 on Apache, no body.
func matchSetWatchesNull(zk, ap record) bool {
	m := setWatchesLists.FindStringSubmatch(zk.desc)
	if m == nil || len(zk.obs) == 0 || len(ap.obs) == 0 || len(ap.obs) > len(zk.obs) {
		return false
	}
	lists := m[1:]
	k := slices.Index(lists, "null")
	if k < 0 {
		return false
	}
	after := map[string]bool{}
	for _, l := range lists[k+1:] {
		if l != "null" {
			for _, p := range strings.Fields(strings.Trim(l, "[]")) {
				after[p] = true
			}
		}
	}
	zn, an := len(zk.obs)-1, len(ap.obs)-1
	if !slices.Equal(zk.obs[:an], ap.obs[:an]) {
		return false
	}
	for _, o := range ap.obs[:an] {
		if !eventLine.MatchString(o) {
			return false
		}
	}
	for _, o := range zk.obs[an:zn] {
		e := eventLine.FindStringSubmatch(o)
		if e == nil || !after[e[1]] {
			return false
		}
	}
	z, zok := parseReply(zk.obs[zn])
	a, aok := parseReply(ap.obs[an])
	return zok && aok && z.xid == a.xid && z.zxid == a.zxid && z.err == 0 && a.err == jute.ErrMarshallingError &&
		z.rest == "" && a.rest == ""
}

// matchPersistentOneShot allows: a barrier where zkraft delivers exactly one
// more notification, NodeDataChanged on mixPath (the persistent watch that
// Apache lost), before the same ping reply.
func matchPersistentOneShot(zk, ap record) bool {
	return strings.HasSuffix(zk.desc, " barrier (ping)") && len(ap.obs) == 1 && len(zk.obs) == 2 &&
		strings.HasPrefix(ap.obs[0], "reply xid=-2 ") && zk.obs[1] == ap.obs[0] &&
		zk.obs[0] == "event zxid=-1 type=NodeDataChanged state=3 path="+mixPath
}

// createSessionRequest matches the description of a createSession call.
var createSessionRequest = regexp.MustCompile(`\] xid=(-?\d+) createSession$`)

// matchClientCreateSession allows: zkraft closing the connection with no
// reply, Apache answering -5 (with the request's xid, no body) and keeping
// the connection open.
func matchClientCreateSession(zk, ap record) bool {
	rq := createSessionRequest.FindStringSubmatch(zk.desc)
	if rq == nil || !slices.Equal(zk.obs, []string{"closed", "probe: closed"}) || len(ap.obs) != 2 || ap.obs[1] != "probe: open" {
		return false
	}
	a, ok := parseReply(ap.obs[0])
	return ok && a.xid == rq[1] && a.err == jute.ErrMarshallingError && a.rest == ""
}

// exceptionCounts counts how often each exception was applied.
type exceptionCounts map[string]int

// allowed reports whether the difference at st is covered by the exception
// the step names, counting the use.
func (c exceptionCounts) allowed(st *step, zk, ap record) bool {
	if st.exc == "" {
		return false
	}
	i := slices.IndexFunc(exceptions, func(e exception) bool { return e.id == st.exc })
	if i < 0 || exceptions[i].match == nil || !exceptions[i].match(zk, ap) {
		return false
	}
	c[st.exc]++
	return true
}

// matchReattachZxid allows: one reply, identical but for its zxid, which is a
// new one on zkraft and the last one ("max") on Apache.
func matchReattachZxid(zk, ap record) bool {
	if len(zk.obs) != 1 || len(ap.obs) != 1 {
		return false
	}
	z, zok := parseReply(zk.obs[0])
	a, aok := parseReply(ap.obs[0])
	return zok && aok && z.xid == a.xid && z.err == a.err && z.rest == a.rest &&
		newZxid.MatchString(z.zxid) && a.zxid == "max"
}
