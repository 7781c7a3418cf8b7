package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/zkraft/zkraft/consensus"
	"github.com/zkraft/zkraft/internal/backup"
	"github.com/zkraft/zkraft/internal/zoocfg"
	"github.com/zkraft/zkraft/server"
)

const snapshotUsage = `usage: zkraft snapshot save [--server HOST:PORT] [--auth USER:PASSWORD] [--command-url /commands] [--timeout DUR] FILE
       zkraft snapshot restore FILE --data-dir NEW [--config zoo.cfg] [--myid N] [--bump-index N]
       zkraft snapshot inspect FILE`

// snapshotMain runs `zkraft snapshot` with args (after "snapshot").
func snapshotMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, snapshotUsage)
		return 2
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:], stdout, stderr)
	case "restore":
		return snapshotRestore(args[1:], stdout, stderr)
	case "inspect":
		return snapshotInspect(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, snapshotUsage)
		return 0
	}
	fmt.Fprintf(stderr, "zkraft snapshot: unknown command %q\n%s\n", args[0], snapshotUsage)
	return 2
}

// newFlagSet returns a FlagSet whose -h/--help prints usage and the flags
// to stdout.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintln(stdout, usage)
		w := fs.Output()
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(w)
	}
	return fs
}

// parseOneArg parses flags before and after one positional argument.
// ok false: code is the exit code (0 after --help).
func parseOneArg(fs *flag.FlagSet, args []string, stderr io.Writer, what string) (arg string, code int, ok bool) {
	fs.SetOutput(io.Discard) // errors are printed below, help by fs.Usage
	fail := func(err error) (string, int, bool) {
		if errors.Is(err, flag.ErrHelp) {
			return "", 0, false
		}
		fmt.Fprintf(stderr, "zkraft %s: %v\n", fs.Name(), err)
		return "", 2, false
	}
	if err := fs.Parse(args); err != nil {
		return fail(err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return fail(fmt.Errorf("missing %s", what))
	}
	arg = rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return fail(err)
	}
	if len(fs.Args()) > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	return arg, 0, true
}

func snapshotSave(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("snapshot save", "usage: zkraft snapshot save [flags] FILE\n\n"+
		"Streams a consistent snapshot of a running member's state (as of one applied raft index, after a\n"+
		"ReadIndex) from its AdminServer (GET /commands/snapshot?streaming=true) into FILE, without sessions.\n"+
		"The caller needs ALL on / and READ on every node, or to be the super user\n"+
		"(--auth as DigestAuthenticationProvider.superDigest's user).\n", stdout)
	srv := fs.String("server", "127.0.0.1:8080", "the member's AdminServer, HOST:PORT or an http:// URL")
	auth := fs.String("auth", "", "digest credentials USER:PASSWORD (also $ZKRAFT_AUTH)")
	commandURL := fs.String("command-url", "/commands", "the member's admin.commandURL")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	file, code, ok := parseOneArg(fs, args, stderr, "FILE")
	if !ok {
		return code
	}
	if *auth == "" {
		*auth = os.Getenv("ZKRAFT_AUTH")
	}
	h, err := saveSnapshot(*srv, *commandURL, *auth, file, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "zkraft snapshot save: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "saved %s: raft index %d, term %d, last zxid 0x%x, %d bytes of state\n",
		file, h.Index, h.Term, h.Zxid, h.PayloadLength)
	return 0
}

// saveSnapshot fetches a backup into file: written to file.part, fsync'd,
// verified, then renamed, so file is never a partial backup.
func saveSnapshot(srv, commandURL, auth, file string, timeout time.Duration) (backup.Header, error) {
	base := srv
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimSuffix(base, "/") + "/" + strings.Trim(commandURL, "/") + "/snapshot?streaming=true"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return backup.Header{}, err
	}
	if auth != "" {
		req.Header.Set("Authorization", "digest "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return backup.Header{}, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return backup.Header{}, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	part := file + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return backup.Header{}, fmt.Errorf("create %s: %w", part, err)
	}
	_, err = io.Copy(f, resp.Body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(part)
		return backup.Header{}, fmt.Errorf("receive snapshot into %s: %w", part, err)
	}
	h, _, err := readBackup(part)
	if err != nil {
		os.Remove(part)
		return backup.Header{}, fmt.Errorf("received snapshot: %w", err)
	}
	if err := os.Rename(part, file); err != nil {
		os.Remove(part)
		return backup.Header{}, fmt.Errorf("rename %s: %w", part, err)
	}
	return h, nil
}

