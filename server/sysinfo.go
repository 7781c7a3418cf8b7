package server

import (
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Facts about the host and the process that envi, conf, dirs and mntr
// report: directory sizes, the Go runtime and OS in place of ZooKeeper's JVM
// properties, and file descriptor counts.

// treeSize sums the sizes of the regular files under dir.
func treeSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// environment is envi's list. kazoo parses the zookeeper.version line;
// zkraft reports its Go runtime where ZooKeeper reports the JVM.
func environment() []kv {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	osVersion := "<NA>"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		osVersion = strings.TrimSpace(string(b))
	}
	userName, userHome := "<NA>", "<NA>"
	if u, err := user.Current(); err == nil {
		userName, userHome = u.Username, u.HomeDir
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	maxMem := ms.HeapSys
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		maxMem = uint64(lim)
	}
	exe, _ := os.Executable()
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	osName := runtime.GOOS
	if osName != "" {
		osName = strings.ToUpper(osName[:1]) + osName[1:]
	}
	return []kv{
		{"zookeeper.version", versionString()},
		{"host.name", host},
		{"go.version", runtime.Version()},
		{"go.compiler", runtime.Compiler},
		{"go.maxprocs", strconv.Itoa(runtime.GOMAXPROCS(0))},
		{"go.executable", exe},
		{"os.tmpdir", os.TempDir()},
		{"os.name", osName},
		{"os.arch", runtime.GOARCH},
		{"os.version", osVersion},
		{"user.name", userName},
		{"user.home", userHome},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle)},
		{"os.memory.max", mb(maxMem)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
}

// fileDescriptors reads the open and maximum file descriptor counts from
// /proc (Linux); ok is false elsewhere.
func fileDescriptors() (open, max int64, ok bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "Max open files") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
		if len(f) == 0 {
			return 0, 0, false
		}
		if max, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return 0, 0, false
		}
		return int64(len(entries)), max, true
	}
	return 0, 0, false
}
