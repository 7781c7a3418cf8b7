package backup

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// run execs the zkraft binary with args, bounded in time.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := zktest.ZkraftBinary()
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("zkraft %v: timed out", args)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// options: a standalone zkraft with a super user and its AdminServer on a
// free loopback port.
func options(t *testing.T) (zktest.Options, string) {
	t.Helper()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return zktest.Options{
		SuperDigest: zktest.DigestACLHash("super:secret"),
		Extra: map[string]string{
			"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1", "admin.serverPort": strconv.Itoa(port),
		},
	}, "127.0.0.1:" + strconv.Itoa(port)
}

// nodeState is everything a client sees of a node.
type nodeState struct {
	Data string
	ACL  []zk.ACL
	Stat zk.Stat
}

// walk reads the whole tree below p.
func walk(t *testing.T, c *zk.Conn, p string, out map[string]nodeState) {
	t.Helper()
	data, st, err := c.Get(p)
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	acl, _, err := c.GetACL(p)
	if err != nil {
		t.Fatalf("getACL %s: %v", p, err)
	}
	out[p] = nodeState{Data: string(data), ACL: acl, Stat: *st}
	kids, _, err := c.Children(p)
	if err != nil {
		t.Fatalf("children %s: %v", p, err)
	}
	sort.Strings(kids)
	for _, k := range kids {
		walk(t, c, path.Join(p, k), out)
	}
}

func superConn(t *testing.T, s *zktest.Server) *zk.Conn {
	t.Helper()
	c, _ := s.Connect(t)
	if err := c.AddAuth("digest", []byte("super:secret")); err != nil {
		t.Fatal(err)
	}
	return c
}

// serverZxid is the last zxid srvr reports.
func serverZxid(t *testing.T, s *zktest.Server) int64 {
	t.Helper()
	out, err := s.FourLetter("srvr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			z, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			return z
		}
	}
	t.Fatalf("no Zxid in srvr: %q", out)
	return 0
}

func TestSaveRestore(t *testing.T) {
	opts, admin := options(t)
	src := zktest.Start(t, zktest.Zkraft, opts)
	app, _ := src.Connect(t)
	if err := app.AddAuth("digest", []byte("app:pw")); err != nil {
		t.Fatal(err)
	}
	world := zk.WorldACL(zk.PermAll)
	appOnly := zk.DigestACL(zk.PermAll, "app", "pw")
	otherOnly := zk.DigestACL(zk.PermRead|zk.PermWrite, "other", "x") // only super can read it from here
	mustCreate := func(p, data string, flags int32, acl []zk.ACL) string {
		t.Helper()
		got, err := app.Create(p, []byte(data), flags, acl)
		if err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		return got
	}
	mustCreate("/app", "root of app", 0, world)
	mustCreate("/app/config", "k=v", 0, appOnly)
	mustCreate("/app/hidden", "only other and super", 0, otherOnly)
	mustCreate("/app/empty", "", 0, world)
	mustCreate("/app/binary", "\x00\x01\xff", 0, append(appOnly, zk.WorldACL(zk.PermRead)...))
	mustCreate("/app/queue", "", 0, world)
	for i := range 3 {
		mustCreate("/app/queue/item-", fmt.Sprint(i), zk.FlagSequence, world)
	}
	if _, err := app.Set("/app/config", []byte("k=v2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := app.Delete("/app/empty", 0); err != nil {
		t.Fatal(err)
	}
	// From here on only app (and super) has ALL on /.
	if _, err := app.SetACL("/", append(appOnly, zk.WorldACL(zk.PermRead)...), -1); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "zk.backup")
	_, stderr, code := run(t, "snapshot", "save", "--server", admin, file)
	if code == 0 || !strings.Contains(stderr, "401") {
		t.Fatalf("save without credentials: exit %d, stderr %q; want a refusal (401)", code, stderr)
	}
	_, stderr, code = run(t, "snapshot", "save", "--server", admin, "--auth", "app:nope", file)
	if code == 0 || !strings.Contains(stderr, "403") {
		t.Fatalf("save with a wrong password: exit %d, stderr %q; want 403", code, stderr)
	}
	out, stderr, code := run(t, "snapshot", "save", "--server", admin, "--auth", "super:secret", file)
	if code != 0 {
		t.Fatalf("save: exit %d: %s", code, stderr)
	}
	t.Logf("save: %s", out)
	lastZxid := serverZxid(t, src) // srvr opens no session: nothing was written since the save

	// The tree as of the save, read as the super user.
	before := map[string]nodeState{}
	walk(t, superConn(t, src), "/", before)

	out, stderr, code = run(t, "snapshot", "inspect", file)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"checksum:        ok (sha256)", fmt.Sprintf("znodes:          %d\n", len(before)),
		fmt.Sprintf("last zxid:       0x%x\n", lastZxid)} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	newDir := t.TempDir()
	out, stderr, code = run(t, "snapshot", "restore", file, "--data-dir", filepath.Join(newDir, "data"))
	if code != 0 {
		t.Fatalf("restore: exit %d: %s", code, stderr)
	}
	t.Logf("restore: %s", out)
	_, stderr, code = run(t, "snapshot", "restore", file, "--data-dir", filepath.Join(newDir, "data"))
	if code == 0 || !strings.Contains(stderr, "not empty") {
		t.Fatalf("restore into a used dir: exit %d, stderr %q; want a refusal", code, stderr)
	}

	opts2, _ := options(t)
	dst, err := zktest.Launch(zktest.Zkraft, newDir, opts2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dst.Close()
		if t.Failed() {
			t.Logf("restored server's log:\n%s", dst.LogTail(60))
		}
	})
	if z := serverZxid(t, dst); z != lastZxid {
		t.Errorf("restored server's zxid 0x%x, want the backup's 0x%x", z, lastZxid)
	}
	dc := superConn(t, dst)
	after := map[string]nodeState{}
	walk(t, dc, "/", after)
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s missing after restore", p)
		} else if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differs:\nbefore %+v\nafter  %+v", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared after restore", p)
		}
	}

	// ACLs hold on the restored server: app's node refuses other clients.
	anon, _ := dst.Connect(t)
	if _, _, err := anon.Get("/app/config"); err != zk.ErrNoAuth {
		t.Errorf("anonymous get of /app/config on the restored server: %v, want ErrNoAuth", err)
	}
	// New writes get zxids above the backup's.
	st, err := dc.Set("/app/config", []byte("after"), -1)
	if err != nil {
		t.Fatal(err)
	}
	created, err := dc.Create("/app/queue/item-", nil, zk.FlagSequence, world)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mzxid <= lastZxid {
		t.Errorf("write after restore got zxid 0x%x, not above the backup's 0x%x", st.Mzxid, lastZxid)
	}
	if created != "/app/queue/item-0000000003" {
		t.Errorf("sequential create after restore: %s, want the counter to continue at 3", created)
	}
}

func TestVersion(t *testing.T) {
	out, stderr, code := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "zkraft ") || !strings.Contains(out, "git commit: ") {
		t.Fatalf("zkraft version: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"snapshot", "save", "--help"}, {"version", "--help"}} {
		out, _, code := run(t, args...)
		if code != 0 || !strings.Contains(out, "usage: zkraft") {
			t.Errorf("zkraft %v: exit %d, stdout %q", args, code, out)
		}
	}
}
