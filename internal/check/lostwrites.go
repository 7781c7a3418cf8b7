package check

// NoLostWrites checks that every acknowledged create, setData and delete
// (StatusOK) in history is visible in the final state, or superseded there.
// A delete is lost when the znode exists at the end and no create
// (acknowledged or of unknown outcome) can have come after it. For a create
// or setData:
//
//   - the znode is absent at the end: a delete of the path (acknowledged or
//     of unknown outcome) must not have returned before the write was
//     invoked, else the write is lost;
//   - the znode exists at the end at the write's version, or with an mzxid
//     (when both carry one) equal to the write's: its data must be the
//     written data;
//   - it exists at an older version (or smaller mzxid): the write is lost,
//     unless, when mzxids are not known, a delete could have come after the
//     write (then the znode may have been re-created).
//
// final must list every path present at the end (a path it does not list
// counts as absent). A create's version is 0; its mzxid is known only from
// a create2 reply.
func NoLostWrites(history []RegisterOp, final map[string]Register) error {
	for i := range history {
		if err := validateRegisterOp(i, &history[i]); err != nil {
			return err
		}
	}
	paths, byPath := groupByPath(history)
	for _, path := range paths {
		idx := byPath[path]
		fin := final[path]
		for _, i := range idx {
			w := &history[i]
			if w.Kind == OpDelete && w.Status == StatusOK && fin.Exists {
				recreated := false
				for _, j := range idx {
					if c := &history[j]; c.Kind == OpCreate && (c.Status == StatusOK || c.Status == StatusUnknown) && mayFollow(w, c) {
						recreated = true
						break
					}
				}
				if !recreated {
					return violationf(CheckerNoLostWrites, "%s is lost: %s exists at the end %s and no create came after it", w, path, fin)
				}
			}
			if w.Status != StatusOK || (w.Kind != OpCreate && w.Kind != OpSet) {
				continue
			}
			version, mzxid := int32(0), w.RespMzxid
			if w.Kind == OpSet {
				version = w.RespVersion
			}
			deletedAfter := false
			for _, j := range idx {
				if d := &history[j]; d.Kind == OpDelete && (d.Status == StatusOK || d.Status == StatusUnknown) && mayFollow(w, d) {
					deletedAfter = true
					break
				}
			}
			switch {
			case !fin.Exists:
				if !deletedAfter {
					return violationf(CheckerNoLostWrites, "%s is lost: %s is absent at the end and no delete came after it", w, path)
				}
			case mzxid != 0 && fin.Mzxid != 0:
				if fin.Mzxid < mzxid {
					return violationf(CheckerNoLostWrites, "%s (mzxid %#x) is lost: %s ends at %s with mzxid %#x", w, mzxid, path, fin, fin.Mzxid)
				}
				if fin.Mzxid == mzxid && (fin.Data != w.Data || fin.Version != version) {
					return violationf(CheckerNoLostWrites, "%s (mzxid %#x) is lost: %s ends at %s with the same mzxid", w, mzxid, path, fin)
				}
			case fin.Version == version:
				if fin.Data != w.Data && !deletedAfter {
					return violationf(CheckerNoLostWrites, "%s is lost: %s ends at %s", w, path, fin)
				}
			case fin.Version < version:
				if !deletedAfter {
					return violationf(CheckerNoLostWrites, "%s is lost: %s ends at the older %s and no delete came after it", w, path, fin)
				}
			}
		}
	}
	return nil
}

// mayFollow reports whether b can have taken effect after a did: b did not
// return before a was invoked. An unknown-outcome b without a bound may
// take effect at any time.
func mayFollow(a, b *RegisterOp) bool {
	if b.Status == StatusUnknown && b.Return < b.Call {
		return true
	}
	return b.Return >= a.Call
}
