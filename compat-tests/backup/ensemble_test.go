package backup

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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
		for _, name := range []string{"raft.db", "snap"} {
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