// readBackup reads and verifies a backup file, including the state it
// holds (decoded as a member restoring it would).
func readBackup(path string) (backup.Header, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return backup.Header{}, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return backup.Header{}, nil, err
	}
	h, payload, err := backup.Read(f, st.Size())
	if err != nil {
		return h, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, payload, nil
}

func snapshotInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("snapshot inspect", "usage: zkraft snapshot inspect FILE\n\n"+
		"Verifies FILE (header, length, sha256, the state itself) and prints what it holds.\n", stdout)
	file, code, ok := parseOneArg(fs, args, stderr, "FILE")
	if !ok {
		return code
	}
	if err := inspect(file, stdout); err != nil {
		fmt.Fprintf(stderr, "zkraft snapshot inspect: %v\n", err)
		return 1
	}
	return 0
}

func inspect(file string, out io.Writer) error {
	h, payload, err := readBackup(file)
	if err != nil {
		return err
	}
	sum, err := server.InspectSnapshot(h.Index, payload)
	if err != nil {
		return fmt.Errorf("%s: checksum ok but the state is unreadable: %w", file, err)
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "file:            %s\n", file)
	fmt.Fprintf(out, "format:          %s version %d\n", backup.Magic, backup.Version)
	fmt.Fprintf(out, "checksum:        ok (sha256)\n")
	fmt.Fprintf(out, "size:            %d bytes (state %d bytes)\n", st.Size(), h.PayloadLength)
	fmt.Fprintf(out, "taken:           %s\n", time.UnixMilli(h.CreatedMs).UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "raft index:      %d\n", h.Index)
	fmt.Fprintf(out, "raft term:       %d\n", h.Term)
	fmt.Fprintf(out, "last zxid:       0x%x\n", sum.Zxid)
	fmt.Fprintf(out, "voters:          %s\n", idList(h.Voters))
	fmt.Fprintf(out, "learners:        %s\n", idList(h.Learners))
	fmt.Fprintf(out, "znodes:          %d\n", sum.Nodes)
	fmt.Fprintf(out, "data size:       %d bytes (paths and data)\n", sum.DataSize)
	fmt.Fprintf(out, "sessions:        %d\n", sum.Sessions)
	fmt.Fprintf(out, "ephemerals:      %d\n", sum.Ephemerals)
	if sum.LockDelayed > 0 {
		fmt.Fprintf(out, "lock-delayed:    %d expired sessions with kept ephemerals\n", sum.LockDelayed)
	}
	return nil
}

func idList(ids []uint64) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}

func snapshotRestore(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("snapshot restore", "usage: zkraft snapshot restore FILE --data-dir NEW [--config zoo.cfg] [--myid N] [--bump-index N]\n\n"+
		"Makes NEW (missing, empty, or holding only myid) the data directory of a member whose state is FILE's.\n"+
		"Without --config: a standalone server. With --config: a member of the ensemble its server.N lines list;\n"+
		"restore every member from the same FILE, each with its own --myid (or myid file), then start them all.\n"+
		"/zookeeper/config is emptied: the first leader publishes the zoo.cfg membership there.\n", stdout)
	dataDir := fs.String("data-dir", "", "the new data directory: raft.db, wal/ and snap/ (the member's dataLogDir if it has one)")
	cfgPath := fs.String("config", "", "zoo.cfg whose server.N lines are the ensemble (none: standalone)")
	myid := fs.Uint64("myid", 0, "this member's id (default: the myid file of dataDir, NEW unless zoo.cfg has a dataLogDir; written there when missing)")
	bump := fs.Uint64("bump-index", 0, "start the raft index (zxid) this far above the backup's, so zxids the source handed out\n"+
		"after the backup are never reused (the same N on every member)")
	file, code, ok := parseOneArg(fs, args, stderr, "FILE")
	if !ok {
		return code
	}
	if *dataDir == "" {
		fmt.Fprintf(stderr, "zkraft snapshot restore: --data-dir is required\n")
		return 2
	}
	r, err := restore(file, *dataDir, *cfgPath, *myid, *bump)
	if err != nil {
		fmt.Fprintf(stderr, "zkraft snapshot restore: %v\n", err)
		return 1
	}
	observers := ""
	if len(r.observers) > 0 {
		observers = " and observers " + idList(r.observers)
	}
	fmt.Fprintf(stdout, "restored %s into %s: member %d of voters %s%s, raft index %d, term %d, last zxid 0x%x\n",
		file, *dataDir, r.id, idList(r.voters), observers, r.index, r.term, r.zxid)
	return 0
}

