// Command zksim runs zkraft's deterministic whole-cluster simulator
// (internal/sim) over a range of seeds and reports every seed whose run broke
// a checked property. A failing seed replays bit for bit with -seed S, and
// -trace prints its event log.
//
// Usage:
//
//	zksim -seeds 300              # seeds 1..300
//	zksim -seeds 300 -first 5001  # seeds 5001..5300
//	zksim -seed 42 -trace         # replay one seed with its event log
//	zksim -list-mutations         # known-wrong behaviours the checkers must catch
//	zksim -mutate skip-expiry-fence -seeds 300
//
// Output: one line per failing seed, "seed S: <checker>: <detail>", then
// "N seeds passed, M failed". The exit status is 1 if any seed failed.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkraft/zkraft/internal/mutation"
	"github.com/zkraft/zkraft/internal/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zksim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 0, "run this many seeds, from -first")
	first := fs.Uint64("first", 1, "first seed of -seeds")
	seed := fs.Uint64("seed", 0, "run one seed (replay)")
	trace := fs.Bool("trace", false, "print the event log (with -seed)")
	members := fs.Int("members", 3, "members in the ensemble")
	clients := fs.Int("clients", 3, "clients")
	duration := fs.Duration("duration", 30*time.Second, "simulated duration of each seed")
	listMut := fs.Bool("list-mutations", false, "print the built-in mutations, one a line")
	mutate := fs.String("mutate", "", "switch on a known-wrong behaviour (see -list-mutations)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *listMut {
		for _, n := range mutation.All() {
			fmt.Fprintln(stdout, n)
		}
		return 0
	}
	if *mutate != "" {
		if err := mutation.Set(mutation.Name(*mutate), true); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		defer mutation.Reset()
	}
	lo, n := *first, uint64(*seeds)
	if *seed != 0 {
		lo, n = *seed, 1
	}
	if n == 0 {
		fmt.Fprintln(stderr, "zksim: give -seeds N or -seed S")
		return 2
	}
	failed := 0
	for s := lo; s < lo+n; s++ {
		cfg := sim.Config{Seed: s, Members: *members, Clients: *clients, Duration: *duration}
		if *trace {
			cfg.Trace = stdout
		}
		fails := sim.Run(cfg)
		if len(fails) > 0 {
			failed++
			for _, f := range fails {
				fmt.Fprintf(stdout, "seed %d: %s\n", s, f)
			}
		}
	}
	fmt.Fprintf(stdout, "%d seeds passed, %d failed\n", int(n)-failed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
