package server

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// freeMember returns a member on free loopback ports.
func freeMember(t *testing.T, id uint64) Member {
	t.Helper()
	ports, err := freeport.Ports(3)
	require.NoError(t, err)
	return Member{ID: id, Host: "127.0.0.1", PeerPort: ports[0], ElectionPort: ports[1], Role: "participant",
		ClientAddr: fmt.Sprintf("127.0.0.1:%d", ports[2])}
}

// startJoiner starts member m with Join, knowing members; its Start returns
// once it was added and caught up, so it runs in the background.
func startJoiner(t *testing.T, m Member, members map[uint64]Member) (*Server, <-chan error) {
	t.Helper()
	all := map[uint64]Member{m.ID: m}
	for id, o := range members {
		all[id] = o
	}
	_, port, _ := net.SplitHostPort(m.ClientAddr)
	cfg := Default()
	cfg.AdminEnabled = false
	cfg.ClientPortAddress = "127.0.0.1"
	_, _ = fmt.Sscan(port, &cfg.ClientPort)
	cfg.DataDir = t.TempDir()
	cfg.ServerID = m.ID
	cfg.Members = all
	cfg.ElectionTickMs = 20
	cfg.Join = true
	s := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	errc := make(chan error, 1)
	go func() { errc <- s.Start() }()
	t.Cleanup(func() { _ = s.Stop() })
	return s, errc
}

// TestReconfigAddsTwoMembersAtOnce: one reconfig joining two members ends
// with both voters on every member and both in /zookeeper/config (before
// the fix the second conf change was turned into an empty entry and the
// reconfig failed with NewConfigNoQuorum).
func TestReconfigAddsTwoMembersAtOnce(t *testing.T) {
	servers, members := startEnsemble(t, 3, func(cfg *Config) { cfg.ReconfigEnabled = true })
	m4, m5 := freeMember(t, 4), freeMember(t, 5)
	s4, err4 := startJoiner(t, m4, members)
	s5, err5 := startJoiner(t, m5, members)

	// On the leader, the second conf change used to reach raft before it
	// was told the first was applied.
	var lead *Server
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.node.IsLeader() {
				lead = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	code, _ := lead.reconfigure(&jute.ReconfigRequest{
		JoiningServers: m4.String() + "," + m5.String(), CurConfigID: -1,
	})
	require.Equal(t, int32(0), code)
	require.NoError(t, <-err4)
	require.NoError(t, <-err5)
	for _, s := range append(servers, s4, s5) {
		require.Eventually(t, func() bool {
			return slices.Equal(s.node.Status().Voters, []uint64{1, 2, 3, 4, 5})
		}, 10*time.Second, 10*time.Millisecond, "member %d", s.cfg.ServerID)
	}
	// The member that ran the reconfig has applied the published config.
	lead.sm.mu.RLock()
	data, _, _ := lead.sm.tree.GetData("/zookeeper/config")
	lead.sm.mu.RUnlock()
	for _, m := range []Member{m4, m5} {
		require.Contains(t, string(data), m.String())
	}

	// Removing every voter is refused and changes nothing.
	code, _ = servers[0].reconfigure(&jute.ReconfigRequest{LeavingServers: "1,2,3,4,5", CurConfigID: -1})
	require.Equal(t, jute.ErrBadArguments, code)
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, servers[0].node.Status().Voters)
	require.Equal(t, 5, strings.Count(string(data), "server."))
}

// TestRemovedMemberStopsServing: a member removed by reconfig closes its
// client connections and refuses new ones, and the leader ignores liveness
// reports it sends, so the session of a client that was on it expires
// (before the fix the removed member went on answering from its frozen tree
// and kept the session alive on the leader).
func TestRemovedMemberStopsServing(t *testing.T) {
	servers, members := startEnsemble(t, 3, func(cfg *Config) {
		cfg.ReconfigEnabled = true
		cfg.TickTimeMs = 100 // sessions of 1s expire quickly
	})
	var lead, gone *Server
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.node.IsLeader() {
				lead = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	for _, s := range servers {
		if s != lead {
			gone = s
			break
		}
	}
	client, resp := zktest.DialRaw(t, gone.Addr().String(), 0, nil, 1000, false)
	sid := resp.SessionID
	require.Eventually(t, func() bool {
		lead.sm.mu.RLock()
		defer lead.sm.mu.RUnlock()
		_, ok := lead.sm.sessions.Get(sid)
		return ok
	}, 10*time.Second, 10*time.Millisecond)

	code, _ := lead.reconfigure(&jute.ReconfigRequest{LeavingServers: fmt.Sprint(gone.cfg.ServerID), CurConfigID: -1})
	require.Equal(t, int32(0), code)

	require.NoError(t, client.ExpectClosed(10*time.Second), "the removed member closes its clients")
	_, _, err := zktest.DialRawRequest(gone.Addr().String(), jute.ConnectRequest{TimeOut: 1000, Passwd: make([]byte, 16)})
	require.Error(t, err, "the removed member refuses new clients")

	// Reports in the removed member's name do not keep the session alive.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		c, err := net.Dial("tcp", members[lead.cfg.ServerID].ElectionAddr())
		if err != nil {
			return
		}
		defer c.Close()
		frame := binary.BigEndian.AppendUint32(nil, 16)
		frame = binary.BigEndian.AppendUint64(frame, gone.cfg.ServerID)
		frame = binary.BigEndian.AppendUint64(frame, uint64(sid))
		for {
			if _, err := c.Write(frame); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	require.Eventually(t, func() bool {
		lead.sm.mu.RLock()
		defer lead.sm.mu.RUnlock()
		_, ok := lead.sm.sessions.Get(sid)
		return !ok
	}, 10*time.Second, 20*time.Millisecond, "the session of the removed member's client expires")
	require.False(t, gone.serving.Load())
}
