package server

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/memnet"
)

// TestLivenessReceiverEndsIdleConnection: the leader's liveness reader of a
// connection on which nothing arrives for livenessIdlePeriods report
// periods ends, whether a partition left the follower's connection
// half-open or the follower just went silent; before, it stayed until Stop.
func TestLivenessReceiverEndsIdleConnection(t *testing.T) {
	tests := []struct {
		name string
		cut  func(mn *memnet.Network)
	}{
		{"partition leaves the connection half-open", func(mn *memnet.Network) { mn.Partition("m1", "m2") }},
		{"follower's link to the leader cut", func(mn *memnet.Network) { mn.Cut("m1", "m2") }},
		{"sender silent", func(*memnet.Network) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mn := memnet.New()
			s := newEnsembleMember(t, "m2:3888")
			s.cfg.TickTimeMs = 20 // reports every 10 ms: idle after 100 ms
			ln, err := mn.Host("m2").Listen("tcp", "m2:3888")
			require.NoError(t, err)
			s.wg.Add(1)
			go s.livenessReceiver(ln)
			t.Cleanup(func() {
				close(s.stopC)
				_ = ln.Close()
				s.wg.Wait()
			})
			c, err := mn.Host("m1").DialContext(t.Context(), "tcp", "m2:3888")
			require.NoError(t, err)
			defer c.Close()
			frame := binary.BigEndian.AppendUint32(nil, 8)
			frame = binary.BigEndian.AppendUint64(frame, 1) // a keepalive: the sender's id alone
			_, err = c.Write(frame)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return livenessGoroutines() == 2 }, 5*time.Second, 5*time.Millisecond,
				"the connection is accepted")
			tt.cut(mn)
			require.Eventually(t, func() bool { return livenessGoroutines() == 0 }, 5*time.Second, 10*time.Millisecond,
				"the reader of an idle liveness connection still runs")
		})
	}
}

// TestLivenessKeepalive: a sender with nothing to report writes an empty
// report on a link idle for livenessKeepalivePeriods rounds (so the
// leader's receiver does not close it), nothing on a link in use, and a
// keepalive that fails keeps the report written before it.
func TestLivenessKeepalive(t *testing.T) {
	const period = 10 * time.Millisecond
	tests := []struct {
		name        string
		idle        time.Duration // since the last write on the link
		closed      bool          // the link's connection fails
		wantFrame   bool
		wantPending []int64
	}{
		{"idle link: an empty report", time.Hour, false, true, []int64{}},
		{"link in use: nothing", 0, false, false, []int64{}},
		{"keepalive fails: the report before it is kept", time.Hour, true, false, []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mn := memnet.New()
			ln, err := mn.Host("m2").Listen("tcp", "m2:3888")
			require.NoError(t, err)
			defer ln.Close()
			s := newEnsembleMember(t, "m2:3888")
			c, err := mn.Host("m1").DialContext(t.Context(), "tcp", "m2:3888")
			require.NoError(t, err)
			peer, err := ln.Accept()
			require.NoError(t, err)
			defer peer.Close()
			link := livenessLink{conn: c, leader: 2, written: time.Now().Add(-tt.idle)}
			defer link.close()
			s.liveness.link, s.liveness.prev = 2, []int64{4} // report {4} was written on link
			if tt.closed {
				require.NoError(t, c.Close())
			}
			s.reportTouched(&link, 2, period)
			require.Equal(t, tt.wantPending, s.liveness.pending())
			if tt.closed {
				require.Nil(t, link.conn, "a failed link is dropped")
				return
			}
			_ = peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			got := make([]byte, 12)
			_, err = io.ReadFull(peer, got)
			if !tt.wantFrame {
				require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "no frame on a link in use: %v, %x", err, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, uint32(8), binary.BigEndian.Uint32(got), "an empty report")
			require.Equal(t, uint64(1), binary.BigEndian.Uint64(got[4:]), "the sender's id")
		})
	}
}
