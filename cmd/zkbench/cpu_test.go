package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProcStatTicks(t *testing.T) {
	tests := []struct {
		name, text string
		want       uint64
		wantErr    bool
	}{
		{name: "plain", want: 1234 + 567,
			text: "4242 (zkraft) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 9 0 100 1000000 2000 18446744073709551615\n"},
		{name: "command name with spaces and parentheses", want: 10 + 20,
			text: "7 (a (b) c)) R 1 7 7 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0 5 0 0\n"},
		{name: "no command name", text: "7 zkraft R 1", wantErr: true},
		{name: "too few fields", text: "7 (zkraft) R 1 7 7 0 -1 0 0 0 0 0 10", wantErr: true},
		{name: "not a number", text: "7 (zkraft) R 1 7 7 0 -1 0 0 0 0 0 x 20 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatTicks(tt.text)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %d, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestParseMachineCPU(t *testing.T) {
	tests := []struct {
		name, text  string
		busy, total uint64
		wantErr     bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{name: "ten counters", text: "cpu  100 2 30 500 40 0 7 1 9 0\ncpu0 50 1 15 250 20 0 3 0 0 0\n",
			busy: 100 + 2 + 30 + 7 + 1, total: 100 + 2 + 30 + 500 + 40 + 7 + 1},
		{name: "eight counters", text: "cpu 1 1 1 1 1 1 1 1\n", busy: 6, total: 8},
		{name: "a cpuN line first", text: "cpu0 1 1 1 1 1 1 1 1\n", wantErr: true},
		{name: "short", text: "cpu 1 2 3\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, total, err := parseMachineCPU(tt.text)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %d/%d, want an error", busy, total)
				}
				return
			}
			if err != nil || busy != tt.busy || total != tt.total {
				t.Fatalf("got %d/%d, %v; want %d/%d", busy, total, err, tt.busy, tt.total)
			}
		})
	}
}

// TestReadCPUCountsWork reads this process as the "server": CPU burnt
// between two readings must show in both its server time (/proc, in ticks)
// and its client time (getrusage), and in the machine's busy jiffies. It
// spins until getrusage shows 300 ms more, so a busy machine only makes it
// slower.
func TestReadCPUCountsWork(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here: zkbench prints no CPU figures")
	}
	pids := []int{os.Getpid()}
	s0, err := readCPU(pids)
	if err != nil {
		t.Fatal(err)
	}
	var s1 cpuUse
	for deadline := time.Now().Add(20 * time.Second); ; {
		for i := 0; i < 1e6; i++ {
			_ = time.Now()
		}
		if s1, err = readCPU(pids); err != nil {
			t.Fatal(err)
		}
		if s1.client-s0.client >= 300*time.Millisecond || time.Now().After(deadline) {
			break
		}
	}
	u := s1.since(s0)
	if u.client < 300*time.Millisecond {
		t.Fatalf("20 s of spinning gave client %v of CPU, want 300ms", u.client)
	}
	// /proc counts in ticks of 10 ms, and a tick goes to user or system
	// by sampling: the two readings of the same process agree within a
	// few ticks.
	if d := u.server - u.client; d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("server (from /proc) %v, client (getrusage) %v of the same process: want them within 50ms", u.server, u.client)
	}
	if u.busy == 0 || u.total < u.busy {
		t.Fatalf("machine: busy %d of %d jiffies", u.busy, u.total)
	}
}

func TestCPUTable(t *testing.T) {
	z := &result{ops: 1000, cpu: cpuUse{server: 100 * time.Millisecond, client: 80 * time.Millisecond, busy: 90, total: 100}}
	a := &result{ops: 500, cpu: cpuUse{server: 75 * time.Millisecond, client: 40 * time.Millisecond, busy: 95, total: 100}}
	got := cpuTable([]cpuRow{{"session", z, a}, {"getData", &result{ops: 5}, nil}})
	want := "| session | 100µs | 150µs | 1.50x | 80µs | 80µs | 90% / 95% |\n"
	if !strings.Contains(got, want) {
		t.Fatalf("table\n%s\nlacks the row\n%s", got, want)
	}
	if strings.Contains(got, "getData") {
		t.Fatalf("a workload without CPU readings has a row:\n%s", got)
	}
	if s := cpuTable([]cpuRow{{"x", nil, nil}}); s != "" {
		t.Fatalf("no readings: want no table, got\n%s", s)
	}
	if s := cpuRoundNote(cpuUse{}, 10, time.Second); s != "" {
		t.Fatalf("no readings: want no round note, got %q", s)
	}
	note := cpuRoundNote(z.cpu, z.ops, 100*time.Millisecond)
	if want := "; cpu a op: server 100µs (1.00 CPUs), client 80µs; machine 90% busy"; note != want {
		t.Fatalf("round note %q, want %q", note, want)
	}
}
