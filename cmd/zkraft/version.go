package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/zkraft/zkraft/server"
)

// versionMain runs `zkraft version`.
func versionMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprintln(stdout, "usage: zkraft version\n\nPrints zkraft's version, the git commit it was built from and the Go version.")
			return 0
		}
		fmt.Fprintf(stderr, "zkraft version: unexpected arguments %q\n", args)
		return 2
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(info, ok))
	return 0
}

// buildCommit is the git commit when the build does not stamp VCS
// information (-buildvcs=false): go build -ldflags "-X main.buildCommit=$(git rev-parse HEAD)".
var buildCommit = ""

// versionText is `zkraft version`'s output for the given build info.
func versionText(info *debug.BuildInfo, ok bool) string {
	ver := server.Version
	if i := strings.Index(ver, "-zkraft-"); i >= 0 {
		ver = ver[i+len("-zkraft-"):]
	}
	commit, when, modified := "unknown", "", false
	if buildCommit != "" {
		commit = buildCommit
	}
	goVersion := runtime.Version()
	if ok && info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "zkraft %s\n", ver)
	fmt.Fprintf(&b, "server version: %s (reported by srvr, stat, mntr)\n", server.Version)
	c := commit
	if modified {
		c += " (modified)"
	}
	if when != "" {
		c += ", committed " + when
	}
	fmt.Fprintf(&b, "git commit: %s\n", c)
	fmt.Fprintf(&b, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
