package sim

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestMemberAcceptsLivenessAsServer: the simulated leader counts a liveness
// report from the members the server's receiver does (consensus.Node.IsMember):
// voters, outgoing voters of a joint configuration, learners.
func TestMemberAcceptsLivenessAsServer(t *testing.T) {
	tests := []struct {
		name string
		cs   *pb.ConfState
		from uint64
		want bool
	}{
		{"voter", &pb.ConfState{Voters: []uint64{1, 2, 3}}, 2, true},
		{"learner", &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}, 4, true},
		{"outgoing voter of a joint configuration", &pb.ConfState{Voters: []uint64{1, 2}, VotersOutgoing: []uint64{1, 2, 3}}, 3, true},
		{"not a member", &pb.ConfState{Voters: []uint64{1, 2, 3}}, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &member{confState: tt.cs}
			if got := m.acceptsLiveness(tt.from); got != tt.want {
				t.Fatalf("report from %d under %v accepted: %v, want %v", tt.from, tt.cs, got, tt.want)
			}
		})
	}
}
