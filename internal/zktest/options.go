package zktest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Options tune a server. The zero value is a standalone server with
// tickTime 2000 ms.
type Options struct {
	// TickMs is tickTime in ms (default 2000). Sessions negotiate timeouts in
	// [2*TickMs, 20*TickMs]; use 200-500 in expiry tests.
	TickMs int
	// Extra holds additional zoo.cfg keys; they override the defaults.
	Extra map[string]string
	// ContainerCheckIntervalMs sets how often empty containers and expired
	// TTL nodes are removed (0 = the server default, 60 s). zkraft reads the
	// zoo.cfg key znode.container.checkIntervalMs; Apache the system property
	// of the same name.
	ContainerCheckIntervalMs int
	// SuperDigest is "super:<base64 sha1>" (see DigestACLHash); a session
	// authenticated as that digest user bypasses every ACL. zkraft reads the
	// zoo.cfg key DigestAuthenticationProvider.superDigest; Apache the system
	// property zookeeper.DigestAuthenticationProvider.superDigest.
	SuperDigest string
	// JVMFlags, when not nil, replace the JVM flags Apache runs with in tests
	// (-Xmx512m, serial GC, C1 only: quick to start, slow to run); zkbench
	// passes ZooKeeper's own defaults so that it is measured fully compiled.
	JVMFlags []string
}

func (o Options) tickMs() int {
	if o.TickMs <= 0 {
		return 2000
	}
	return o.TickMs
}

// zooCfg renders the zoo.cfg of a server of the given target.
func (o Options) zooCfg(target Target, dataDir string, port int) []byte {
	kv := map[string]string{
		"tickTime":               strconv.Itoa(o.tickMs()),
		"dataDir":                dataDir,
		"clientPort":             strconv.Itoa(port),
		"clientPortAddress":      "127.0.0.1",
		"admin.enableServer":     "false",
		"4lw.commands.whitelist": "*",
		"extendedTypesEnabled":   "true",
	}
	if target == Zkraft {
		if o.ContainerCheckIntervalMs > 0 {
			kv["znode.container.checkIntervalMs"] = strconv.Itoa(o.ContainerCheckIntervalMs)
		}
		if o.SuperDigest != "" {
			kv["DigestAuthenticationProvider.superDigest"] = o.SuperDigest
		}
	}
	return []byte(formatCfg(kv, o.Extra))
}

// javaProps returns the -D flags that Apache needs for options it reads from
// system properties rather than zoo.cfg.
func (o Options) javaProps() []string {
	var props []string
	if o.ContainerCheckIntervalMs > 0 {
		props = append(props, "-Dznode.container.checkIntervalMs="+strconv.Itoa(o.ContainerCheckIntervalMs))
	}
	if o.SuperDigest != "" {
		props = append(props, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+o.SuperDigest)
	}
	// zoo.cfg keys that Apache does not know become "zookeeper."+key system
	// properties, but jute.maxbuffer is read without the prefix.
	if v, ok := o.Extra["jute.maxbuffer"]; ok {
		props = append(props, "-Djute.maxbuffer="+v)
	}
	// The JAAS file of SASL: zkraft reads the zoo.cfg key, a JVM only the
	// system property (ZooKeeper's SERVER_JVMFLAGS).
	if v, ok := o.Extra["java.security.auth.login.config"]; ok {
		props = append(props, "-Djava.security.auth.login.config="+v)
	}
	return props
}

// formatCfg writes zoo.cfg lines for kv overridden by extra, sorted by key.
func formatCfg(kv, extra map[string]string) string {
	for k, v := range extra {
		kv[k] = v
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	return b.String()
}
