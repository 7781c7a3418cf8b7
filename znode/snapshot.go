package znode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"unsafe"

	"github.com/zkraft/zkraft/jute"
)

// ErrCorruptSnapshot is wrapped by every ReadSnapshot error about the
// snapshot's content (I/O errors are wrapped as they are).
var ErrCorruptSnapshot = errors.New("znode: corrupt snapshot")

// snapMagic starts every tree snapshot; the digit is the format version.
const snapMagic = "ZKRTREE1"

// Snapshot format (all integers big-endian):
//
//	magic "ZKRTREE1"
//	uint64 node count
//	per node, in byte order of path (so a parent precedes its children):
//	  string path; uint8 kind; int64 owner, ttl, czxid, mzxid, ctime, mtime,
//	  pzxid; int32 version, aversion, creates;
//	  data: int32 length (-1 = nil) + bytes;
//	  uint32 ACL count, per entry int32 perms, string scheme, string id
//	uint32 CRC-32C of everything before it
//
// A string is a uint32 length + bytes.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the whole tree to w. Equal trees give equal bytes.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	nodes := make([]*node, 0, t.nodes.len())
	for n := range t.nodes.all() {
		nodes = append(nodes, n)
	}
	return writeSnapshot(w, nodes, nil)
}

// writeSnapshot writes nodes (in any order; sorted here by path) in the
// snapshot format. Only path and meta are read: the live meta if frozen is
// nil, else the meta as of that freeze.
func writeSnapshot(w io.Writer, nodes []*node, frozen *freezeState) error {
	sortByPath(nodes)
	bw := bufio.NewWriterSize(w, 64<<10)
	crc := crc32.New(castagnoli)

	buf := make([]byte, 0, 256)
	buf = append(buf, snapMagic...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(nodes)))
	var metas []meta // a batch of frozen metas (frozen.go)
	var touched byte
	if frozen != nil {
		metas = make([]meta, metaBatch)
	}
	for start := 0; start < len(nodes); start += metaBatch {
		batch := nodes[start:min(start+metaBatch, len(nodes))]
		if frozen != nil {
			if err := frozen.metasOf(batch, metas); err != nil {
				return err
			}
			touched ^= touchData(metas[:len(batch)])
		}
		for i, n := range batch {
			if frozen != nil {
				buf = appendNode(buf, &metas[i])
			} else {
				buf = appendNode(buf, &n.meta)
			}
			if len(buf) >= 32<<10 {
				crc.Write(buf)
				if _, err := bw.Write(buf); err != nil {
					return fmt.Errorf("znode: write snapshot: %w", err)
				}
				buf = buf[:0]
			}
		}
	}
	runtime.KeepAlive(touched)
	crc.Write(buf)
	buf = binary.BigEndian.AppendUint32(buf, crc.Sum32())
	if _, err := bw.Write(buf); err != nil {
		return fmt.Errorf("znode: write snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("znode: write snapshot: %w", err)
	}
	return nil
}

