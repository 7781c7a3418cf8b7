package zkimport

import (
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/zkimport/zkdisk"
	"github.com/zkraft/zkraft/internal/zktest"
)

// jw writes jute values.
type jw struct{ b []byte }

func (w *jw) int(v int32)  { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *jw) long(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *jw) str(s string) { w.int(int32(len(s))); w.b = append(w.b, s...) }
func (w *jw) buf(b []byte) {
	if b == nil {
		w.int(-1)
		return
	}
	w.int(int32(len(b)))
	w.b = append(w.b, b...)
}
func (w *jw) seal() { w.long(int64(adler32.Checksum(w.b))); w.str("/") }

// writeEpochData writes a ZooKeeper data directory as an ensemble in epoch 5
// would leave it: snapshot.500000000 holding the built-in nodes, then a log
// of n creates of /e<i> at zxids 0x500000001...
func writeEpochData(t *testing.T, dir string, n int) int64 {
	t.Helper()
	const base = int64(5) << 32
	v2 := filepath.Join(dir, "version-2")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &jw{}
	s.int(zkdisk.SnapMagic)
	s.int(zkdisk.FileVersion)
	s.long(-1)
	s.int(0) // sessions
	s.int(1) // ACL cache: 1 -> world:anyone READ
	s.long(1)
	s.int(1)
	s.int(1)
	s.str("world")
	s.str("anyone")
	for _, nd := range []struct {
		path string
		acl  int64
		c    int32
	}{{"", -1, 0}, {"/zookeeper", -1, 0}, {"/zookeeper/quota", -1, 0}, {"/zookeeper/config", 1, 0}} {
		s.str(nd.path)
		s.buf([]byte{})
		s.long(nd.acl)
		for range 4 {
			s.long(0) // czxid mzxid ctime mtime
		}
		s.int(0)
		s.int(nd.c)
		s.int(0)
		s.long(0)
		s.long(0)
	}
	s.str("/")
	s.seal()
	must(t, os.WriteFile(filepath.Join(v2, fmt.Sprintf("snapshot.%x", base)), s.b, 0o644), "write snapshot")

	l := &jw{}
	l.int(zkdisk.LogMagic)
	l.int(zkdisk.FileVersion)
	l.long(0)
	for i := 1; i <= n; i++ {
		tx := &jw{}
		tx.long(0x100000000000001)
		tx.int(int32(i))
		tx.long(base + int64(i))
		tx.long(1700000000000 + int64(i))
		tx.int(zkdisk.OpCreate)
		tx.str(fmt.Sprintf("/e%d", i))
		tx.buf([]byte("x"))
		tx.int(1)
		tx.int(31)
		tx.str("world")
		tx.str("anyone")
		tx.b = append(tx.b, 0) // not ephemeral
		tx.int(int32(i))       // parentCVersion
		l.long(int64(adler32.Checksum(tx.b)))
		l.buf(tx.b)
		l.b = append(l.b, 'B')
	}
	l.b = append(l.b, make([]byte, 512)...) // preallocation
	must(t, os.WriteFile(filepath.Join(v2, fmt.Sprintf("log.%x", base+1)), l.b, 0o644), "write log")
	return base + int64(n)
}

// TestImportLargeZxid imports zxids of epoch 5 (above 2^34): zkraft's raft
// log then starts past them, survives local snapshots and restarts there,
// and every new write gets a larger zxid.
func TestImportLargeZxid(t *testing.T) {
	zkDir := t.TempDir()
	last := writeEpochData(t, zkDir, 20)
	zr := t.TempDir()
	res, err := Import(Options{From: zkDir, DataDir: filepath.Join(zr, "data")})
	must(t, err, "import")
	if res.LastZxid != last || res.RaftIndex != uint64(last) || res.Txns != 20 {
		t.Fatalf("import: %+v, want last zxid and raft index %#x", res, last)
	}
	srv, err := zktest.Launch(zktest.Zkraft, zr, zktest.Options{Extra: map[string]string{"snapCount": "5"}})
	must(t, err, "start zkraft")
	defer srv.Close()
	c, _ := srv.Connect(t)
	_, st, err := c.Get("/e20")
	must(t, err, "get /e20")
	if st.Czxid != last {
		t.Errorf("/e20 czxid %#x, want %#x", st.Czxid, last)
	}
	prev := last
	for i := range 30 {
		_, err := c.Create(fmt.Sprintf("/new%d", i), nil, 0, zk.WorldACL(zk.PermAll))
		must(t, err, "create")
		_, st, err := c.Exists(fmt.Sprintf("/new%d", i))
		must(t, err, "exists")
		if st.Czxid <= prev {
			t.Fatalf("write %d got zxid %#x, not above %#x", i, st.Czxid, prev)
		}
		prev = st.Czxid
	}
	c.Close()
	snaps, err := filepath.Glob(filepath.Join(zr, "data", "snap", "*.snap"))
	must(t, err, "glob")
	if len(snaps) < 2 {
		t.Errorf("snapshots %v: want local ones past the imported one", snaps)
	}
	srv.Restart(t) // from a local snapshot taken past the imported one
	c, _ = srv.Connect(t)
	defer c.Close()
	_, st, err = c.Get("/new29")
	must(t, err, "get /new29 after restart")
	if st.Czxid != prev {
		t.Errorf("/new29 czxid %#x after restart, want %#x", st.Czxid, prev)
	}
	_, err = c.Create("/last", nil, 0, zk.WorldACL(zk.PermAll))
	must(t, err, "create after restart")
	if _, st, _ = c.Exists("/last"); st == nil || st.Czxid <= prev {
		t.Errorf("write after restart: %+v, want a zxid above %#x", st, prev)
	}
	kids, _, err := c.Children("/")
	must(t, err, "children")
	if len(kids) != 1+20+30+1 {
		t.Errorf("%d children of /, want 52", len(kids))
	}
}
