package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/jute"
)

func TestReconfigTarget(t *testing.T) {
	m := func(id uint64) Member {
		mb, err := parseMember(id, "h"+string(rune('0'+id))+":2888:3888;h:2181")
		if err != nil {
			t.Fatal(err)
		}
		return mb
	}
	obs := func(id uint64) Member {
		mb := m(id)
		mb.Role = "observer"
		return mb
	}
	published := map[uint64]Member{1: m(1), 2: m(2), 4: obs(4)}
	known := map[uint64]Member{1: m(1), 2: m(2), 3: m(3), 4: obs(4), 6: m(6)}
	tests := []struct {
		name     string
		req      jute.ReconfigRequest
		voters   []uint64
		learners []uint64
		want     []uint64
		code     int32
		missing  uint64
	}{
		{name: "an observer stays", req: jute.ReconfigRequest{LeavingServers: "2"}, voters: []uint64{1, 2, 3}, learners: []uint64{4},
			want: []uint64{1, 3, 4}},
		{name: "a voter to be is left to its change", req: jute.ReconfigRequest{LeavingServers: "2"}, voters: []uint64{1, 2, 3},
			learners: []uint64{6}, want: []uint64{1, 3}},
		{name: "add an observer", req: jute.ReconfigRequest{JoiningServers: "server.5=h5:2888:3888:observer;h:2181"},
			voters: []uint64{1, 2, 3}, learners: []uint64{4}, want: []uint64{1, 2, 3, 4, 5}},
		{name: "remove an observer", req: jute.ReconfigRequest{LeavingServers: "4"}, voters: []uint64{1, 2, 3}, learners: []uint64{4},
			want: []uint64{1, 2, 3}},
		{name: "observers only", req: jute.ReconfigRequest{LeavingServers: "1,2,3"}, voters: []uint64{1, 2, 3}, learners: []uint64{4},
			code: jute.ErrBadArguments},
		{name: "participant to observer", req: jute.ReconfigRequest{JoiningServers: "server.3=h3:2888:3888:observer;h:2181"},
			voters: []uint64{1, 2, 3}, code: jute.ErrBadArguments},
		{name: "observer to participant", req: jute.ReconfigRequest{JoiningServers: "server.4=h4:2888:3888:participant;h:2181"},
			voters: []uint64{1, 2, 3}, learners: []uint64{4}, code: jute.ErrBadArguments},
		{name: "new members turn an observer into a participant", req: jute.ReconfigRequest{NewMembers: "server.1=h1:1:2;h:3,server.4=h4:1:2;h:3"},
			voters: []uint64{1, 2}, learners: []uint64{4}, code: jute.ErrBadArguments},
		{name: "add", req: jute.ReconfigRequest{JoiningServers: "server.4=h4:2888:3888;h:2181"}, voters: []uint64{1, 2, 3}, want: []uint64{1, 2, 3, 4}},
		{name: "remove from raft's voters, not the lagging config", req: jute.ReconfigRequest{LeavingServers: "2"}, voters: []uint64{1, 2, 3}, want: []uint64{1, 3}},
		{name: "remove with server. prefix", req: jute.ReconfigRequest{LeavingServers: "server.1"}, voters: []uint64{1, 2}, want: []uint64{2}},
		{name: "remove every voter", req: jute.ReconfigRequest{LeavingServers: "1,2"}, voters: []uint64{1, 2}, code: jute.ErrBadArguments},
		{name: "bad joining spec", req: jute.ReconfigRequest{JoiningServers: "server.x=h"}, voters: []uint64{1}, code: jute.ErrBadArguments},
		{name: "no address for a voter", req: jute.ReconfigRequest{LeavingServers: "1"}, voters: []uint64{1, 5}, code: jute.ErrReconfigInProgress, missing: 5},
		{name: "new members replace all", req: jute.ReconfigRequest{NewMembers: "server.7=h7:1:2;h:3"}, voters: []uint64{1, 2}, want: []uint64{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, code, missing := ReconfigTarget(&tt.req, tt.voters, tt.learners, published, known)
			if code != tt.code || missing != tt.missing {
				t.Fatalf("code %d missing %d, want %d and %d", code, missing, tt.code, tt.missing)
			}
			if got := slices.Sorted(maps.Keys(target)); !slices.Equal(got, tt.want) {
				t.Fatalf("target %v, want %v", got, tt.want)
			}
			for id, mb := range target {
				if mb.ID != id || mb.Host == "" {
					t.Fatalf("member %d: %+v", id, mb)
				}
			}
		})
	}
}

func TestReconfigErrorCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int32
	}{
		{"last voter", fmt.Errorf("consensus: remove member 1: %w", consensus.ErrLastVoter), jute.ErrBadArguments},
		{"membership changed under the change", fmt.Errorf("%w: applied voters [2 3]", consensus.ErrMembershipChanged),
			jute.ErrReconfigInProgress},
		{"no running majority", consensus.ErrNoActiveQuorum, jute.ErrNewConfigNoQuorum},
		{"not caught up", consensus.ErrNotCaughtUp, jute.ErrNewConfigNoQuorum},
		{"timeout", context.DeadlineExceeded, jute.ErrNewConfigNoQuorum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReconfigErrorCode(tt.err); got != tt.code {
				t.Fatalf("ReconfigErrorCode(%v) = %d, want %d", tt.err, got, tt.code)
			}
		})
	}
}
