package main

import (
	"fmt"
	"os"

	"github.com/mattn/go-isatty"
)

// logFormat decides the log format of `zkraft serve`: the --log-format
// flag if given ("json" or "console"), otherwise console lines when stderr
// is a terminal (a person is watching) and JSON lines otherwise (a file, a
// pipe, a service manager).
func logFormat(flagValue string, stderrIsTerminal bool) (string, error) {
	switch flagValue {
	case "json", "console":
		return flagValue, nil
	case "", "auto":
		if stderrIsTerminal {
			return "console", nil
		}
		return "json", nil
	}
	return "", fmt.Errorf("--log-format %q: want json, console or auto", flagValue)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