// touchData reads the first byte of each node's path and the last of its
// data (one allocation, meta.pd), and returns their XOR (for runtime.KeepAlive, so that
// the loads stay). A loop that does nothing else has the cache misses of
// many nodes in flight at once, where appendNode, doing much more per
// node, would wait for them nearly one by one. BenchmarkSnapshotJob1M, on
// a shared machine: 15 to 20% less CPU on the create workloads' shape
// (128-byte data), no change measured on the scale shape (100 bytes).
func touchData(metas []meta) byte {
	var x byte
	for i := range metas {
		m := &metas[i]
		if n := m.plen + m.dlen; n > 0 {
			pd := unsafe.Slice(m.pd, n)
			x ^= pd[0] ^ pd[n-1]
		}
	}
	return x
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendNode(b []byte, n *meta) []byte {
	b = appendString(b, n.path())
	b = append(b, byte(n.kind))
	// ext is the owner unless the node is a TTL node: a Check-clean tree
	// encodes 0 for the other, and a test's corrupt one (ext on a
	// persistent node) encodes as an owner, which the reader refuses.
	owner, ttl := n.ext, int64(0)
	if n.kind == kindTTL {
		owner, ttl = 0, n.ext
	}
	for _, v := range [...]int64{owner, ttl, n.czxid, n.mzxid, n.ctime, n.mtime, n.pzxid} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range [...]int32{n.version, n.aversion, n.creates} {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	if !n.hasData {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	} else {
		b = binary.BigEndian.AppendUint32(b, n.dlen)
		b = append(b, n.data()...)
	}
	acl := n.acl.list()
	b = binary.BigEndian.AppendUint32(b, uint32(len(acl)))
	return appendACLKey(b, acl)
}

// encodedSize is len(appendNode(nil, n)).
func encodedSize(n *meta) int {
	return fixedNodeBytes + int(n.plen) + int(n.dlen) + n.acl.encodedLen()
}

// fixedNodeBytes is what appendNode writes for a node besides its path's,
// data's and ACL entries' bytes: the lengths of those three, the kind, 7
// int64 and 3 int32.
const fixedNodeBytes = 4 + 1 + 7*8 + 3*4 + 4 + 4

// snapshotSize returns len of the tree's WriteSnapshot: the sum of
// encodedSize over its nodes, from the sums the tree keeps (dataSize,
// aclBytes) instead of a pass over them (Check verifies it is that sum).
func (t *Tree) snapshotSize() int64 {
	return snapOverhead + int64(fixedNodeBytes*t.nodes.len()) + t.dataSize + t.aclBytes
}

// snapOverhead is what a snapshot holds besides its nodes: the magic, the
// node count and the CRC.
const snapOverhead = int64(len(snapMagic) + 8 + 4)

// snapReader reads snapshot fields, feeding every byte to a CRC. The first
// error sticks.
type snapReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	// data, when not nil, is the whole input (ReadSnapshotBytes): fields
	// are copied from data[off:] and the checksum is computed once at the
	// end instead of field by field; r and crc are unused.
	data []byte
	off  int
	err  error
	tmp  [8]byte
	// scratch holds short strings while they are looked at (see scratchStr).
	scratch []byte
	// interned maps ACL schemes and ids to one copy each: most nodes share
	// a few ACLs. Bounded by maxInterned entries.
	interned map[string]string

	// Of the nodes read so far, in order.
	prev       string // path of the last node
	sorted     bool   // every path greater than the one before
	paths      []string
	lastParent *node      // parent of the last node (siblings come in a row)
	acl        []jute.ACL // scratch of the node being read
	lastACL    *aclList   // the last ACL other than the open one
}

const maxInterned = 1024

func (s *snapReader) fill(b []byte) {
	if s.err != nil {
		return
	}
	if s.data != nil {
		if len(s.data)-s.off < len(b) {
			s.err = fmt.Errorf("%w: truncated", ErrCorruptSnapshot)
			clear(b)
			return
		}
		s.off += copy(b, s.data[s.off:])
		return
	}
	if _, err := io.ReadFull(s.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: truncated", ErrCorruptSnapshot)
		}
		s.err = err
		clear(b)
		return
	}
	s.crc.Write(b)
}

func (s *snapReader) u32() uint32 {
	s.fill(s.tmp[:4])
	return binary.BigEndian.Uint32(s.tmp[:4])
}

func (s *snapReader) u64() uint64 {
	s.fill(s.tmp[:8])
	return binary.BigEndian.Uint64(s.tmp[:8])
}

func (s *snapReader) u8() uint8 {
	s.fill(s.tmp[:1])
	return s.tmp[0]
}

// bytes reads n bytes, growing the buffer only as data actually arrives, so
// a corrupt length cannot make it allocate more than the input holds.
func (s *snapReader) bytes(n uint32) []byte {
	const chunk = 64 << 10
	if s.data != nil && s.err == nil && int64(n) > int64(len(s.data)-s.off) {
		// In memory, what is left is known: fail before allocating.
		s.err = fmt.Errorf("%w: truncated", ErrCorruptSnapshot)
		return nil
	}
	out := make([]byte, 0, min(n, chunk))
	for remaining := n; remaining > 0 && s.err == nil; {
		k := min(remaining, chunk)
		start := len(out)
		out = append(out, make([]byte, k)...)
		s.fill(out[start:])
		remaining -= k
	}
	return out
}

// view reads n bytes: a view of the input when it is in memory
// (ReadSnapshotBytes), else a new buffer.
func (s *snapReader) view(n uint32) []byte {
	if s.data != nil && s.err == nil && int64(n) <= int64(len(s.data)-s.off) {
		b := s.data[s.off : s.off+int(n)]
		s.off += int(n)
		return b
	}
	return s.bytes(n)
}

