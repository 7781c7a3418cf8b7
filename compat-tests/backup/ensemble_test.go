package backup

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// TestRestoreEnsemble: a backup restored into every member of a 3-member
// ensemble (same file, each member's zoo.cfg and id) gives each member the
// backup's tree; the ensemble elects a leader and takes writes above the
// backup's zxid.
func TestRestoreEnsemble(t *testing.T) {
	opts, admin := options(t)
	src := zktest.Start(t, zktest.Zkraft, opts)
	app, _ := src.Connect(t)
	if err := app.AddAuth("digest", []byte("app:pw")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/app", "/app/a", "/app/b"} {
		if _, err := app.Create(p, []byte(p), 0, zk.DigestACL(zk.PermAll, "app", "pw")); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "zk.backup")
	if _, stderr, code := run(t, "snapshot", "save", "--server", admin, "--auth", "super:secret", file); code != 0 {
		t.Fatalf("save: exit %d: %s", code, stderr)
	}
	lastZxid := serverZxid(t, src)
	want := map[string]nodeState{}
	walk(t, superConn(t, src), "/app", want)

	cl := zktest.StartCluster(t, 3, zktest.ClusterOptions{SuperDigest: opts.SuperDigest})
	for _, m := range cl.Members {
		m.Stop()
	}
	for _, m := range cl.Members {
		for _, name := range []string{"raft.db", "wal", "snap"} {
			if err := os.RemoveAll(filepath.Join(m.DataDir, name)); err != nil {
				t.Fatal(err)
			}
		}
		out, stderr, code := run(t, "snapshot", "restore", file, "--data-dir", m.DataDir,
			"--config", filepath.Join(m.Dir, "zoo.cfg"), "--myid", strconv.Itoa(m.ID))
		if code != 0 {
			t.Fatalf("restore member %d: exit %d: %s", m.ID, code, stderr)
		}
		t.Logf("member %d: %s", m.ID, out)
	}
	for _, m := range cl.Members {
		m.StartNoWait(t)
	}
	cl.WaitSettled(t)
	for _, m := range cl.Members {
		got := map[string]nodeState{}
		walk(t, superConn(t, m.Server), "/app", got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("member %d's /app differs from the backup's:\nwant %+v\ngot  %+v", m.ID, want, got)
		}
	}
	c, _ := cl.Connect(t, 10*time.Second)
	if err := c.AddAuth("digest", []byte("app:pw")); err != nil {
		t.Fatal(err)
	}
	st, err := c.Set("/app/a", []byte("after"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mzxid <= lastZxid {
		t.Errorf("write after restore got zxid 0x%x, not above the backup's 0x%x", st.Mzxid, lastZxid)
	}
}

// TestRestoreEnsembleElsewhere: a backup of a 3-member ensemble restored
// into another layout (other ports, 3 voters and an observer) serves the
// target's membership in /zookeeper/config, keeps the observer a learner,
// and no member dials the source's peer or election ports.
func TestRestoreEnsembleElsewhere(t *testing.T) {
	const super = "super:secret"
	a := zktest.StartCluster(t, 3, zktest.ClusterOptions{SuperDigest: zktest.DigestACLHash(super)})
	// Member 1 of the source serves the AdminServer for the save.
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	src := a.Member(1)
	src.Stop()
	f, err := os.OpenFile(filepath.Join(src.Dir, "zoo.cfg"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", port); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	src.Start(t)
	a.WaitSettled(t)
	c, _ := a.Connect(t, 10*time.Second)
	if _, err := c.Create("/app", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srcConfig := waitConfig(t, c, func(string) bool { return true })
	if !strings.Contains(srcConfig, strconv.Itoa(src.PeerPort)) {
		t.Fatalf("source /zookeeper/config %q does not list its members", srcConfig)
	}
	file := filepath.Join(t.TempDir(), "zk.backup")
	if _, stderr, code := run(t, "snapshot", "save", "--server", "127.0.0.1:"+strconv.Itoa(port), "--auth", super, file); code != 0 {
		t.Fatalf("save: exit %d: %s", code, stderr)
	}
	c.Close()
	var oldPorts []int
	for _, m := range a.Members {
		oldPorts = append(oldPorts, m.PeerPort, m.ElectionPort)
		m.Stop()
	}

	b := zktest.StartCluster(t, 4, zktest.ClusterOptions{SuperDigest: zktest.DigestACLHash(super), Observers: 1})
	for _, m := range b.Members {
		m.Stop()
	}
	// Anyone dialing the source's peer or election ports lands here.
	var dialed atomic.Int32
	for _, p := range oldPorts {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("listen on the source's port %d: %v", p, err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				dialed.Add(1)
				conn.Close()
			}
		}()
	}
	for _, m := range b.Members {
		for _, name := range []string{"raft.db", "wal", "snap"} {
			if err := os.RemoveAll(filepath.Join(m.DataDir, name)); err != nil {
				t.Fatal(err)
			}
		}
		if _, stderr, code := run(t, "snapshot", "restore", file, "--data-dir", m.DataDir,
			"--config", filepath.Join(m.Dir, "zoo.cfg"), "--myid", strconv.Itoa(m.ID)); code != 0 {
			t.Fatalf("restore member %d: exit %d: %s", m.ID, code, stderr)
		}
	}
	for _, m := range b.Members {
		m.StartNoWait(t)
	}
	b.WaitSettled(t)
	bc, _ := b.Connect(t, 10*time.Second)
	if data, _, err := bc.Get("/app"); err != nil || string(data) != "v" {
		t.Fatalf("/app after restore: %q, %v", data, err)
	}
	cfg := waitConfig(t, bc, func(s string) bool { return strings.Contains(s, strconv.Itoa(b.Members[0].PeerPort)) })
	for _, m := range b.Members {
		if !strings.Contains(cfg, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", m.ID, m.PeerPort, m.ElectionPort)) {
			t.Errorf("/zookeeper/config %q lacks member %d", cfg, m.ID)
		}
	}
	if !strings.Contains(cfg, fmt.Sprintf("server.4=127.0.0.1:%d:%d:observer", b.Members[3].PeerPort, b.Members[3].ElectionPort)) {
		t.Errorf("/zookeeper/config %q does not list member 4 as an observer", cfg)
	}
	for _, p := range oldPorts {
		if strings.Contains(cfg, ":"+strconv.Itoa(p)) {
			t.Errorf("/zookeeper/config %q lists the source's port %d", cfg, p)
		}
	}
	if mode := b.Members[3].Mode(); mode != "observer" {
		t.Errorf("member 4 is %q after restore, want observer", mode)
	}
	time.Sleep(2 * time.Second) // time for a member to dial what it read
	if mode := b.Members[3].Mode(); mode != "observer" {
		t.Errorf("member 4 is %q after restore, want observer", mode)
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("%d connections to the source's peer/election ports after restore", n)
	}
}

// waitConfig returns /zookeeper/config's data once ok accepts it.
func waitConfig(t *testing.T, c *zk.Conn, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		data, _, err := c.Get("/zookeeper/config")
		if err == nil && len(data) > 0 && ok(string(data)) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/zookeeper/config: %q, %v", data, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
