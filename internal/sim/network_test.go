package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestNetworkReportsLostMessages: a message the network scheduled and then
// did not hand to the receiver is reported lost (sendRaft tells the leader
// that a MsgSnap failed, or raft waits for that follower forever): the link
// cut at arrival, the receiver down then, or crashing while paused with the
// message waiting. One handled is not.
func TestNetworkReportsLostMessages(t *testing.T) {
	tests := []struct {
		name          string
		before, after func(w *world, to *member) // around the arrival
		handled, lost int
	}{
		{name: "delivered", handled: 1},
		{name: "cut at arrival", before: func(w *world, _ *member) { w.net.cut[0][1] = true }, lost: 1},
		{name: "receiver down", before: func(_ *world, to *member) { to.up = false }, lost: 1},
		{name: "receiver paused, resumed", before: func(_ *world, to *member) { to.pause() },
			after: func(_ *world, to *member) { to.resume() }, handled: 1},
		{name: "receiver paused, crashed", before: func(_ *world, to *member) { to.pause() },
			after: func(_ *world, to *member) { to.crash() }, lost: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{cfg: Config{Members: 2, Duration: time.Minute}, rng: rand.New(rand.NewPCG(1, 2))}
			for i := range 2 {
				w.members = append(w.members, &member{w: w, idx: i, id: uint64(i + 1), up: true})
			}
			w.net = newNetwork(w)
			var handled, lost int
			if !w.net.send(0, 1, func() { handled++ }, func() { lost++ }) {
				t.Fatal("not scheduled")
			}
			if tt.before != nil {
				tt.before(w, w.members[1])
			}
			w.loop()
			if tt.after != nil {
				tt.after(w, w.members[1])
			}
			if handled != tt.handled || lost != tt.lost {
				t.Errorf("handled %d lost %d, want %d and %d", handled, lost, tt.handled, tt.lost)
			}
		})
	}
}
