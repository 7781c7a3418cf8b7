package consensus

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestInConfState: the members of a configuration are its voters, the
// voters of the outgoing half of a joint configuration and its learners.
func TestInConfState(t *testing.T) {
	joint := &pb.ConfState{Voters: []uint64{1, 2}, VotersOutgoing: []uint64{1, 2, 3}, Learners: []uint64{4},
		LearnersNext: []uint64{3}}
	tests := []struct {
		name string
		cs   *pb.ConfState
		id   uint64
		want bool
	}{
		{"voter", joint, 1, true},
		{"learner", joint, 4, true},
		{"outgoing voter being demoted", joint, 3, true},
		{"outgoing voter being removed", &pb.ConfState{Voters: []uint64{1}, VotersOutgoing: []uint64{1, 2}}, 2, true},
		{"not a member", joint, 5, false},
		{"no configuration", nil, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InConfState(tt.cs, tt.id); got != tt.want {
				t.Fatalf("InConfState(%v, %d) = %v, want %v", tt.cs, tt.id, got, tt.want)
			}
		})
	}
}
