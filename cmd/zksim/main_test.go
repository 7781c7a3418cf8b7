package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestOutputFormat(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		last     string
	}{
		{name: "clean", args: []string{"-seeds", "2", "-duration", "10s"}, code: 0, last: "2 seeds passed, 0 failed"},
		{name: "mutated", args: []string{"-mutate", "ignore-set-version", "-seed", "1"}, code: 1,
			contains: []string{"seed 1: linearizable: "}, last: "0 seeds passed, 1 failed"},
		{name: "list", args: []string{"-list-mutations"}, code: 0,
			contains: []string{"skip-expiry-fence\n", "follower-expiry\n", "ignore-set-version\n", "restore-raft-index\n", "lease-reads\n", "ack-before-durable\n", "skip-active-quorum\n", "skip-learner\n",
				"early-ack-before-write\n", "apply-unwritten\n", "tell-uncommitted\n"}},
		{name: "unknown mutation", args: []string{"-mutate", "nope", "-seed", "1"}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.code, out.String(), errOut.String())
			}
			for _, s := range tt.contains {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output %q lacks %q", out.String(), s)
				}
			}
			if tt.last != "" {
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if got := lines[len(lines)-1]; got != tt.last {
					t.Errorf("last line %q, want %q", got, tt.last)
				}
			}
		})
	}
}