type restored struct {
	id                uint64
	voters            []uint64
	observers         []uint64 // raft learners
	index, term, zxid uint64
}

// restore makes dataDir the data directory of a member whose state is the
// backup in file, at the backup's raft index plus bump. The state is
// PrepareRestore's: no sessions, an empty /zookeeper/config.
func restore(file, dataDir, cfgPath string, myid, bump uint64) (restored, error) {
	if err := checkEmptyDataDir(dataDir); err != nil {
		return restored{}, err
	}
	h, payload, err := readBackup(file)
	if err != nil {
		return restored{}, err
	}
	sum, err := server.InspectSnapshot(h.Index, payload)
	if err != nil {
		return restored{}, fmt.Errorf("%s: the state is unreadable: %w", file, err)
	}
	index := h.Index + bump
	if index < h.Index || index > math.MaxInt64 {
		return restored{}, fmt.Errorf("--bump-index %d: raft index %d + %d overflows a zxid", bump, h.Index, bump)
	}
	zxid := uint64(0) // keep the backup's
	if bump > 0 {
		zxid = index
	}
	if payload, err = server.PrepareRestore(h.Index, payload, zxid); err != nil {
		return restored{}, fmt.Errorf("%s: %w", file, err)
	}
	cs := &pb.ConfState{}
	members := map[uint64]zoocfg.Member{}
	myidDir := dataDir
	if cfgPath != "" {
		cfg, err := zoocfg.Load(cfgPath, zerolog.Nop())
		if err != nil {
			return restored{}, err
		}
		members = cfg.Members
		if cfg.DataLogDir != "" && cfg.DataDir != "" {
			// NEW is the dataLogDir; the member reads myid from dataDir.
			myidDir = cfg.DataDir
		}
	}
	fileID, err := zoocfg.ReadMyID(myidDir)
	hasMyID := err == nil
	if hasMyID && myid != 0 && myid != fileID {
		return restored{}, fmt.Errorf("--myid %d but %s says %d", myid, filepath.Join(myidDir, "myid"), fileID)
	}
	if myid == 0 && hasMyID {
		myid = fileID
	}
	switch {
	case len(members) > 1:
		if myid == 0 {
			return restored{}, fmt.Errorf("an ensemble member needs --myid or a myid file in %s", dataDir)
		}
		if _, ok := members[myid]; !ok {
			return restored{}, fmt.Errorf("myid %d has no server.%d line in %s", myid, myid, cfgPath)
		}
		for _, m := range zoocfg.SortedMembers(members) {
			if m.Observer() {
				cs.Learners = append(cs.Learners, m.ID) // never promoted (consensus/observers.go)
			} else {
				cs.Voters = append(cs.Voters, m.ID)
			}
		}
		if len(cs.Voters) == 0 {
			return restored{}, fmt.Errorf("%s lists observers only", cfgPath)
		}
	case len(members) == 1:
		// A one-line ensemble runs standalone as that member.
		id := zoocfg.SortedMembers(members)[0].ID
		if myid != 0 && myid != id {
			return restored{}, fmt.Errorf("myid %d, but %s lists only server.%d", myid, cfgPath, id)
		}
		myid = id
		cs.Voters = []uint64{id}
	default:
		// zkraft serve without server.N lines runs as member 1.
		if myid != 0 && myid != 1 {
			return restored{}, fmt.Errorf("a standalone server is member 1 (--myid %d needs --config with server.N lines)", myid)
		}
		myid = 1
		cs.Voters = []uint64{1}
	}
	if err := consensus.CreateFromSnapshot(dataDir, h.Term, index, cs, payload); err != nil {
		return restored{}, err
	}
	if !hasMyID && (len(members) > 0) {
		if err := os.MkdirAll(myidDir, 0o750); err != nil {
			return restored{}, fmt.Errorf("write myid: %w", err)
		}
		if err := os.WriteFile(filepath.Join(myidDir, "myid"), []byte(strconv.FormatUint(myid, 10)+"\n"), 0o644); err != nil {
			return restored{}, fmt.Errorf("write myid: %w", err)
		}
	}
	return restored{id: myid, voters: cs.Voters, observers: cs.Learners, index: index, term: h.Term, zxid: max(sum.Zxid, zxid)}, nil
}

// checkEmptyDataDir accepts a missing directory, an empty one, or one
// holding only myid.
func checkEmptyDataDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	for _, e := range ents {
		if e.Name() != "myid" {
			return fmt.Errorf("data dir %s is not empty (it holds %s): restore only into a new directory", dir, e.Name())
		}
	}
	return nil
}
