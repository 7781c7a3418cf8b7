package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/backup"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// The AdminServer's snapshot command (zkraft snapshot save):
//
//	GET <admin.commandURL>/snapshot?streaming=true
//	Authorization: digest user:password
//
// streams a backup (internal/backup) of this member's state as of one
// applied raft index, taken after a ReadIndex so that it holds every write
// acknowledged anywhere in the ensemble before the request. The state is
// frozen on the raft loop (the cheap copy local snapshots use) and
// serialized and streamed from the request's goroutine, so the loop never
// waits for the client. Without streaming=true the answer is JSON naming
// the zxid and raft index the state would be taken at, as ZooKeeper 3.9
// answers it (after taking a local snapshot there).
//
// As in ZooKeeper 3.9.4 the caller needs ALL on "/": its ids are
// ip:<address> plus, from the Authorization header, digest:<user>:<hash>
// (and super when it is DigestAuthenticationProvider.superDigest's user).
// Unlike ZooKeeper, a caller other than super must also be allowed to READ
// every node (a backup reveals them all); otherwise only super may take
// it. The backup holds no sessions: their passwords would let whoever
// holds the file take them over (rewriteState drops them and their
// ephemerals). A HEAD request is answered after the checks, with headers
// only. admin.snapshot.enabled=false turns the command off. One snapshot
// is streamed at a time; another request meanwhile gets 429.

// snapshotTimeout bounds the ReadIndex and freeze before streaming starts.
const snapshotTimeout = 30 * time.Second

