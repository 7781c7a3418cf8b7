package ensemble

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// sessionHolder is a running kazoo_session_holder.py.
type sessionHolder struct {
	proc     *zktest.SuiteProcess
	id       int64
	password []byte
	lost     chan struct{}
}

// startSessionHolder runs kazoo_session_holder.py against member m: a kazoo
// session on m alone that holds path as an ephemeral.
func startSessionHolder(t *testing.T, m *zktest.Member, path string) *sessionHolder {
	t.Helper()
	script, err := filepath.Abs("kazoo_session_holder.py")
	if err != nil {
		t.Fatalf("locate kazoo_session_holder.py: %v", err)
	}
	h := &sessionHolder{lost: make(chan struct{})}
	session := make(chan string, 1)
	onLine := func(line string) {
		t.Logf("holder on member %d: %s", m.ID, line)
		switch {
		case strings.HasPrefix(line, "session "):
			session <- strings.TrimPrefix(line, "session ")
		case line == "lost":
			close(h.lost)
		}
	}
	h.proc = zktest.StartSuite(t, 90*time.Second, nil, onLine, python, "-u", script, m.Addr, path)
	select {
	case s := <-session:
		idHex, pwHex, ok := strings.Cut(s, " ")
		id, err1 := strconv.ParseUint(idHex, 16, 64)
		pw, err2 := hex.DecodeString(pwHex)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("holder printed %q; want \"session <id hex> <password hex>\"", s)
		}
		h.id, h.password = int64(id), pw
	case <-h.proc.Done():
		t.Fatalf("kazoo_session_holder.py ended before its session was up")
	case <-time.After(30 * time.Second):
		t.Fatalf("kazoo_session_holder.py: no session within 30s")
	}
	return h
}

// closeSessionOn attaches a raw client to session id on member m and
// closes the session there.
func closeSessionOn(t *testing.T, m *zktest.Member, id int64, password []byte) {
	t.Helper()
	var b *zktest.RawConn
	waitFor(t, 10*time.Second, fmt.Sprintf("attach session %#x on member %d", id, m.ID), func() error {
		c, r, err := zktest.DialRawRequest(m.Addr, jute.ConnectRequest{TimeOut: 6000, SessionID: id, Passwd: password})
		if err != nil {
			return err // m has not applied the session yet: it closes the connection
		}
		if r.TimeOut == 0 {
			c.Close()
			return fmt.Errorf("session %#x refused", id)
		}
		b = c
		return nil
	})
	defer b.Close()
	if hdr, err := b.CloseSession(); err != nil || hdr.Err != 0 {
		t.Fatalf("closeSession of %#x on member %d = %+v, %v", id, m.ID, hdr, err)
	}
}

// TestSessionClosedElsewhereIsLost: a kazoo client holds a session and an
// ephemeral on one member; a second client attaches to the same session id
// and password on another member and closes it. The ephemeral goes, and the
// kazoo client must learn that its session is gone (state LOST) within a
// bounded time, as with ZooKeeper, which closes the session's connection on
// every server: before, it stayed CONNECTED forever on its member, its
// pings answered, and kazoo's and Curator's session-expiry recipes failed
// on an ensemble.
func TestSessionClosedElsewhereIsLost(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import kazoo.client").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kazoo (install Debian's python3-kazoo: scripts/install-deps.sh): %v\n%s", python, err, out)
	}
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		c := startCluster(t, target, 3)
		leader := c.Leader(t)
		fs := c.Followers(leader)
		tests := []struct {
			name           string
			holder, closer *zktest.Member
		}{
			{"held_on_follower_closed_on_other_follower", fs[0], fs[1]},
			{"held_on_follower_closed_on_leader", fs[1], leader},
			{"held_on_leader_closed_on_follower", leader, fs[0]},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				path := fmt.Sprintf("/held-%d", i)
				h := startSessionHolder(t, tt.holder, path)
				requireEphemeralEverywhere(t, c, path, h.id)
				closeSessionOn(t, tt.closer, h.id, h.password)
				requireEphemeralEverywhere(t, c, path, 0)
				select {
				case <-h.lost:
				case <-h.proc.Done():
					t.Fatalf("the holder on member %d ended without seeing its session lost", tt.holder.ID)
				case <-time.After(20 * time.Second):
					t.Fatalf("the holder on member %d did not see session %#x LOST within 20s of its close on member %d",
						tt.holder.ID, h.id, tt.closer.ID)
				}
			})
		}
	})
}
