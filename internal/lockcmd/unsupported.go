//go:build !unix

package lockcmd

import (
	"fmt"
	"io"
)

// Lock is not available: CMD's process group and signals need a Unix.
func Lock(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "zkraft lock: not supported on this operating system (needs Unix process groups and signals)")
	return 2
}

// Elect is not available: CMD's process group and signals need a Unix.
func Elect(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "zkraft elect: not supported on this operating system (needs Unix process groups and signals)")
	return 2
}
