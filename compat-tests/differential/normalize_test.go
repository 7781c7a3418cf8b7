package differential_test

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"strings"

	"github.com/zkraft/zkraft/jute"
)

// normaliser turns one side's values that legitimately differ between
// servers (zxids, times, session ids, passwords) into labels that keep
// their equality and order relations. One normaliser serves a whole run of
// one side, so labels stay stable across scripts.
type normaliser struct {
	zxids    map[int64]string
	maxZxid  int64
	sessions map[int64]string
	passwds  map[string]string
	loc      string // location of the current step, "<script>.<step>"
	fresh    int    // new zxids met in the current step
}

func newNormaliser() *normaliser {
	return &normaliser{zxids: map[int64]string{}, sessions: map[int64]string{}, passwds: map[string]string{}}
}

// at sets the location used to label zxids first seen in the next step.
func (n *normaliser) at(script, step int) {
	n.loc = fmt.Sprintf("%d.%d", script, step)
	n.fresh = 0
}

// zxid labels z by where it was first seen.
func (n *normaliser) zxid(z int64) string {
	if z <= 0 {
		return fmt.Sprint(z)
	}
	if l, ok := n.zxids[z]; ok {
		return l
	}
	l := fmt.Sprintf("Z%s.%d", n.loc, n.fresh)
	n.fresh++
	n.zxids[z] = l
	if z < n.maxZxid {
		return l + "(new<max!)"
	}
	n.maxZxid = z
	return l + "(new)"
}

// header labels the zxid of a reply header: like zxid, except that a zxid
// already seen and equal to the largest one so far is "max". A read's reply
// carries the server's last zxid, so after one side used up a zxid the
// other did not, later reads still compare equal and only the step that
// differs is reported.
func (n *normaliser) header(z int64) string {
	if _, seen := n.zxids[z]; seen && z == n.maxZxid {
		return "max"
	}
	return n.zxid(z)
}

// session labels a session id (or ephemeralOwner) by first sighting.
func (n *normaliser) session(id int64) string {
	if id == 0 {
		return "0"
	}
	if l, ok := n.sessions[id]; ok {
		return l
	}
	l := fmt.Sprintf("S%d", len(n.sessions)+1)
	n.sessions[id] = l
	return l
}

// passwd labels a password by first sighting, keeping its length.
func (n *normaliser) passwd(p []byte) string {
	if p == nil {
		return "null"
	}
	if allZero(p) {
		return fmt.Sprintf("zeros(%d)", len(p))
	}
	l, ok := n.passwds[string(p)]
	if !ok {
		l = fmt.Sprintf("P%d", len(n.passwds)+1)
		n.passwds[string(p)] = l
	}
	return fmt.Sprintf("%s(%d)", l, len(p))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// stat renders a Stat with zxids, times and owner normalised.
func (n *normaliser) stat(s jute.Stat) string {
	ct := "nz"
	if s.Ctime == 0 {
		ct = "0"
	}
	var mt string
	switch {
	case s.Mtime == 0:
		mt = "0"
	case s.Mzxid == s.Czxid && s.Mtime == s.Ctime:
		mt = "=ct"
	case s.Mzxid == s.Czxid:
		mt = "!=ct-with-mzxid=czxid"
	case s.Mtime >= s.Ctime:
		mt = ">=ct"
	default:
		mt = "<ct"
	}
	return fmt.Sprintf("stat{cz=%s mz=%s ct=%s mt=%s v=%d cv=%d av=%d eo=%s dl=%d nc=%d pz=%s}",
		n.zxid(s.Czxid), n.zxid(s.Mzxid), ct, mt, s.Version, s.Cversion, s.Aversion,
		n.session(s.EphemeralOwner), s.DataLength, s.NumChildren, n.zxid(s.Pzxid))
}

// data renders a buffer keeping null apart from empty.
func data(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 64:
		return fmt.Sprintf("%d bytes sha1=%x", len(b), sha1.Sum(b))
	default:
		return fmt.Sprintf("%q", b)
	}
}

// strs renders a string vector keeping null apart from empty; sorted if the
// protocol leaves its order open.
func strs(v []string, sortIt bool) string {
	if v == nil {
		return "null"
	}
	v = slices.Clone(v)
	if sortIt {
		slices.Sort(v)
	}
	for i, e := range v {
		if len(e) > 64 {
			v[i] = fmt.Sprintf("%s...(%d chars)", e[:16], len(e))
		}
	}
	return "[" + strings.Join(v, " ") + "]"
}

