package server

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/znode"
)

// fuzzSM is a state machine with hooks that record each applied result.
func fuzzSM() (*stateMachine, *nopHooks) {
	h := &nopHooks{}
	return newStateMachine(znode.Options{}, newWatchManager(), h, zerolog.Nop()), h
}

// fuzzEntryTypes are the entry types the apply fuzzer builds.
var fuzzEntryTypes = []int32{
	entryCreateSession, entryAttachSession, entryCloseSession, entryExpireSession, entrySetConfig,
	entryDeleteContainer, entryDeleteTTL, jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
	jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpMulti, entryExpireSessionDelayed, entryDeleteDelayed,
}

// applyEntry is one raft entry of an apply fuzz input.
type applyEntry struct {
	term uint64
	data []byte
}

// decodeApplyInput turns a fuzz input into at most 64 entries: raw bytes, or
// entries built from a few fields chosen by the input (sessions 1-3,
// connections 0-3, small sequence numbers) whose encoding may be damaged.
func decodeApplyInput(b []byte) []applyEntry {
	in := &fuzzInput{b: b}
	var out []applyEntry
	term := uint64(1)
	for !in.done() && len(out) < 64 {
		kind := in.byte()
		if kind&0x40 != 0 {
			term += uint64(kind & 1)
		}
		if kind%8 == 0 {
			out = append(out, applyEntry{term: term, data: in.bytes(in.pick(64))})
			continue
		}
		sid := int64(1 + in.pick(3))
		e := entry{
			Type:      fuzzEntryTypes[in.pick(len(fuzzEntryTypes))],
			SessionID: sid,
			ConnID:    uint64(in.pick(4)),
			Seq:       uint64(in.pick(5)),
			Time:      int64(in.pick(16)) * 1000,
			Opts:      entryOpts(in.pick(4)),
		}
		switch in.pick(4) {
		case 0:
			e.Auth = []jute.Id{{Scheme: "digest", ID: "u:x"}}
		case 1:
			e.Auth = []jute.Id{{Scheme: "ip", ID: "127.0.0.1"}}
		case 2:
			e.Auth = []jute.Id{{Scheme: "super", ID: ""}}
		}
		switch e.Type {
		case entryCreateSession:
			e.Body = jute.Marshal(&sessionRecord{ID: sid, TimeoutMs: 4000, Password: make([]byte, 16)})
		case entryExpireSession:
			if in.pick(2) == 0 {
				e.Body = jute.Marshal(&expireRecord{Term: uint64(in.pick(3)), ConnID: uint64(in.pick(4))})
			}
		case entryExpireSessionDelayed:
			paths := [][]string{nil, {"/"}, {"/f/a"}, {"/f/a", "/f/b"}}[in.pick(4)]
			e.Body = lockDelayBody(uint64(in.pick(3)), uint64(in.pick(4)), int64(in.pick(4))*1000, paths)
		case entryDeleteDelayed:
		case entrySetConfig:
			e.Body = []byte("server.1=127.0.0.1:2888:3888:participant;2181\n")
		case entryDeleteContainer, entryDeleteTTL:
			e.Body = jute.Marshal(&jute.PathRequest{Path: in.path()})
		case entryAttachSession, entryCloseSession:
		default:
			op, rec := in.write()
			e.Type = op
			e.Body = jute.Marshal(rec)
		}
		if kind&0x80 != 0 {
			e.Body = in.mangle(e.Body)
		}
		enc := jute.NewEncoder(nil)
		e.Encode(enc)
		data := enc.Bytes()
		if kind&0x20 != 0 {
			data = in.mangle(data)
		}
		out = append(out, applyEntry{term: term, data: data})
	}
	return out
}

// FuzzApplyEntries applies arbitrary entries to state machines and checks
// the apply invariants of stateMachine:
//   - determinism: two state machines fed the same entries agree on every
//     error, every result and the snapshot after every entry;
//   - an entry Apply refuses with an error changes nothing (same snapshot);
//   - the tree's invariants (znode.Check) hold after every entry, and every
//     ephemeral's owner is a live session;
//   - a state machine restored from a snapshot taken part-way (at a point
//     the input chooses) and fed the rest agrees with the one that applied
//     everything.
func FuzzApplyEntries(f *testing.F) {
	for _, seed := range applySeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		entries := decodeApplyInput(in)
		restoreAt := 0
		if len(in) > 0 {
			restoreAt = int(in[len(in)-1]) % (len(entries) + 1)
		}
		a, ha := fuzzSM()
		b, hb := fuzzSM()
		var c *stateMachine
		var hc *nopHooks
		for i, en := range entries {
			index := uint64(i + 1)
			if i == restoreAt {
				snap := mustSnapshot(t, a)
				c, hc = fuzzSM()
				if err := c.Restore(index-1, snap); err != nil {
					t.Fatalf("restore of a snapshot at index %d: %v", index-1, err)
				}
				if again := mustSnapshot(t, c); !bytes.Equal(snap, again) {
					t.Fatalf("snapshot at index %d changed by restore:\n%x\n%x", index-1, snap, again)
				}
			}
			before := mustSnapshot(t, a)
			errA := a.Apply(index, en.term, en.data)
			errB := b.Apply(index, en.term, en.data)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("entry %d (%x): state machines disagree on the error: %v / %v", index, en.data, errA, errB)
			}
			after := mustSnapshot(t, a)
			if errA != nil {
				if !bytes.Equal(before, after) {
					t.Fatalf("entry %d (%x) refused (%v) but changed the state", index, en.data, errA)
				}
			} else if !reflect.DeepEqual(ha.results[len(ha.results)-1], hb.results[len(hb.results)-1]) {
				t.Fatalf("entry %d (%x): results differ: %+v / %+v", index, en.data, ha.results[len(ha.results)-1], hb.results[len(hb.results)-1])
			}
			if other := mustSnapshot(t, b); !bytes.Equal(after, other) {
				t.Fatalf("entry %d (%x): snapshots differ", index, en.data)
			}
			if c != nil {
				errC := c.Apply(index, en.term, en.data)
				if (errA == nil) != (errC == nil) {
					t.Fatalf("entry %d (%x): restored state machine disagrees on the error: %v / %v", index, en.data, errA, errC)
				}
				if errA == nil && !reflect.DeepEqual(ha.results[len(ha.results)-1], hc.results[len(hc.results)-1]) {
					t.Fatalf("entry %d (%x): restored state machine's result differs: %+v / %+v", index, en.data,
						ha.results[len(ha.results)-1], hc.results[len(hc.results)-1])
				}
				if other := mustSnapshot(t, c); !bytes.Equal(after, other) {
					t.Fatalf("entry %d (%x): restored state machine's snapshot differs", index, en.data)
				}
			}
			if err := checkState(a); err != nil {
				t.Fatalf("after entry %d (%x): %v", index, en.data, err)
			}
		}
	})
}