func (o *operability) snapshotCommand(w http.ResponseWriter, r *http.Request) {
	s := o.s
	fail := func(code int, msg string) {
		out, _ := json.MarshalIndent(jsonObject{{"command", "snapshot"}, {"error", msg}}, "", "  ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(append(out, '\n'))
	}
	if !s.cfg.AdminSnapshotEnabled {
		fail(http.StatusForbidden, "snapshot command is disabled (admin.snapshot.enabled=false)")
		return
	}
	if !s.serving.Load() {
		fail(http.StatusServiceUnavailable, notServing)
		return
	}
	ids, authErr := adminAuthIDs(r, s.cfg.SuperDigest)
	if authErr != "" {
		fail(http.StatusUnauthorized, authErr)
		return
	}
	super := slices.ContainsFunc(ids, func(id jute.Id) bool { return id.Scheme == "super" })
	if !super && !s.rootAllowed(ids) {
		code := http.StatusForbidden
		if r.Header.Get("Authorization") == "" {
			code = http.StatusUnauthorized
		}
		s.log.Warn().Str("remote", r.RemoteAddr).Msg("snapshot command refused: the caller lacks ALL on /")
		fail(code, "not authorized: the snapshot command needs ALL permission on / (send Authorization: digest user:password)")
		return
	}
	if r.Method == http.MethodHead {
		// Headers only: no ReadIndex, freeze or serialization.
		if r.URL.Query().Get("streaming") == "true" {
			w.Header().Set("Content-Type", "application/octet-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if !o.snapshotBusy.CompareAndSwap(false, true) {
		fail(http.StatusTooManyRequests, "a snapshot is being streamed already")
		return
	}
	defer o.snapshotBusy.Store(false)

	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	if _, err := s.node.ReadIndex(ctx); err != nil {
		fail(http.StatusServiceUnavailable, fmt.Sprintf("read index: %v", err))
		return
	}
	frozen, err := s.node.Freeze(ctx)
	if err != nil {
		fail(http.StatusServiceUnavailable, fmt.Sprintf("freeze state: %v", err))
		return
	}
	created := time.Now()
	payload, err := frozen.Serialize() // off the raft loop
	if err != nil {
		fail(http.StatusInternalServerError, fmt.Sprintf("serialize state: %v", err))
		return
	}
	readableBy := ids
	if super {
		readableBy = nil
	}
	payload, readable, err := rewriteState(frozen.Index, payload, backupStateOptions{dropSessions: true, readableBy: readableBy})
	if err != nil {
		fail(http.StatusInternalServerError, fmt.Sprintf("backup state: %v", err))
		return
	}
	if !readable {
		s.log.Warn().Str("remote", r.RemoteAddr).Msg("snapshot command refused: a node's ACL refuses READ to the caller")
		fail(http.StatusForbidden, "not authorized: a node's ACL refuses READ to the caller; only the super user may take a backup of it")
		return
	}
	zxid, err := snapshotZxid(payload)
	if err != nil {
		fail(http.StatusInternalServerError, err.Error())
		return
	}
	if r.URL.Query().Get("streaming") != "true" {
		out, _ := json.MarshalIndent(jsonObject{
			{"last_zxid", "0x" + strconv.FormatUint(zxid, 16)}, {"raft_index", frozen.Index},
			{"command", "snapshot"}, {"error", nil},
		}, "", "  ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(out, '\n'))
		return
	}
	h := backup.Header{
		Index: frozen.Index, Term: frozen.Term, Zxid: zxid, CreatedMs: created.UnixMilli(),
		Voters: frozen.ConfState.GetVoters(), Learners: frozen.ConfState.GetLearners(),
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(backup.Size(h, len(payload)), 10))
	w.Header().Set("last_zxid", "0x"+strconv.FormatUint(zxid, 16))
	if err := backup.Write(w, h, payload); err != nil {
		s.log.Warn().Err(err).Str("remote", r.RemoteAddr).Msg("snapshot stream interrupted")
		return
	}
	s.log.Info().Str("remote", r.RemoteAddr).Uint64("index", frozen.Index).Str("zxid", "0x"+strconv.FormatUint(zxid, 16)).
		Int("bytes", len(payload)).Msg("snapshot streamed")
}

// adminAuthIDs returns the ids of an AdminServer request: ip:<remote host>,
// and those of an "Authorization: digest user:password" header. A header
// of another scheme is an error (the returned string).
func adminAuthIDs(r *http.Request, superDigest string) ([]jute.Id, string) {
	var ids []jute.Id
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ids = append(ids, jute.Id{Scheme: "ip", ID: host})
	}
	a := strings.TrimSpace(r.Header.Get("Authorization"))
	if a == "" {
		return ids, ""
	}
	scheme, cred, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "digest") || strings.TrimSpace(cred) == "" {
		return nil, "unsupported Authorization header: want \"digest user:password\""
	}
	id := znode.DigestID(strings.TrimSpace(cred))
	ids = append(ids, jute.Id{Scheme: "digest", ID: id})
	if superDigest != "" && id == superDigest {
		ids = append(ids, jute.Id{Scheme: "super", ID: ""})
	}
	return ids, ""
}

// rootAllowed reports whether ids have ALL on "/": each permission is
// checked on its own (an ACL check of several bits at once passes when any
// one is granted; ZooKeeper 3.9.0-3.9.3 had that bug, CVE-2025-58457).
func (s *Server) rootAllowed(ids []jute.Id) bool {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	for _, perm := range []int32{jute.PermRead, jute.PermWrite, jute.PermCreate, jute.PermDelete, jute.PermAdmin} {
		if _, ok := s.sm.tree.CheckPermission("/", perm, ids); !ok {
			return false
		}
	}
	return true
}

// snapshotZxid reads the zxid a state snapshot starts with.
func snapshotZxid(payload []byte) (uint64, error) {
	if len(payload) < len(snapshotMagic)+8 {
		return 0, fmt.Errorf("state snapshot of %d bytes", len(payload))
	}
	return binary.BigEndian.Uint64(payload[len(snapshotMagic):]), nil
}

// SnapshotSummary describes a state snapshot (zkraft snapshot inspect).
type SnapshotSummary struct {
	Zxid        uint64
	Nodes       int   // znodes, "/" and /zookeeper's included
	DataSize    int64 // as mntr's zk_approximate_data_size
	Sessions    int
	Ephemerals  int
	LockDelayed int // expired sessions whose ephemerals a lock-delay keeps
}

// InspectSnapshot decodes a whole state snapshot, as a member restoring it
// at index would, and summarizes it. An error means a member would refuse
// it too.
func InspectSnapshot(index uint64, payload []byte) (SnapshotSummary, error) {
	sm := newStateMachine(znode.Options{ExtendedTypesEnabled: true, X509Enabled: true}, nil, inspectHooks{}, zerolog.Nop())
	if err := sm.Restore(index, payload); err != nil {
		return SnapshotSummary{}, err
	}
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	eph := 0
	sm.tree.EachEphemeral(func(string, jute.Stat) bool { eph++; return true })
	return SnapshotSummary{
		Zxid: uint64(sm.lastZxid.Load()), Nodes: sm.tree.NodeCount(), DataSize: sm.tree.ApproximateDataSize(),
		Sessions: len(sm.sessions.All()), Ephemerals: eph, LockDelayed: len(sm.delayed),
	}, nil
}

// inspectHooks ignores every apply hook: InspectSnapshot's state machine serves
// no one.
type inspectHooks struct{}

func (inspectHooks) applied(*entry, applyResult)       {}
func (inspectHooks) sessionCreated(session.Session)    {}
func (inspectHooks) sessionClosed(int64, bool, uint64) {}
func (inspectHooks) sessionTouched(int64)              {}
func (inspectHooks) expiryRefused(session.Session)     {}
func (inspectHooks) configChanged([]byte)              {}
func (inspectHooks) stateReplaced()                    {}

// backupStateOptions say how rewriteState changes a state snapshot.
type backupStateOptions struct {
	// dropSessions removes every session (their passwords would let anyone
	// holding the file take them over), the dead ones whose ephemerals a
	// lock-delay keeps, and all their ephemerals, each session as one
	// close at the snapshot's last zxid: the parents' cversion grows by
	// the children removed and their pzxid becomes that zxid.
	dropSessions bool
	// clearConfig empties /zookeeper/config, so a restored member
	// publishes its own zoo.cfg membership at first leadership
	// (publishInitialConfig) and never reads the source's.
	clearConfig bool
	// zxid, when not 0, becomes the state's last zxid (restore's
	// --bump-index: the raft index it is restored at).
	zxid uint64
	// readableBy, when not nil, makes rewriteState report in the second
	// result whether these ids may READ every node.
	readableBy []jute.Id
}

// rewriteState decodes a state snapshot taken at index, changes it as o
// says and encodes it again. The second result is whether o.readableBy
// may read every node (true when o.readableBy is nil).
func rewriteState(index uint64, payload []byte, o backupStateOptions) ([]byte, bool, error) {
	sm := newStateMachine(znode.Options{ExtendedTypesEnabled: true, X509Enabled: true}, nil, inspectHooks{}, zerolog.Nop())
	if err := sm.Restore(index, payload); err != nil {
		return nil, false, err
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	readable := true
	if o.readableBy != nil {
		sm.tree.EachNode(func(_ string, acl []jute.ACL) bool {
			readable = znode.CheckACL(acl, jute.PermRead, o.readableBy)
			return readable
		})
	}
	ctx := znode.TxnContext{Zxid: sm.lastZxid.Load(), Options: &sm.treeOpts}
	if o.dropSessions {
		owners := map[int64]bool{}
		for _, s := range sm.sessions.All() {
			owners[s.ID] = true
		}
		for id := range sm.delayed {
			owners[id] = true
		}
		sm.tree.EachEphemeral(func(_ string, st jute.Stat) bool { owners[st.EphemeralOwner] = true; return true })
		ids := make([]int64, 0, len(owners))
		for id := range owners {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			sm.tree.DeleteEphemerals(ctx, id)
			sm.sessions.Remove(id)
		}
		sm.order = map[int64]connOrder{}
		sm.delayed = map[int64]int64{}
	}
	if o.zxid != 0 {
		sm.lastZxid.Store(int64(o.zxid))
	}
	if o.clearConfig {
		if data, _, _ := sm.tree.GetData("/zookeeper/config"); len(data) > 0 {
			sm.tree.SetConfig(ctx, nil)
		}
	}
	write, err := sm.freezeLocked()
	if err != nil {
		return nil, false, err
	}
	out, err := consensus.Collect(write) // one buffer of the exact size (writeFrozenState)
	if err != nil {
		return nil, false, err
	}
	return out, readable, nil
}

// PrepareRestore returns the state a restored member starts from, given a
// backup's state taken at index: without sessions and their ephemerals
// (backups of older builds held them) and with /zookeeper/config empty, so
// that the restored members publish the membership of their own zoo.cfg.
// A zxid above 0 (the bumped raft index the state is restored at) becomes
// its last zxid: the restored members report it at once, so clients that
// saw the source's later zxids are served.
func PrepareRestore(index uint64, payload []byte, zxid uint64) ([]byte, error) {
	out, _, err := rewriteState(index, payload, backupStateOptions{dropSessions: true, clearConfig: true, zxid: zxid})
	if err != nil {
		return nil, fmt.Errorf("prepare restored state: %w", err)
	}
	return out, nil
}
