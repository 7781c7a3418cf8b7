package server

import (
	"encoding/binary"

	"github.com/zkraft/zkraft/jute"
)

// fuzzInput hands out the bytes of a fuzz input as small choices. Past the
// end it returns zeros, so every input decodes to some finite sequence.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) done() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

// pick returns a number in [0, n).
func (in *fuzzInput) pick(n int) int { return int(in.byte()) % n }

func (in *fuzzInput) u32() uint32 {
	var buf [4]byte
	for i := range buf {
		buf[i] = in.byte()
	}
	return binary.BigEndian.Uint32(buf[:])
}

// bytes returns up to n of the next bytes (fewer at the end of the input).
func (in *fuzzInput) bytes(n int) []byte {
	n = min(n, len(in.b))
	v := append([]byte(nil), in.b[:n]...)
	in.b = in.b[n:]
	return v
}

// fuzzPaths are the paths requests name: a few levels under the fuzz root,
// the built-in nodes, the quota subtree, and malformed paths.
var fuzzPaths = []string{
	"/", "/f", "/f/a", "/f/a/b", "/f/a/b/c", "/f/b", "/f/c", "/f/a/", "/f//a", "f/a", "", "/f/a\x00b",
	"/zookeeper", "/zookeeper/config", "/zookeeper/quota", "/zookeeper/quota/f", "/zookeeper/quota/f/zookeeper_limits",
	"/zookeeper/quota/f/zookeeper_stats", "/f/.", "/f/..", "/f/a/b/c/d/e",
	// Lock contenders' prefixes (with the sequential flag): the lock-delay
	// keeps only holders (lockDelayKeeps).
	"/f/a/lock-", "/f/a/k__rlock__", "/f/a/_c_u-__WRIT__",
}

// path returns one of fuzzPaths, or (rarely) a path read from the input.
func (in *fuzzInput) path() string {
	i := in.pick(len(fuzzPaths) + 1)
	if i < len(fuzzPaths) {
		return fuzzPaths[i]
	}
	return "/f/" + string(in.bytes(in.pick(8)))
}

var fuzzACLs = [][]jute.ACL{
	{{Perms: jute.PermAll, ID: jute.Id{Scheme: "world", ID: "anyone"}}},
	{{Perms: jute.PermRead, ID: jute.Id{Scheme: "world", ID: "anyone"}}},
	{{Perms: jute.PermAll, ID: jute.Id{Scheme: "auth", ID: ""}}},
	{{Perms: jute.PermAll, ID: jute.Id{Scheme: "digest", ID: "u:x"}}},
	{{Perms: jute.PermAll &^ jute.PermDelete, ID: jute.Id{Scheme: "ip", ID: "127.0.0.1"}}},
	{{Perms: jute.PermAll, ID: jute.Id{Scheme: "ip", ID: "10.0.0.0/33"}}},
	{{Perms: 0, ID: jute.Id{Scheme: "nope", ID: "x"}}},
	nil,
}

func (in *fuzzInput) acl() []jute.ACL { return fuzzACLs[in.pick(len(fuzzACLs))] }

// data returns short data, or quota limits text for the quota paths.
func (in *fuzzInput) data() []byte {
	switch in.pick(6) {
	case 0:
		return nil
	case 1:
		return []byte("count=2,bytes=10")
	case 2:
		return []byte("count=-1,bytes=-1")
	default:
		return in.bytes(in.pick(16))
	}
}

// version returns -1 (any) or a small version.
func (in *fuzzInput) version() int32 { return int32(in.pick(4)) - 1 }

// writeOp returns one multi op (a write or a check).
func (in *fuzzInput) multiOp() jute.MultiOp {
	switch in.pick(6) {
	case 0:
		return jute.MultiOp{Type: jute.OpCreate, Create: &jute.CreateRequest{Path: in.path(), Data: in.data(), ACL: in.acl(), Flags: int32(in.pick(8)) - 1}}
	case 1:
		return jute.MultiOp{Type: jute.OpCreateTTL, CreateTTL: &jute.CreateTTLRequest{Path: in.path(), ACL: in.acl(), Flags: int32(in.pick(8)) - 1, TTL: int64(in.pick(3)) * 1000}}
	case 2:
		return jute.MultiOp{Type: jute.OpDelete, Delete: &jute.DeleteRequest{Path: in.path(), Version: in.version()}}
	case 3:
		return jute.MultiOp{Type: jute.OpSetData, SetData: &jute.SetDataRequest{Path: in.path(), Data: in.data(), Version: in.version()}}
	case 4:
		return jute.MultiOp{Type: jute.OpCheck, Check: &jute.CheckVersionRequest{Path: in.path(), Version: in.version()}}
	default:
		return jute.MultiOp{Type: jute.OpCreateContainer, Create: &jute.CreateRequest{Path: in.path(), ACL: in.acl(), Flags: jute.FlagContainer}}
	}
}

// writeBody returns the opcode and request record of one client write.
func (in *fuzzInput) write() (int32, jute.Record) {
	switch in.pick(8) {
	case 0:
		return jute.OpCreate, &jute.CreateRequest{Path: in.path(), Data: in.data(), ACL: in.acl(), Flags: int32(in.pick(8)) - 1}
	case 1:
		return jute.OpCreate2, &jute.CreateRequest{Path: in.path(), Data: in.data(), ACL: in.acl(), Flags: int32(in.pick(8)) - 1}
	case 2:
		return jute.OpCreateContainer, &jute.CreateRequest{Path: in.path(), ACL: in.acl(), Flags: jute.FlagContainer}
	case 3:
		return jute.OpCreateTTL, &jute.CreateTTLRequest{Path: in.path(), Data: in.data(), ACL: in.acl(),
			Flags: int32(in.pick(8)) - 1, TTL: int64(in.pick(4)) * 500}
	case 4:
		return jute.OpDelete, &jute.DeleteRequest{Path: in.path(), Version: in.version()}
	case 5:
		return jute.OpSetData, &jute.SetDataRequest{Path: in.path(), Data: in.data(), Version: in.version()}
	case 6:
		return jute.OpSetACL, &jute.SetACLRequest{Path: in.path(), ACL: in.acl(), Version: in.version()}
	default:
		m := &jute.MultiRequest{}
		for range in.pick(5) {
			m.Ops = append(m.Ops, in.multiOp())
		}
		return jute.OpMulti, m
	}
}

// mangle returns b, or b damaged in one of a few ways chosen by the input.
func (in *fuzzInput) mangle(b []byte) []byte {
	switch in.pick(8) {
	case 0:
		if len(b) > 0 {
			return b[:in.pick(len(b))] // truncated
		}
	case 1:
		if len(b) > 0 {
			b = append([]byte(nil), b...)
			b[in.pick(len(b))] ^= in.byte() | 1 // one byte changed
			return b
		}
	case 2:
		return append(append([]byte(nil), b...), in.bytes(in.pick(8))...) // trailing bytes
	case 3:
		return in.bytes(in.pick(32)) // replaced
	}
	return b
}
