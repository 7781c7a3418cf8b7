package main

import (
	"bytes"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/znode"
)

func TestLogFormat(t *testing.T) {
	for _, c := range []struct {
		flag     string
		terminal bool
		want     string
		err      bool
	}{
		{"", true, "console", false},
		{"", false, "json", false},
		{"auto", true, "console", false},
		{"auto", false, "json", false},
		{"json", true, "json", false},
		{"console", false, "console", false},
		{"text", false, "", true},
	} {
		got, err := logFormat(c.flag, c.terminal)
		if c.err {
			require.Error(t, err, "%q", c.flag)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got, "flag %q terminal %v", c.flag, c.terminal)
	}
}

func TestVersionText(t *testing.T) {
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want []string
	}{
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-25T20:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, true, []string{"zkraft 0.1.0\n", "git commit: 0123456789abcdef (modified), committed 2026-11-25T20:00:00Z\n", "go: go1.26.8 "}},
		{"clean", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "feed"}, {Key: "vcs.modified", Value: "false"}}},
			true, []string{"git commit: feed\n"}},
		{"no build info", nil, false, []string{"zkraft 0.1.0\n", "git commit: unknown\n", "server version: " + server.Version}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := versionText(c.info, c.ok)
			for _, w := range c.want {
				require.Contains(t, got, w)
			}
		})
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, versionMain(nil, &out, &errOut))
	require.True(t, strings.HasPrefix(out.String(), "zkraft 0.1.0\n"), out.String())
	require.Contains(t, out.String(), "git commit: ")
	require.Equal(t, 2, versionMain([]string{"x"}, &out, &errOut))
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"save", "--help"}, {"restore", "-h"}, {"inspect", "--help"}, {"--help"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, snapshotMain(args, &out, &errOut), "%v: %s", args, errOut.String())
		require.Contains(t, out.String(), "usage: zkraft snapshot", "%v", args)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 2, snapshotMain([]string{"save"}, &out, &errOut))
	require.Contains(t, errOut.String(), "missing FILE")
}

// startAdminServer runs an in-process standalone server with its
// AdminServer on a free loopback port.
func startAdminServer(t *testing.T, dataDir string, superDigest string) *server.Server {
	t.Helper()
	cfg := server.Default()
	cfg.ClientPort, cfg.ClientPortAddress = 0, "127.0.0.1"
	cfg.DataDir = dataDir
	cfg.AdminEnabled, cfg.AdminAddress, cfg.AdminPort = true, "127.0.0.1", 0
	cfg.SuperDigest = superDigest
	s := server.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	require.NoError(t, s.Start())
	t.Cleanup(func() { require.NoError(t, s.Stop()) })
	return s
}

