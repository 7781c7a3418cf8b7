package zktest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ZkraftBinEnv names a prebuilt zkraft binary to use instead of building one.
const ZkraftBinEnv = "ZKRAFT_BIN"

// ApacheClasspathEnv overrides the classpath used to start Apache ZooKeeper.
const ApacheClasspathEnv = "ZKTEST_APACHE_CLASSPATH"

// installHint tells how to get the Apache reference server.
const installHint = "install the reference server with the README's command: scripts/install-deps.sh " +
	"(or scripts/test.sh, which runs it; as root: apt-get update && apt-get install -y zookeeper openjdk-17-jdk-headless)"

// apacheJars is the classpath that starts Debian's ZooKeeper 3.8.
var apacheJars = []string{
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar",
	"/usr/share/java/slf4j-api.jar",
	"/usr/share/java/slf4j-simple.jar",
	"/usr/share/java/netty-all.jar",
	"/usr/share/java/commons-cli.jar",
	"/usr/share/java/metrics-core.jar",
	"/usr/share/java/snappy-java.jar",
}

// apacheCommand returns java's path and arguments (before the zoo.cfg path).
func apacheCommand(opts Options) (string, []string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", nil, fmt.Errorf("java not found on PATH: %s: %w", installHint, err)
	}
	cp := os.Getenv(ApacheClasspathEnv)
	if cp == "" {
		for _, jar := range apacheJars {
			if _, err := os.Stat(jar); err != nil {
				return "", nil, fmt.Errorf("missing a jar of Apache ZooKeeper: %s: %w", installHint, err)
			}
		}
		cp = strings.Join(apacheJars, ":")
	}
	flags := []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	if opts.JVMFlags != nil {
		flags = opts.JVMFlags
	}
	args := append(append([]string(nil), flags...), "-cp", cp)
	args = append(args, opts.javaProps()...)
	args = append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain")
	return java, args, nil
}

// zkraftBuild caches the one build of cmd/zkraft made per test process.
var zkraftBuild struct {
	once sync.Once
	path string
	err  error
}

// ZkraftBinary returns the path of the zkraft binary the servers run, for
// tests of zkraft's other subcommands: $ZKRAFT_BIN, or a binary built once
// per process from this module's cmd/zkraft.
func ZkraftBinary() (string, error) { return zkraftBinary() }

// zkraftBinary returns the path of the zkraft binary: $ZKRAFT_BIN, or a
// binary built once per process from this module's cmd/zkraft.
func zkraftBinary() (string, error) {
	if p := os.Getenv(ZkraftBinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", ZkraftBinEnv, p, err)
		}
		return p, nil
	}
	zkraftBuild.once.Do(func() {
		zkraftBuild.path, zkraftBuild.err = buildZkraft()
	})
	return zkraftBuild.path, zkraftBuild.err
}

// buildZkraft runs go build into a per-user cache directory. The binary is
// written to a temporary name and renamed, so that test processes building
// concurrently never see a half-written file.
func buildZkraft() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the zkraft module")
	}
	root := filepath.Dir(gomod)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "zkraft-zktest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "zkraft-*.tmp")
	if err != nil {
		return "", fmt.Errorf("build dir: %w", err)
	}
	tmp.Close()
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "github.com/zkraft/zkraft/cmd/zkraft")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("go build cmd/zkraft: %w\n%s", err, msg)
	}
	// One binary per checkout: test runs in two worktrees at once must not
	// replace each other's server under their feet.
	sum := fnv.New64a()
	sum.Write([]byte(root))
	final := filepath.Join(dir, fmt.Sprintf("zkraft-%016x", sum.Sum64()))
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("install zkraft binary: %w", err)
	}
	return final, nil
}
