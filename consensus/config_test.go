package consensus

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/stretchr/testify/require"
)

type nopTransport struct{}

func (nopTransport) Send([]*pb.Message)         {}
func (nopTransport) Start(MessageHandler) error { return nil }
func (nopTransport) Stop()                      {}

func TestConfigWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		werr string
	}{
		{"standalone", Config{ID: 1, DataDir: "d"}, ""},
		{"zero id", Config{DataDir: "d"}, "ID must be non-zero"},
		{"no dir", Config{ID: 1}, "DataDir"},
		{"self missing", Config{ID: 1, DataDir: "d", Peers: []Peer{{ID: 2}}}, "must include this member"},
		{"duplicate peer", Config{ID: 1, DataDir: "d", Peers: []Peer{{ID: 1}, {ID: 1}}}, "duplicate"},
		{"zero peer", Config{ID: 1, DataDir: "d", Peers: []Peer{{ID: 1}, {ID: 0}}}, "non-zero"},
		{"cluster without transport", Config{ID: 1, DataDir: "d", Peers: []Peer{{ID: 1}, {ID: 2}}}, "Transport"},
		{"cluster", Config{ID: 1, DataDir: "d", Peers: []Peer{{ID: 1}, {ID: 2}}, Transport: nopTransport{}}, ""},
		{"join", Config{ID: 4, DataDir: "d", Join: true, Transport: nopTransport{}}, ""},
		{"ticks", Config{ID: 1, DataDir: "d", ElectionTicks: 2, HeartbeatTicks: 2}, "must exceed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.werr != "" {
				require.ErrorContains(t, err, tt.werr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, DefaultTickInterval, c.TickInterval)
			require.Equal(t, DefaultElectionTicks, c.ElectionTicks)
			require.Equal(t, uint64(DefaultSnapshotEvery), c.SnapshotEvery)
			require.Equal(t, uint64(DefaultKeepEntries), c.KeepEntries)
			if !c.Join {
				require.NotEmpty(t, c.Peers)
			}
		})
	}
}
