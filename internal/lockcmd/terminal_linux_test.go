package lockcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// terminalHelperEnv makes the test binary act as the process that has the
// terminal (see TestChildReadsTerminal).
const terminalHelperEnv = "LOCKCMD_TERMINAL_HELPER"

// TestChildReadsTerminal: with stdin a terminal in whose foreground zkraft
// runs, a CMD that reads the terminal gets its input instead of being
// stopped by SIGTTIN (while holding the lock), and the terminal is given
// back to zkraft when CMD exits. The test binary runs itself under
// script(1), which gives it a pty as controlling terminal and stdin.
func TestChildReadsTerminal(t *testing.T) {
	if os.Getenv(terminalHelperEnv) == "1" {
		terminalHelper()
		return
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) from util-linux is needed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self := fmt.Sprintf("%q -test.run='^TestChildReadsTerminal$' -test.count=1", os.Args[0])
	cmd := exec.CommandContext(ctx, script, "-qec", self, "/dev/null")
	cmd.Env = append(os.Environ(), terminalHelperEnv+"=1")
	cmd.Stdin = strings.NewReader("hello\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	got := strings.ReplaceAll(out.String(), "\r", "")
	for _, want := range []string{"CMD read: hello\n", "status 0\n", "terminal back\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the output (err %v):\n%s", want, err, got)
		}
	}
}

// terminalHelper runs a CMD that reads a line from the terminal and reports
// what happened on stdout.
func terminalHelper() {
	if foregroundTerminal() < 0 {
		fmt.Println("helper: stdin is not a terminal in the foreground")
		os.Exit(1)
	}
	c, err := startChild([]string{"sh", "-c", `read line; echo "CMD read: $line"`}, nil)
	if err != nil {
		fmt.Println("helper:", err)
		os.Exit(1)
	}
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		fmt.Println("helper: CMD still running after 5 s (stopped by SIGTTIN?)")
		_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
		<-c.done
		os.Exit(1)
	}
	fmt.Printf("status %d\n", c.status())
	if foregroundTerminal() == 0 {
		fmt.Println("terminal back")
	} else {
		fmt.Println("helper: the terminal was not given back")
	}
}