// TestSaveInspectRestore: save from a running server, inspect, restore
// into a new dir and serve it; broken files and used dirs are refused.
func TestSaveInspectRestore(t *testing.T) {
	src := startAdminServer(t, t.TempDir(), znode.DigestID("super:pw"))
	c, _, err := zk.Connect([]string{src.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.AddAuth("digest", []byte("u:p")))
	_, err = c.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "u", "p"))
	require.NoError(t, err)
	_, err = c.SetACL("/", zk.DigestACL(zk.PermAll, "u", "p"), -1)
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "backup.zkb")
	_, err = saveSnapshot(src.AdminAddr().String(), "/commands", "", file, 10*time.Second)
	require.ErrorContains(t, err, "401")
	_, err = os.Stat(file)
	require.True(t, os.IsNotExist(err), "no file after a refused save")
	h, err := saveSnapshot(src.AdminAddr().String(), "/commands", "super:pw", file, 10*time.Second)
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, inspect(file, &out))
	for _, w := range []string{"checksum:        ok (sha256)", "znodes:          5\n", "sessions:        0\n", "voters:          1\n",
		"last zxid:       0x"} {
		require.Contains(t, out.String(), w)
	}

	// Broken files are refused with the reason.
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	broken := filepath.Join(t.TempDir(), "broken")
	require.NoError(t, os.WriteFile(broken, raw[:len(raw)-10], 0o600))
	require.ErrorContains(t, inspect(broken, &out), "truncated")
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 1
	require.NoError(t, os.WriteFile(broken, flipped, 0o600))
	require.ErrorContains(t, inspect(broken, &out), "sha256 mismatch")
	_, err = restore(broken, filepath.Join(t.TempDir(), "x"), "", 0, 0)
	require.ErrorContains(t, err, "sha256 mismatch")

	// Used dirs are refused; one holding only myid is fine.
	used := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(used, "raft.db"), nil, 0o600))
	_, err = restore(file, used, "", 0, 0)
	require.ErrorContains(t, err, "not empty")
	_, err = restore(file, t.TempDir(), "", 3, 0)
	require.ErrorContains(t, err, "member 1")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "myid"), []byte("1\n"), 0o644))
	r, err := restore(file, dir, "", 0, 0)
	require.NoError(t, err)
	require.Equal(t, h.Index, r.index)
	dst := startAdminServer(t, dir, znode.DigestID("super:pw"))
	c2, _, err := zk.Connect([]string{dst.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c2.AddAuth("digest", []byte("u:p")))
	data, st, err := c2.Get("/secret")
	require.NoError(t, err)
	require.Equal(t, "s", string(data))
	require.LessOrEqual(t, uint64(st.Mzxid), h.Zxid)
	st, err = c2.Set("/secret", []byte("t"), -1)
	require.NoError(t, err)
	require.Greater(t, uint64(st.Mzxid), h.Index)

	// An ensemble's observers are restored as raft learners.
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte("server.1=127.0.0.1:1:2\nserver.2=127.0.0.1:3:4\n"+
		"server.3=127.0.0.1:5:6\nserver.4=127.0.0.1:7:8:observer\n"), 0o600))
	r, err = restore(file, t.TempDir(), cfg, 4, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, r.voters)
	require.Equal(t, []uint64{4}, r.observers)

	// With a dataLogDir, NEW is that directory and myid goes to dataDir,
	// where the member reads it.
	top := t.TempDir()
	dataDir, logDir := filepath.Join(top, "data"), filepath.Join(top, "log")
	require.NoError(t, os.WriteFile(cfg, []byte("dataDir="+dataDir+"\ndataLogDir="+logDir+"\n"+
		"server.1=127.0.0.1:1:2\nserver.2=127.0.0.1:3:4\nserver.3=127.0.0.1:5:6\n"), 0o600))
	_, err = restore(file, logDir, cfg, 2, 0)
	require.NoError(t, err)
	id, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	require.NoError(t, err)
	require.Equal(t, "2\n", string(id))
	_, err = os.Stat(filepath.Join(logDir, "myid"))
	require.True(t, os.IsNotExist(err), "myid written into the dataLogDir")
}

// TestRestoreBumpIndex: --bump-index N starts the restored member's raft
// index, so its zxids, N above the backup's.
func TestRestoreBumpIndex(t *testing.T) {
	src := startAdminServer(t, t.TempDir(), znode.DigestID("super:pw"))
	c, _, err := zk.Connect([]string{src.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Create("/n", []byte("v"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "backup.zkb")
	h, err := saveSnapshot(src.AdminAddr().String(), "/commands", "super:pw", file, 10*time.Second)
	require.NoError(t, err)

	_, err = restore(file, t.TempDir(), "", 0, math.MaxUint64)
	require.ErrorContains(t, err, "overflows")
	const bump = 1_000_000
	dir := t.TempDir()
	r, err := restore(file, dir, "", 0, bump)
	require.NoError(t, err)
	require.Equal(t, h.Index+bump, r.index)
	require.Equal(t, h.Index+bump, r.zxid)
	dst := startAdminServer(t, dir, znode.DigestID("super:pw"))
	// Before any write the server reports the bumped zxid, so a client of
	// the source that saw a later zxid is not refused.
	require.Equal(t, h.Index+bump, srvrZxid(t, dst.Addr().String()))
	c2, _, err := zk.Connect([]string{dst.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer c2.Close()
	data, st, err := c2.Get("/n")
	require.NoError(t, err)
	require.Equal(t, "v", string(data))
	require.LessOrEqual(t, uint64(st.Mzxid), h.Zxid, "restored nodes keep their zxids")
	st, err = c2.Set("/n", []byte("w"), -1)
	require.NoError(t, err)
	require.Greater(t, uint64(st.Mzxid), h.Index+bump)
}

// srvrZxid asks a server's srvr four-letter word for its last zxid.
func srvrZxid(t *testing.T, addr string) uint64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Write([]byte("srvr"))
	require.NoError(t, err)
	out, err := io.ReadAll(conn)
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: 0x"); ok {
			z, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			return z
		}
	}
	t.Fatalf("srvr: no Zxid line in %q", out)
	return 0
}