func mustSnapshot(t *testing.T, sm *stateMachine) []byte {
	t.Helper()
	snap, err := sm.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return snap
}

// checkState checks the invariants of a state machine's state: the tree's
// (znode.Check), that every ephemeral's owner is a live session or a dead
// one whose ephemerals a lock-delay keeps, and that such a session is not
// live.
func checkState(sm *stateMachine) error {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	if err := sm.tree.Check(); err != nil {
		return err
	}
	for _, owner := range sm.tree.EphemeralOwners() {
		_, live := sm.sessions.Get(owner)
		_, kept := sm.delayed[owner]
		if !live && !kept {
			return fmt.Errorf("ephemerals of session %#x, which is not live", owner)
		}
	}
	for id := range sm.delayed {
		if _, live := sm.sessions.Get(id); live {
			return fmt.Errorf("session %#x is live and has a lock-delay pending", id)
		}
	}
	return nil
}

// applySeeds are meaningful entry sequences, in decodeApplyInput's format.
func applySeeds() [][]byte {
	// Kind byte 1 (structured, no damage), then: session, type index,
	// conn, seq, time, opts, auth choice, then the type's own choices.
	const (
		tCreateSession = 0
		tAttach        = 1
		tClose         = 2
		tExpire        = 3
		tSetConfig     = 4
		tDelContainer  = 5
		tCreate        = 7 // a client write: write() picks the op next
		tExpireDelayed = 15
		tDeleteDelayed = 16
	)
	ent := func(sid, typ, conn, seq byte, rest ...byte) []byte {
		return append([]byte{1, sid, typ, conn, seq, 1, 0, 3}, rest...)
	}
	// write() choices: op index, then the record's fields.
	create := func(seq, path, flags byte) []byte {
		return ent(0, tCreate, 1, seq, 0, path, 0, 0, flags)
	}
	createBy := func(sid, seq, path, flags byte) []byte {
		return ent(sid, tCreate, 1, seq, 0, path, 0, 0, flags)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][]byte{
		{},
		cat(ent(0, tCreateSession, 1, 0), create(1, 1, 1), create(2, 2, 2), ent(0, tClose, 1, 3)),
		cat(ent(0, tCreateSession, 1, 0), create(1, 1, 0), create(2, 2, 4), ent(0, tExpire, 1, 0, 0),
			ent(0, tAttach, 2, 0), create(1, 3, 2)),
		cat(ent(0, tCreateSession, 1, 0), ent(0, tSetConfig, 0, 0), ent(0, tDelContainer, 0, 0, 1)),
		cat(ent(0, tCreateSession, 1, 0), ent(0, tCreate, 1, 1, 7, 3, 0, 1, 4, 0, 1, 2, 2, 3)), // multi
		cat(ent(0, tCreateSession, 1, 0), create(1, 1, 0), []byte{0, 9, 0, 0, 0, 2, 0, 0, 0, 0}, create(2, 2, 0)),
		{0x81, 0, 7, 1, 1, 1, 0, 3, 0, 1, 0, 0, 0, 3, 1, 0xff},
		// Lock-delay: /f/a/b (under /f/a) is kept 2 s past the expiry at
		// time 1 s, /f/b is removed at once; the removal at time 1 s is
		// not due, at 3 s it is.
		cat(ent(0, tCreateSession, 1, 0), create(1, 1, 1), create(2, 2, 1), create(3, 3, 2), create(4, 5, 2),
			ent(0, tExpireDelayed, 0, 0, 2, 1, 1, 2), ent(0, tDeleteDelayed, 0, 0),
			[]byte{1, 0, tDeleteDelayed, 0, 0, 3, 0, 3}),
		// Lock-delay with a lock queue in /f/a: session 1 holds lock-,
		// session 2 waits behind it, session 3 reads behind both; 2 and
		// then 1 expire: 2's node goes at once, 1's is kept.
		cat(ent(0, tCreateSession, 1, 0), ent(1, tCreateSession, 1, 0), ent(2, tCreateSession, 1, 0),
			create(1, 1, 1), create(2, 2, 1), createBy(0, 3, 21, 4), createBy(1, 1, 21, 4), createBy(2, 1, 22, 4),
			ent(1, tExpireDelayed, 0, 0, 2, 1, 1, 2), ent(0, tExpireDelayed, 0, 0, 2, 1, 1, 2),
			[]byte{1, 0, tDeleteDelayed, 0, 0, 3, 0, 3}),
	}
}
