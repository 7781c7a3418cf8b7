package zktest

import (
	"os"
	"strings"
)

// Target names a server implementation under test.
type Target string

// The known targets.
const (
	Zkraft Target = "zkraft"
	Apache Target = "apache"
)

// TargetsEnv is the environment variable read by Targets.
const TargetsEnv = "ZKRAFT_TARGETS"

// Targets returns the targets to test: the comma-separated list in
// $ZKRAFT_TARGETS (blank entries ignored), or both targets when it is unset
// or empty. Unknown names are returned as they are, so that Start fails
// loudly on a typo instead of silently testing nothing.
func Targets() []Target {
	v := strings.TrimSpace(os.Getenv(TargetsEnv))
	if v == "" {
		return []Target{Zkraft, Apache}
	}
	var out []Target
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, Target(strings.ToLower(f)))
		}
	}
	return out
}
