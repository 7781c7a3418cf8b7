package sim

import (
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/consensus"
)

// TestMembershipChangedJudged: a change may fail with
// consensus.ErrMembershipChanged only if its deciding member applied,
// after the target was computed, a conf change that is no step of the
// change (ownMove); a probe that must be refused needs the same for it.
// Its own steps (the plan's removals, its learner added, promoted or
// rolled back) do not count. A member that applies fewer than Members-1
// voters fails the run.
func TestMembershipChangedJudged(t *testing.T) {
	cs := func(voters []uint64, learners ...uint64) *pb.ConfState {
		return &pb.ConfState{Voters: voters, Learners: learners}
	}
	three := cs([]uint64{1, 2, 3})
	tests := []struct {
		name       string
		planned    *pb.ConfState
		target     []uint64
		mustRefuse string
		applied    []*pb.ConfState // what the deciding member applies, in order
		want       string          // a failure containing this; "" for none
	}{
		{name: "nothing applied", planned: three, target: []uint64{1, 2},
			want: "applied no conf change other than the change's own steps"},
		{name: "its own removal applied", planned: three, target: []uint64{1, 2},
			applied: []*pb.ConfState{cs([]uint64{1, 2})},
			want:    "applied no conf change other than the change's own steps"},
		{name: "another removal applied", planned: three, target: []uint64{1, 2},
			applied: []*pb.ConfState{cs([]uint64{2, 3})}},
		{name: "its own removal and another learner in one Ready", planned: three, target: []uint64{2, 3},
			applied: []*pb.ConfState{cs([]uint64{2, 3}, 4)}},
		{name: "its learner added, promoted, rolled back", planned: three, target: []uint64{1, 2, 3, 4},
			applied: []*pb.ConfState{cs([]uint64{1, 2, 3}, 4), cs([]uint64{1, 2, 3, 4}), three},
			want:    "applied no conf change other than the change's own steps"},
		{name: "its learner added, then a removal", planned: three, target: []uint64{1, 2, 3, 4},
			applied: []*pb.ConfState{cs([]uint64{1, 2, 3}, 4), cs([]uint64{2, 3}, 4)}},
		{name: "another change's learner promoted", planned: cs([]uint64{1, 2, 3}, 5), target: []uint64{1, 2, 3, 4},
			applied: []*pb.ConfState{cs([]uint64{1, 2, 3, 5})}},
		{name: "probe, nothing applied", planned: three, target: []uint64{1, 3}, mustRefuse: "member 3 down",
			want: "applied no conf change other than the change's own steps"},
		{name: "probe, another removal applied", planned: three, target: []uint64{1, 3}, mustRefuse: "member 3 down",
			applied: []*pb.ConfState{cs([]uint64{1, 2})}},
		{name: "a member applies one voter of three", planned: three, target: []uint64{1, 2},
			applied: []*pb.ConfState{cs([]uint64{2})},
			want:    "applied voters [2]: fewer than 2 (Members-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{cfg: Config{Members: 3}}
			m := &member{w: w, id: 1}
			sc := &simChange{m: m, what: "change", target: tt.target, mustRefuse: tt.mustRefuse,
				planned: tt.planned, seen: tt.planned}
			w.rc.running = sc
			for _, a := range tt.applied {
				w.noteVoters(m, a, false)
			}
			w.changeDone(sc, fmt.Errorf("%w: test", consensus.ErrMembershipChanged))
			var got string
			for _, f := range w.failed {
				got += f.String() + "\n"
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("failures %q, want one with %q", got, tt.want)
			}
		})
	}
}
