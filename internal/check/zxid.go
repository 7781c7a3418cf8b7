package check

// ZxidObservation is the zxid in one reply a session received.
type ZxidObservation struct {
	Session int64
	Zxid    int64
	// Op names the request the reply answered, for the explanation.
	Op string
}

// SessionZxids checks that, per session, the zxids of the replies, in the
// order they are listed, never decrease. Observations with a negative zxid
// (watch notifications carry -1) are ignored.
func SessionZxids(obs []ZxidObservation) error {
	last := make(map[int64]int) // session -> index of its last observation
	for i, o := range obs {
		if o.Zxid < 0 {
			continue
		}
		if j, ok := last[o.Session]; ok && o.Zxid < obs[j].Zxid {
			return violationf(CheckerSessionZxids, "session %#x saw zxid %#x (%s, reply %d) after zxid %#x (%s, reply %d)",
				o.Session, o.Zxid, o.Op, i, obs[j].Zxid, obs[j].Op, j)
		}
		last[o.Session] = i
	}
	return nil
}
