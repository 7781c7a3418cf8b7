package zktest

import (
	"strings"
	"testing"
)

// TestCluster starts a 3-member ensemble of each target, finds its leader,
// and checks that a killed follower restarts and rejoins.
func TestCluster(t *testing.T) {
	for _, target := range Targets() {
		t.Run(string(target), func(t *testing.T) {
			c := StartCluster(t, 3, ClusterOptions{Target: target})
			if got := strings.Count(c.ConnectString(), ","); got != 2 {
				t.Fatalf("ConnectString() = %q", c.ConnectString())
			}
			leader := c.Leader(t)
			for _, m := range c.Followers(leader) {
				if mode := m.Mode(); mode != "follower" {
					t.Fatalf("member %d mode %q; want follower", m.ID, mode)
				}
			}
			f := c.Followers(leader)[0]
			f.Kill()
			if f.Running() {
				t.Fatal("running after Kill")
			}
			f.Start(t)
			if mode := f.Mode(); mode != "follower" && mode != "leader" {
				t.Fatalf("restarted member mode %q", mode)
			}
			if _, err := f.Zxid(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