func acls(v []jute.ACL) string {
	if v == nil {
		return "null"
	}
	parts := make([]string, len(v))
	for i, a := range v {
		parts[i] = fmt.Sprintf("%d:%s:%s", a.Perms, a.ID.Scheme, a.ID.ID)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// body decodes and renders the body of a successful reply to op.
// aclSet sorts ACL lists (see step.unorderedACL).
func (n *normaliser) body(op int32, b []byte, aclSet bool) string {
	var out string
	d := jute.NewDecoder(b, 64<<20)
	read := func(r jute.Record) bool {
		if err := d.ReadRecord(r); err != nil {
			out = fmt.Sprintf("undecodable(%d bytes): %v", len(b), err)
			return false
		}
		return true
	}
	switch op {
	case jute.OpCreate:
		var r jute.CreateResponse
		if read(&r) {
			out = "path=" + r.Path
		}
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		var r jute.Create2Response
		if read(&r) {
			out = "path=" + r.Path + " " + n.stat(r.Stat)
		}
	case jute.OpExists, jute.OpSetData, jute.OpSetACL:
		var r jute.StatResponse
		if read(&r) {
			out = n.stat(r.Stat)
		}
	case jute.OpGetData, jute.OpReconfig:
		var r jute.GetDataResponse
		if read(&r) {
			out = "data=" + data(r.Data) + " " + n.stat(r.Stat)
		}
	case jute.OpGetACL:
		var r jute.GetACLResponse
		if read(&r) {
			if aclSet {
				r.ACL = slices.Clone(r.ACL)
				slices.SortFunc(r.ACL, func(a, b jute.ACL) int { return strings.Compare(acls([]jute.ACL{a}), acls([]jute.ACL{b})) })
			}
			out = "acl=" + acls(r.ACL) + " " + n.stat(r.Stat)
		}
	case jute.OpGetChildren:
		var r jute.GetChildrenResponse
		if read(&r) {
			out = "children=" + strs(r.Children, true)
		}
	case jute.OpGetChildren2:
		var r jute.GetChildren2Response
		if read(&r) {
			out = "children=" + strs(r.Children, true) + " " + n.stat(r.Stat)
		}
	case jute.OpSync:
		var r jute.PathRequest
		if read(&r) {
			out = "path=" + r.Path
		}
	case jute.OpMulti, jute.OpMultiRead:
		var r jute.MultiResponse
		if read(&r) {
			out = n.multi(r)
		}
	case jute.OpGetEphemerals:
		var r jute.StringsResponse
		if read(&r) {
			out = "paths=" + strs(r.Strings, true)
		}
	case jute.OpGetAllChildrenNumber:
		var r jute.IntResponse
		if read(&r) {
			out = fmt.Sprintf("count=%d", r.Value)
		}
	case jute.OpAddWatch:
		var r jute.ErrorResponse
		if read(&r) {
			out = fmt.Sprintf("errbody=%d", r.Err)
		}
	case jute.OpWhoAmI:
		var r jute.WhoAmIResponse
		if read(&r) {
			// ZooKeeper lists the ids from a hash set: no fixed order.
			parts := make([]string, len(r.ClientInfo))
			for i, c := range r.ClientInfo {
				parts[i] = c.AuthScheme + ":" + c.User
			}
			out = "whoami=" + strs(parts, true)
		}
	case jute.OpSASL:
		var r jute.BufferRecord
		if read(&r) {
			out = "token=" + data(r.Token)
		}
	default: // ops without a reply body
		if len(b) == 0 {
			return ""
		}
		return fmt.Sprintf("unexpected body (%d bytes) %x", len(b), b[:min(len(b), 32)])
	}
	if d.Err() == nil && d.Remaining() > 0 {
		out += fmt.Sprintf(" +%d trailing bytes", d.Remaining())
	}
	return out
}

func (n *normaliser) multi(r jute.MultiResponse) string {
	parts := make([]string, len(r.Results))
	for i, res := range r.Results {
		var s string
		switch res.Type {
		case jute.OpCreate:
			s = "create path=" + res.Path
		case jute.OpCreate2:
			s = "create2 path=" + res.Path + " " + n.stat(res.Stat)
		case jute.OpDelete:
			s = "delete"
		case jute.OpCheck:
			s = "check"
		case jute.OpSetData:
			s = "setData " + n.stat(res.Stat)
		case jute.OpGetData:
			s = "getData data=" + data(res.Data) + " " + n.stat(res.Stat)
		case jute.OpGetChildren:
			s = "getChildren children=" + strs(res.Children, true)
		case jute.OpError:
			s = fmt.Sprintf("error err=%d", res.Err)
		}
		if res.Type != jute.OpError && res.Err != 0 {
			s += fmt.Sprintf(" hdrErr=%d", res.Err)
		}
		parts[i] = s
	}
	return "results[" + strings.Join(parts, "; ") + "]"
}

// event renders a notification.
func event(b []byte) string {
	var ev jute.WatcherEvent
	if err := jute.Unmarshal(b, &ev); err != nil {
		return fmt.Sprintf("undecodable event: %v", err)
	}
	return fmt.Sprintf("type=%s state=%d path=%s", eventName(ev.Type), ev.State, ev.Path)
}

func eventName(t int32) string {
	switch t {
	case jute.EventNone:
		return "None"
	case jute.EventNodeCreated:
		return "NodeCreated"
	case jute.EventNodeDeleted:
		return "NodeDeleted"
	case jute.EventNodeDataChanged:
		return "NodeDataChanged"
	case jute.EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	}
	return fmt.Sprint(t)
}
