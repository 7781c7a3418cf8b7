// Command zkraft runs a ZooKeeper-compatible coordination server whose state
// is replicated with raft.
//
//	zkraft serve                      # standalone, embedded defaults (port 2181, ./zkraft-data)
//	zkraft serve --config zoo.cfg     # ZooKeeper's zoo.cfg keys
//	zkraft lock PATH -- CMD [ARGS...]   # run CMD holding a Curator/kazoo lock
//	zkraft elect PATH -- CMD [ARGS...]  # run CMD while leader of a Curator LeaderLatch
//	zkraft snapshot save|restore|inspect  # backups (snapshot.go)
//	zkraft version
//	zkraft import --from ZK_DATADIR --data-dir NEW  # a ZooKeeper 3.5–3.8 data directory into a zkraft one
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/gctune"
	"github.com/zkraft/zkraft/internal/lockcmd"
	"github.com/zkraft/zkraft/internal/procs"
	"github.com/zkraft/zkraft/internal/zkimport"
	"github.com/zkraft/zkraft/server"
)

func main() {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case "serve":
			os.Exit(serve(os.Args[2:]))
		case "lock":
			os.Exit(lockcmd.Lock(os.Args[2:], os.Stderr))
		case "elect":
			os.Exit(lockcmd.Elect(os.Args[2:], os.Stdout, os.Stderr))
		case "import":
			os.Exit(importCmd(os.Args[2:]))
		case "snapshot":
			os.Exit(snapshotMain(os.Args[2:], os.Stdout, os.Stderr))
		case "version":
			os.Exit(versionMain(os.Args[2:], os.Stdout, os.Stderr))
		case "help", "-h", "-help", "--help":
			fmt.Fprint(os.Stdout, usage)
			os.Exit(0)
		}
	}
	fmt.Fprint(os.Stderr, usage)
	os.Exit(2)
}

var usage = "usage: zkraft serve [--config zoo.cfg] [--client-port N] [--data-dir DIR] [--join] [--log-format json|console] [--log-level LEVEL]\n" +
	"       zkraft lock [--server HOSTS] [--layout curator|kazoo] [--session-timeout DUR] [--wait DUR] [--kill-after DUR] PATH -- CMD [ARGS...]\n" +
	"       zkraft elect [--server HOSTS] [--id ID] PATH -- CMD [ARGS...] | zkraft elect --watch PATH\n" +
	"       " + strings.TrimPrefix(snapshotUsage, "usage: ") + "\n" +
	"       zkraft import --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir NEW [--myid N] [--members 1,2,3]\n" +
	"       zkraft version\n" +
	"Each command takes --help.\n"