// scratchStr reads a string into the scratch buffer, valid until the next
// call; longer strings than the scratch get a buffer of their own.
func (s *snapReader) scratchStr() []byte {
	n := s.u32()
	if s.data != nil && s.err == nil && int64(n) <= int64(len(s.data)-s.off) {
		b := s.data[s.off : s.off+int(n)]
		s.off += int(n)
		return b
	}
	if int64(n) > int64(cap(s.scratch)) {
		return s.bytes(n)
	}
	b := s.scratch[:n]
	s.fill(b)
	return b
}

// intern returns b as a string, one copy per distinct value (up to
// maxInterned of them).
func (s *snapReader) intern(b []byte) string {
	if v, ok := s.interned[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.interned) < maxInterned {
		s.interned[v] = v
	}
	return v
}

func (s *snapReader) corrupt(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
	}
}

// ReadSnapshot reads a tree written by WriteSnapshot. It checks the
// checksum, the structure (a valid path for every node, its parent before
// it, no duplicates, sensible kinds) and finally Tree.Check; it returns an
// error wrapping ErrCorruptSnapshot, never panics, on corrupt input. It may
// read past the end of the snapshot (r is buffered), so r should hold the
// snapshot only.
func ReadSnapshot(r io.Reader, opts Options) (*Tree, error) {
	// A reader that knows its length (bytes.Reader) bounds the node count,
	// so the index can be sized at once without trusting a corrupt count.
	s := &snapReader{r: bufio.NewReaderSize(r, 64<<10), crc: crc32.New(castagnoli)}
	left := -1
	if sized, ok := r.(interface{ Len() int }); ok {
		left = sized.Len()
	}
	return readSnapshot(s, opts, left)
}

// ReadSnapshotBytes is ReadSnapshot of the snapshot in b (bytes after its
// checksum are ignored, as ReadSnapshot may read them). It decodes in place
// and checksums b once, which is faster; the tree keeps no reference to b.
func ReadSnapshotBytes(b []byte, opts Options) (*Tree, error) {
	if b == nil {
		b = []byte{}
	}
	return readSnapshot(&snapReader{data: b}, opts, len(b))
}

// readSnapshot reads a snapshot from s; left is the number of bytes left in
// the input, or -1 if unknown.
func readSnapshot(s *snapReader, opts Options, left int) (*Tree, error) {
	s.scratch, s.interned, s.sorted = make([]byte, 4096), map[string]string{}, true
	var magic [len(snapMagic)]byte
	s.fill(magic[:])
	if s.err == nil && string(magic[:]) != snapMagic {
		s.corrupt("bad magic %q", magic[:])
	}
	count := s.u64()
	t := newEmpty(opts)
	if left >= 0 && s.err == nil {
		hint := min(count, uint64(left)/minEncodedNode)
		t.nodes.reserve(int(hint))
		s.paths = make([]string, 0, hint)
	}
	for i := uint64(0); i < count && s.err == nil; i++ {
		readNode(s, t, i)
	}
	if s.err != nil {
		return nil, fmt.Errorf("znode: read snapshot: %w", s.err)
	}
	var sum uint32
	if s.data != nil {
		sum = crc32.Checksum(s.data[:s.off], castagnoli)
	} else {
		sum = s.crc.Sum32()
	}
	if got := s.u32(); s.err == nil && got != sum {
		s.corrupt("checksum %08x, computed %08x", got, sum)
	}
	if s.err == nil && t.nodes.get(rootPath) == nil {
		s.corrupt("no root")
	}
	if s.err != nil {
		return nil, fmt.Errorf("znode: read snapshot: %w", s.err)
	}
	// The quota index was rebuilt by the inserts; the stats nodes are
	// rewritten from it (ZooKeeper's setupQuota), which changes nothing in
	// a snapshot of a tree that passed Check.
	t.refreshQuotas()
	// Written in path order (as writeSnapshot does), the paths read are
	// Check's sorted list already.
	check := t.Check
	if s.sorted {
		check = func() error { return t.checkPaths(s.paths) }
	}
	if err := check(); err != nil {
		return nil, fmt.Errorf("znode: read snapshot: %w: %w", ErrCorruptSnapshot, err)
	}
	return t, nil
}

