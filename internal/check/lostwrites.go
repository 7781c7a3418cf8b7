package check

// NoLostWrites checks that every acknowledged create and setData (StatusOK)
// in history is visible in the final state, or superseded there:
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
// A create's version is 0 and has no mzxid in its reply.
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
			if w.Status != StatusOK || (w.Kind != OpCreate && w.Kind != OpSet) {
				continue
			}
			version, mzxid := int32(0), int64(0)
			if w.Kind == OpSet {
				version, mzxid = w.RespVersion, w.RespMzxid
			}
			deletedAfter := false
			for _, j := range idx {
				d := &history[j]
				if d.Kind == OpDelete && (d.Status == StatusUnknown || (d.Status == StatusOK && d.Return >= w.Call)) {
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