func serve(args []string) int {
	fs := newFlagSet("serve", "usage: zkraft serve [flags]\n\nRuns a server: standalone, or an ensemble member when the zoo.cfg has server.N lines.\n", os.Stdout)
	configPath := fs.String("config", "", "ZooKeeper zoo.cfg to read")
	clientPort := fs.Int("client-port", -1, "client port (overrides clientPort)")
	dataDir := fs.String("data-dir", "", "data directory (overrides dataDir)")
	join := fs.Bool("join", false, "start a new ensemble member that waits to be added by reconfig")
	logFmt := fs.String("log-format", "", "log format: json or console (default: console when stderr is a terminal, json otherwise)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	format, err := logFormat(*logFmt, isTerminal(os.Stderr))
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkraft serve: %v\n", err)
		return 2
	}
	log := newLogger(format, *logLevel)

	cfg := server.Default()
	if *configPath != "" {
		var err error
		if cfg, err = server.Load(*configPath, log); err != nil {
			log.Error().Err(err).Msg("bad configuration")
			return 2
		}
	}
	if *clientPort >= 0 {
		cfg.ClientPort = *clientPort
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
		cfg.DataLogDir = ""
	}

	if *join {
		cfg.Join = true
	}
	if err := cfg.Resolve(); err != nil {
		log.Error().Err(err).Msg("bad configuration")
		return 2
	}
	if cfg.PeerTypeWarning != "" {
		log.Warn().Str("peerType", cfg.PeerType).Msg(cfg.PeerTypeWarning)
	}
	// Spare Ps for goroutines in blocking system calls (package procs).
	n, set := procs.Tune()
	log.Info().Int("gomaxprocs", n).Bool("fromEnvironment", !set).Msg("go processors")
	// The GC policy is the process's, not a Server's (several Servers share
	// one process in tests): serve owns its goroutine and stops it on return.
	gc := gctune.Start(log, gctune.Options{Disabled: cfg.GCRuntime})
	defer gc.Stop()
	srv := server.New(cfg, log)
	endRestore := gc.Restoring() // Start restores the snapshot and replays the log
	err = srv.Start()
	endRestore()
	if err != nil {
		log.Error().Err(err).Msg("server failed to start")
		return 1
	}
	sigC := make(chan os.Signal, 1)
	signal.Notify(sigC, syscall.SIGTERM, syscall.SIGINT)
	code := 0
	select {
	case sig := <-sigC:
		log.Info().Str("signal", sig.String()).Msg("shutting down")
	case <-srv.Done():
		log.Error().Err(srv.Err()).Msg("consensus stopped, shutting down")
		code = 1
	}
	done := make(chan error, 1)
	go func() { done <- srv.Stop() }()
	select {
	case err := <-done:
		if err != nil {
			log.Error().Err(err).Msg("unclean shutdown")
			return 1
		}
	case <-time.After(30 * time.Second):
		log.Error().Msg("shutdown timed out")
		return 1
	}
	return code
}

func newLogger(format, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	var log zerolog.Logger
	if format == "console" {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339})
	} else {
		log = zerolog.New(os.Stderr)
	}
	return log.Level(lvl).With().Timestamp().Logger()
}

// importCmd runs zkraft import; see README ("Importing a ZooKeeper data directory").
func importCmd(args []string) int {
	fs := newFlagSet("import", "usage: zkraft import --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir NEW [--myid N] [--members 1,2,3]\n\n"+
		"Makes a zkraft data directory from a ZooKeeper 3.5-3.8 dataDir (its newest valid snapshot and the transactions after it).\n", os.Stdout)
	from := fs.String("from", "", "ZooKeeper's dataDir (holding version-2)")
	fromLog := fs.String("from-log", "", "ZooKeeper's dataLogDir, if not dataDir")
	dataDir := fs.String("data-dir", "", "the new zkraft data directory (empty, or holding only myid)")
	myid := fs.Uint64("myid", 0, "this member's id (default: NEW/myid, else 1)")
	members := fs.String("members", "", "comma-separated ids of the ensemble's members (default: this member alone)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "zkraft import: %v\n", err)
		return 2
	}
	if *from == "" || *dataDir == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: zkraft import --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir NEW [--myid N] [--members 1,2,3]")
		return 2
	}
	var voters []uint64
	if *members != "" {
		for _, f := range strings.Split(*members, ",") {
			id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil || id == 0 {
				fmt.Fprintf(os.Stderr, "zkraft import: bad member id %q in --members\n", f)
				return 2
			}
			voters = append(voters, id)
		}
	}
	res, err := zkimport.Import(zkimport.Options{From: *from, FromLog: *fromLog, DataDir: *dataDir, MyID: *myid, Voters: voters})
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkraft import: %v\n", err)
		return 1
	}
	fmt.Printf("imported %s and %d transactions from %d log files (last zxid %#x): %d nodes, %d ephemerals of %d old sessions dropped\n",
		res.Snapshot, res.Txns, len(res.Logs), res.LastZxid, res.Nodes, res.Dropped, res.Sessions)
	for _, f := range res.Torn {
		fmt.Printf("%s ended with a partial transaction, skipped as ZooKeeper skips it\n", f)
	}
	for _, f := range res.Skipped {
		fmt.Printf("%s is incomplete, skipped as ZooKeeper skips it\n", f)
	}
	fmt.Printf("wrote %s: member %d of %v, raft log starts after index %d (%#x)\n", *dataDir, res.MyID, res.Voters, res.RaftIndex, res.RaftIndex)
	return 0
}