// readNode reads the i-th node and links it into t.
func readNode(s *snapReader, t *Tree, i uint64) {
	n := &node{}
	// A view, valid until the next scratchStr: pd is made before the
	// ACL's strings are read.
	path := s.scratchStr()
	k := s.u8()
	var ints [7]int64
	for j := range ints {
		ints[j] = int64(s.u64())
	}
	owner, ttl := ints[0], ints[1]
	n.czxid, n.mzxid, n.ctime, n.mtime, n.pzxid = ints[2], ints[3], ints[4], ints[5], ints[6]
	n.version, n.aversion, n.creates = int32(s.u32()), int32(s.u32()), int32(s.u32())
	var data []byte
	hasData := false
	if l := s.u32(); l != 0xffffffff {
		data, hasData = s.view(l), true
	}
	if s.err != nil {
		return
	}
	n.initPathData(unsafe.String(unsafe.SliceData(path), len(path)), data)
	n.hasData = hasData
	nacl := s.u32()
	acl := s.acl[:0]
	for j := uint32(0); j < nacl && s.err == nil; j++ {
		perms := int32(s.u32())
		scheme := s.intern(s.scratchStr())
		id := s.intern(s.scratchStr())
		acl = append(acl, jute.ACL{Perms: perms, ID: jute.Id{Scheme: scheme, ID: id}})
	}
	s.acl = acl
	if s.err != nil {
		return
	}
	// Equal ACLs share one aclList (acllist.go): one equal to the previous
	// node's (siblings usually have the same) is that one, without a
	// look-up in the table.
	if s.lastACL != nil && slices.Equal(acl, s.lastACL.entries) {
		n.acl = s.lastACL
	} else {
		n.acl = t.findACL(acl)
		if n.acl != t.open {
			s.lastACL = n.acl
		}
	}
	n.kind = kind(k)
	n.ext = owner + ttl // at most one is not 0 once the checks pass
	switch {
	case k >= uint8(kindCount):
		s.corrupt("node %q: kind %d", n.path(), k)
	case (n.kind == kindEphemeral) != (owner != 0):
		s.corrupt("node %q: kind %d with owner %#x", n.path(), k, owner)
	case (n.kind == kindTTL) != (ttl != 0), ttl < 0 || ttl > maxTTL:
		s.corrupt("node %q: kind %d with ttl %d", n.path(), k, ttl)
	case !s.inOrder(n.path(), i) && t.nodes.get(n.path()) != nil:
		s.corrupt("node %q twice", n.path())
	case i == 0 && n.path() != rootPath:
		s.corrupt("first node %q is not the root", n.path())
	}
	if s.err != nil || i == 0 {
		if s.err == nil { // the root
			t.nodes.put(n)
			n.acl = t.acquire(n.acl)
			t.dataSize += int64(n.plen + n.dlen)
			if n.kind != kindPersistent {
				s.corrupt("root of kind %d", n.kind)
			}
		}
		return
	}
	np := n.path()
	if err := ValidatePath(np); err != nil {
		s.corrupt("%v", err)
		return
	}
	var parent *node
	if pp := parentOf(np, lastSlash(np)); s.lastParent != nil && s.lastParent.path() == pp {
		parent = s.lastParent
	} else {
		parent = t.nodes.get(pp)
	}
	if parent == nil {
		s.corrupt("node %q before its parent", np)
		return
	}
	if parent.kind == kindEphemeral {
		s.corrupt("node %q under an ephemeral", np)
		return
	}
	s.lastParent = parent
	t.insert(n, parent)
}

// minEncodedNode is the fewest bytes a node takes in a snapshot (a
// one-byte path, nil data, no ACL).
const minEncodedNode = fixedNodeBytes + 1

// inOrder records the i-th node's path and reports whether every path so
// far, this one included, was greater than the one before. While that
// holds no path can have been read twice, and the paths read are sorted.
func (s *snapReader) inOrder(path string, i uint64) bool {
	if i > 0 && path <= s.prev {
		s.sorted = false
	}
	s.prev = path
	s.paths = append(s.paths, path)
	return s.sorted
}

// crcOf returns the snapshot checksum of b.
func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
