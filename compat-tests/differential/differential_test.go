package differential_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// randomSeed drives the generated part of the run; it is printed so that a
// failure can be replayed (the generator is deterministic for a seed).
const randomSeed = 20240611

// maxPrinted bounds the differences printed in full per script.
const maxPrinted = 40

// superUser is the digest user both servers treat as super.
const superUser = "super:s3cret"

// TestDifferential replays every script against zkraft and Apache
// ZooKeeper 3.8 and compares the normalised transcripts step by step.
func TestDifferential(t *testing.T) {
	start := time.Now()
	opts := zktest.Options{SuperDigest: zktest.DigestACLHash(superUser), ContainerCheckIntervalMs: 500}
	var zkSrv, apSrv *zktest.Server
	var wg sync.WaitGroup
	var zkErr, apErr error
	var zkDir, apDir = t.TempDir(), t.TempDir()
	wg.Add(2)
	go func() { defer wg.Done(); zkSrv, zkErr = zktest.Launch(zktest.Zkraft, zkDir, opts) }()
	go func() { defer wg.Done(); apSrv, apErr = zktest.Launch(zktest.Apache, apDir, opts) }()
	wg.Wait()
	for _, s := range []*zktest.Server{zkSrv, apSrv} {
		if s != nil {
			t.Cleanup(func() {
				s.Close()
				if t.Failed() {
					t.Logf("tail of %s output (%s):\n%s", s.Target, s.LogPath, s.LogTail(30))
				}
			})
		}
	}
	if zkErr != nil || apErr != nil {
		t.Fatalf("start servers: zkraft: %v; apache: %v", zkErr, apErr)
	}
	t.Logf("servers started in %v; random seed %d", time.Since(start).Round(time.Millisecond), randomSeed)

	scripts := allScripts(randomSeed)
	dumpDir := os.Getenv(dumpEnv)
	zk, ap := newSide("zkraft", zkSrv.Addr), newSide("apache", apSrv.Addr)
	counts := exceptionCounts{}
	tagged := map[string]int{} // exception id -> steps that name it, in the scripts run
	totalSteps, totalReqs, failedScripts := 0, 0, 0
	only := os.Getenv(onlyEnv)
	for i, sc := range scripts {
		if only != "" && !strings.Contains(sc.name, only) {
			continue
		}
		var zr, ar []record
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); zr = zk.run(i, sc) }()
		go func() { defer wg.Done(); ar = ap.run(i, sc) }()
		wg.Wait()
		totalSteps += len(sc.steps)
		for _, st := range sc.steps {
			totalReqs += max(len(st.reqs), 1)
			if st.exc != "" {
				tagged[st.exc]++
			}
		}
		if dumpDir != "" {
			dump(t, dumpDir, i, sc, zr, ar)
		}
		if diffs := compare(sc, zr, ar, counts); len(diffs) > 0 {
			failedScripts++
			t.Errorf("script %d %q: %d of %d steps differ", i, sc.name, len(diffs), len(sc.steps))
			for k, d := range diffs {
				if k == maxPrinted {
					t.Logf("... %d more differences not printed", len(diffs)-maxPrinted)
					break
				}
				t.Log(d)
			}
		}
	}
	t.Logf("%d scripts, %d steps, about %d requests, %d scripts differ, %v", len(scripts), totalSteps, totalReqs, failedScripts, time.Since(start).Round(time.Millisecond))
	width := 0
	for _, e := range exceptions {
		width = max(width, len(e.id))
	}
	for _, e := range exceptions {
		t.Logf("exception %-*s applied %2d times (%2d steps tagged): %s", width, e.id, counts[e.id], tagged[e.id], e.reason)
	}
}

// onlyEnv, if set, restricts the run to scripts whose name contains it
// (scripts build on their own paths only, so any subset runs).
const onlyEnv = "DIFFERENTIAL_ONLY"

// dumpEnv names a directory where both transcripts of every script are
// written (for reading a failure side by side with diff).
const dumpEnv = "DIFFERENTIAL_DUMP"

func dump(t *testing.T, dir string, idx int, sc *script, zr, ar []record) {
	for _, s := range []struct {
		name string
		recs []record
	}{{"zkraft", zr}, {"apache", ar}} {
		var b strings.Builder
		for i, r := range s.recs {
			fmt.Fprintf(&b, "%d %s\n", i, r.desc)
			for _, o := range r.obs {
				fmt.Fprintf(&b, "    %s\n", o)
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("%02d-%s.%s.txt", idx, strings.Map(safeRune, sc.name), s.name))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Logf("dump: %v", err)
		}
	}
}

func safeRune(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
		return r
	}
	return '_'
}

// compare returns one printable entry per step whose records differ and
// that no exception covers.
func compare(sc *script, zr, ar []record, counts exceptionCounts) []string {
	var diffs []string
	for i, st := range sc.steps {
		z, a := zr[i], ar[i]
		if slices.Equal(z.obs, a.obs) {
			continue
		}
		if counts.allowed(st, z, a) {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "DIFF %s step %d\n  request (zkraft): %s\n", sc.name, i, z.desc)
		if a.desc != z.desc {
			fmt.Fprintf(&b, "  request (apache): %s\n", a.desc)
		}
		fmt.Fprintf(&b, "  zkraft:\n")
		for _, o := range z.obs {
			fmt.Fprintf(&b, "    %s\n", o)
		}
		fmt.Fprintf(&b, "  apache:\n")
		for _, o := range a.obs {
			fmt.Fprintf(&b, "    %s\n", o)
		}
		diffs = append(diffs, b.String())
	}
	return diffs
}
