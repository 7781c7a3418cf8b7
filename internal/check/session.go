package check

import "fmt"

// SessionReads checks the weaker guarantee ZooKeeper gives plain reads
// (sequential consistency, per client): for each read with StatusOK,
//
//   - the (data, version) it saw was the initial state or was written by
//     some create or setData on that path (acknowledged or of unknown
//     outcome) invoked before the read returned: no value out of thin air;
//   - it is not older than a state of that znode the same client saw or
//     wrote before: monotonic reads and read-your-writes.
//
// "Older" compares mzxids when both replies carry one (RespMzxid != 0).
// Otherwise it compares versions, which is only sound while the znode is
// never deleted: on a path with a delete (acknowledged or unknown) anywhere
// in the history the version comparison is skipped. A read answering
// NoNode after the client saw the znode is a violation on such a path too.
//
// A client's operations must appear in history in the order the client
// issued them (ZooKeeper answers a session's requests in that order).
// All reads take part, including those marked Linearizable.
func SessionReads(history []RegisterOp, initial map[string]Register) error {
	for i := range history {
		if err := validateRegisterOp(i, &history[i]); err != nil {
			return err
		}
	}
	paths, byPath := groupByPath(history)
	for _, path := range paths {
		idx := byPath[path]
		hasDelete := false
		for _, i := range idx {
			op := &history[i]
			if op.Kind == OpDelete && (op.Status == StatusOK || op.Status == StatusUnknown) {
				hasDelete = true
			}
		}
		init, hasInit := initial[path]
		if err := sessionReadsPath(history, idx, init, hasInit, hasDelete); err != nil {
			return err
		}
	}
	return nil
}

// seen is the newest state of one znode a client knows of.
type seen struct {
	op      *RegisterOp // the operation that showed it
	exists  bool
	version int32
	mzxid   int64
}

func sessionReadsPath(history []RegisterOp, idx []int, init Register, hasInit, hasDelete bool) error {
	last := make(map[int]*seen) // by client
	for _, i := range idx {
		op := &history[i]
		if op.Status != StatusOK {
			continue
		}
		prev := last[op.Client]
		switch op.Kind {
		case OpCreate:
			last[op.Client] = &seen{op: op, exists: true, version: 0}
		case OpSet:
			if prev != nil {
				if err := notOlder(prev, op, hasDelete); err != nil {
					return err
				}
			}
			last[op.Client] = &seen{op: op, exists: true, version: op.RespVersion, mzxid: op.RespMzxid}
		case OpDelete:
			delete(last, op.Client)
		case OpGet:
			if !readWasWritten(history, idx, op, init, hasInit) {
				return violationf(CheckerSessionReads, "%s read a value no create or set of %s wrote", op, op.Path)
			}
			if prev != nil {
				if err := notOlder(prev, op, hasDelete); err != nil {
					return err
				}
			}
			last[op.Client] = &seen{op: op, exists: true, version: op.RespVersion, mzxid: op.RespMzxid}
		}
	}
	// NoNode reads after the client saw the znode, on a path never deleted.
	if !hasDelete {
		saw := make(map[int]*RegisterOp)
		for _, i := range idx {
			op := &history[i]
			switch {
			case op.Status == StatusOK && op.Kind != OpDelete:
				if saw[op.Client] == nil {
					saw[op.Client] = op
				}
			case op.Kind == OpGet && op.Status == StatusNoNode && saw[op.Client] != nil:
				return violationf(CheckerSessionReads, "%s, but the same client saw the znode earlier (%s) and it is never deleted", op, saw[op.Client])
			}
		}
	}
	return nil
}

func notOlder(prev *seen, op *RegisterOp, hasDelete bool) error {
	if prev.mzxid != 0 && op.RespMzxid != 0 {
		if op.RespMzxid < prev.mzxid {
			return violationf(CheckerSessionReads, "%s has mzxid %#x, older than mzxid %#x the same client saw before in %s", op, op.RespMzxid, prev.mzxid, prev.op)
		}
		return nil
	}
	if !hasDelete && op.RespVersion < prev.version {
		return violationf(CheckerSessionReads, "%s has version %d, older than version %d the same client saw before in %s", op, op.RespVersion, prev.version, prev.op)
	}
	return nil
}

// readWasWritten reports whether the (data, version) a read saw is the
// initial state or the result of a write invoked before the read returned.
func readWasWritten(history []RegisterOp, idx []int, read *RegisterOp, init Register, hasInit bool) bool {
	if hasInit && init.Exists && init.Data == read.RespData && init.Version == read.RespVersion {
		return true
	}
	for _, i := range idx {
		w := &history[i]
		if w.Call > read.Return || w.Data != read.RespData {
			continue
		}
		switch {
		case w.Kind == OpCreate && (w.Status == StatusOK || w.Status == StatusUnknown):
			if read.RespVersion == 0 {
				return true
			}
		case w.Kind == OpSet && w.Status == StatusOK:
			if w.RespVersion == read.RespVersion {
				return true
			}
		case w.Kind == OpSet && w.Status == StatusUnknown:
			if read.RespVersion > 0 && (w.Version == -1 || w.Version+1 == read.RespVersion) {
				return true
			}
		}
	}
	return false
}

// errorf is fmt.Errorf, kept here so the input errors share one prefix.
func errorf(format string, args ...any) error {
	return fmt.Errorf("check: "+format, args...)
}
