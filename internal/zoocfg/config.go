// Package zoocfg reads a ZooKeeper zoo.cfg into the typed settings of a
// zkraft member: ZooKeeper's own keys (and the "zookeeper." system property
// spelling of many), the server.N membership lines, the TLS keys, and
// zkraft's few additions (zkraft.join, zkraft.electionTickMs, zkraft.pprof,
// zkraft.gcPolicy, zkraft.lockDelayMs and zkraft.lockDelayPaths).
//
// Invariants:
//   - Load starts from Default and applies the file's lines in order; a later
//     line for the same key wins.
//   - An unknown key is logged as a warning and ignored, never an error; a
//     known key with a malformed value is an error naming the file and line.
//   - Parsing touches nothing but the config file and the files it names for
//     passwords (*.passwordPath); Resolve reads dataDir/myid. Key and trust
//     stores are read when the server starts, not here.
//   - Settings are plain values: a Config can be built in code (tests) and
//     behaves as one read from a file. The one field no file sets is
//     Network, the seam tests use to run members on an in-memory network.
package zoocfg

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/netseam"
	"github.com/zkraft/zkraft/jute"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/znode"
)

// Config is a zkraft server's configuration. Its keys are ZooKeeper's zoo.cfg
// keys; Load reads them from a file, Default fills in ZooKeeper's defaults.
type Config struct {
	TickTimeMs          int32  // tickTime
	DataDir             string // dataDir
	DataLogDir          string // dataLogDir: the raft log and snapshots (defaults to DataDir)
	ClientPort          int    // clientPort
	ClientPortAddress   string // clientPortAddress (default all interfaces)
	MaxClientCnxns      int    // maxClientCnxns per client IP; 0 = unlimited
	MinSessionTimeoutMs int32  // minSessionTimeout; <= 0 means 2*tickTime
	MaxSessionTimeoutMs int32  // maxSessionTimeout; <= 0 means 20*tickTime
	JuteMaxBuffer       int    // jute.maxbuffer
	ExtendedTypes       bool   // extendedTypesEnabled: TTL nodes
	FourLetterWords     map[string]bool
	// ContainerCheckInterval is how often the leader looks for empty containers
	// and expired TTL nodes (ZooKeeper's znode.container.checkIntervalMs).
	ContainerCheckInterval time.Duration
	// SuperDigest is "super:<base64 sha1>" (zookeeper.DigestAuthenticationProvider.superDigest).
	SuperDigest string
	// SnapshotEvery is how many applied entries trigger a snapshot (snapCount).
	SnapshotEvery uint64
	ServerID      uint64 // myid; 1 when standalone
	// Members lists the ensemble from server.N lines; empty when standalone.
	Members map[uint64]Member
	// PeerType is zoo.cfg's peerType ("participant", "observer" or "" when
	// unset). As in ZooKeeper 3.8 the member's own server.N line decides:
	// Resolve sets PeerTypeWarning when they disagree.
	PeerType        string
	PeerTypeWarning string
	// Join starts a new member with empty storage that waits to be added by
	// a reconfig, instead of bootstrapping a group (zkraft.join, --join).
	Join bool
	// GlobalOutstandingLimit bounds the requests received and not yet
	// answered on the whole server; past it connections stop reading
	// (globalOutstandingLimit, default 1000).
	GlobalOutstandingLimit int
	// SkipACL lets any client reconfigure (ZooKeeper's zookeeper.skipACL, which
	// zkraft applies to reconfig only); otherwise reconfig needs WRITE on
	// /zookeeper/config, which only the super user has.
	SkipACL bool
	// ReconfigEnabled allows the reconfig request (reconfigEnabled).
	ReconfigEnabled bool
	// ElectionTickMs is raft's tick; an election starts after 10 ticks of
	// silence from the leader.
	ElectionTickMs int
	// Lock-delay (zkraft.lockDelayMs, zkraft.lockDelayPaths): when the leader
	// expires a session, its ephemerals under one of LockDelayPaths that
	// hold a lock (or are not named like lock contenders; waiting
	// contenders go at once) are removed LockDelayMs later instead of at
	// once. Off unless both are set
	// (LockDelay reports it). A clean close is never delayed.
	LockDelayMs    int64
	LockDelayPaths []string

	// AdminServer (server/admin.go): admin.enableServer, admin.serverAddress,
	// admin.serverPort, admin.commandURL, admin.idleTimeout.
	AdminEnabled     bool
	AdminAddress     string
	AdminPort        int
	AdminCommandURL  string
	AdminIdleTimeout time.Duration
	// Pprof serves Go's net/http/pprof profiles under /debug/pprof/ on the
	// AdminServer (zkraft.pprof, zkraft's own key; off by default).
	Pprof bool
	// GCRuntime leaves the Go garbage collector's pacing to the runtime
	// (zkraft.gcPolicy=runtime) instead of zkraft serve's headroom policy
	// (internal/gctune, zkraft.gcPolicy=headroom, the default).
	GCRuntime bool
	// AdminSnapshotEnabled allows the AdminServer's snapshot command
	// (admin.snapshot.enabled, default true as in ZooKeeper 3.9).
	AdminSnapshotEnabled bool
	// Prometheus endpoint (server/metrics.go): on when metricsProvider.className
	// names ZooKeeper's PrometheusMetricsProvider; metricsProvider.httpHost,
	// metricsProvider.httpPort, metricsProvider.exportJvmInfo (Go runtime and
	// process metrics in zkraft).
	MetricsEnabled   bool
	MetricsHost      string
	MetricsPort      int
	MetricsExportJvm bool
	InitialConfig    string // the zoo.cfg text Load read, for the icfg command

	// TLS (tls.go; server/tls.go builds it): secureClientPort, secureClientPortAddress, the ssl.*
	// keys (clients) and, with sslQuorum=true, the ssl.quorum.* keys
	// (members). ClientPort < 0 means no plain client listener, as when a
	// zoo.cfg sets secureClientPort and no clientPort.
	SecureClientPort        int
	SecureClientPortAddress string
	ClientTLS               TLSSettings
	SSLQuorum               bool
	QuorumTLS               TLSSettings
	// X509AuthProvider is set by authProvider.x509 naming ZooKeeper's
	// X509AuthenticationProvider; X509SuperUser is
	// X509AuthenticationProvider.superUser (a DN that gets the super id).
	X509AuthProvider bool
	X509SuperUser    string
	// SASL (sasl.go): authProvider.sasl, the JAAS file and enforcement.
	SASL SASLSettings
	// Network is not a zoo.cfg key: it is where the server listens (client,
	// secure client, election/liveness, peer, admin and metrics ports) and
	// dials (peers, the leader's liveness port). nil means the operating
	// system's network (netseam.OS); tests pass an in-memory one
	// (internal/memnet).
	Network       netseam.Network
	clientPortSet bool // the zoo.cfg had a clientPort line
}

// Resolve finishes a configuration after every override: in an ensemble it
// reads this member's id from dataDir/myid and checks it has a server line.
func (c *Config) Resolve() error {
	if len(c.Members) == 0 {
		return nil
	}
	id, err := ReadMyID(c.DataDir)
	if err != nil {
		if len(c.Members) > 1 {
			return err
		}
		id = SortedMembers(c.Members)[0].ID
	}
	if _, ok := c.Members[id]; !ok {
		return fmt.Errorf("myid %d has no server.%d line", id, id)
	}
	c.ServerID = id
	participants := 0
	for _, m := range c.Members {
		if !m.Observer() {
			participants++
		}
	}
	if participants == 0 {
		return errors.New("observers without participants is an invalid configuration")
	}
	if role := c.Members[id].Role; c.PeerType != "" && c.PeerType != role {
		// ZooKeeper 3.8 (QuorumPeerConfig.setupPeerType) warns and follows
		// the servers list.
		c.PeerTypeWarning = fmt.Sprintf("peer type from servers list (%s) doesn't match peerType (%s); using the servers list", role, c.PeerType)
	}
	c.PeerType = c.Members[id].Role
	return nil
}

// LockDelay returns the lock-delay the leader's expiries carry, and the
// prefixes it applies to; 0 and nil when it is off.
func (c *Config) LockDelay() (ms int64, paths []string) {
	if c.LockDelayMs <= 0 || len(c.LockDelayPaths) == 0 {
		return 0, nil
	}
	return c.LockDelayMs, c.LockDelayPaths
}

// MaxLockDelayMs bounds zkraft.lockDelayMs (one day).
const MaxLockDelayMs = 24 * 3600 * 1000

// Standalone reports whether the config describes a single server.
func (c *Config) Standalone() bool { return len(c.Members) <= 1 }

// Default returns the embedded defaults: client port 2181, data in
// ./zkraft-data, tickTime 2000, as `zkraft serve` uses without a file.
func Default() Config {
	return Config{
		TickTimeMs:             2000,
		DataDir:                "zkraft-data",
		ClientPort:             2181,
		MaxClientCnxns:         60,
		JuteMaxBuffer:          jute.DefaultMaxBuffer,
		FourLetterWords:        map[string]bool{"srvr": true},
		ContainerCheckInterval: 60 * time.Second,
		SnapshotEvery:          100000,
		ServerID:               1,
		ElectionTickMs:         100,
		GlobalOutstandingLimit: 1000,
		AdminEnabled:           true,
		AdminAddress:           "0.0.0.0",
		AdminPort:              8080,
		AdminCommandURL:        "/commands",
		AdminIdleTimeout:       30 * time.Second,
		AdminSnapshotEnabled:   true,
		MetricsHost:            "0.0.0.0",
		MetricsPort:            7000,
		MetricsExportJvm:       true,
		SASL:                   SASLSettings{ServerSection: "Server"},
	}
}

// PrometheusProviderClass is the metricsProvider.className that turns the
// Prometheus endpoint on, as in ZooKeeper.
const PrometheusProviderClass = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"

// KnownFourLetterWords lists the commands a whitelist of "*" enables: the
// four-letter words zkraft implements.
var KnownFourLetterWords = []string{"ruok", "srvr", "stat", "conf", "cons", "crst", "dump", "envi", "mntr", "wchs", "wchc", "wchp", "dirs", "isro", "srst"}

// ignoredKeys are zoo.cfg keys ZooKeeper knows that do not change zkraft's
// behaviour in standalone mode; they are accepted without a warning.
var ignoredKeys = map[string]bool{
	"initLimit": true, "syncLimit": true,
	"autopurge.snapRetainCount": true, "autopurge.purgeInterval": true, "standaloneEnabled": true,
	"preAllocSize": true, "electionAlg": true, "forceSync": true,
}

// Load reads a zoo.cfg file on top of Default(). Unknown keys are logged as
// warnings, not errors; malformed values are errors.
func Load(path string, log zerolog.Logger) (Config, error) {
	cfg := Default()
	f, err := os.Open(path)
	if err != nil {
		return cfg, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lineNo := 0
	var raw strings.Builder
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			raw.WriteString(line + "\n")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return cfg, fmt.Errorf("%s:%d: expected key=value, got %q", path, lineNo, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if err := cfg.set(key, value, log); err != nil {
			return cfg, fmt.Errorf("%s:%d: %s: %w", path, lineNo, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	cfg.InitialConfig = raw.String()
	cfg.resolveClientPorts()
	if err := cfg.checkAuthEnforcement(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if (cfg.LockDelayMs > 0) != (len(cfg.LockDelayPaths) > 0) {
		log.Warn().Int64("zkraft.lockDelayMs", cfg.LockDelayMs).Strs("zkraft.lockDelayPaths", cfg.LockDelayPaths).
			Msg("lock-delay needs both zkraft.lockDelayMs and zkraft.lockDelayPaths; it is off")
	}
	return cfg, nil
}

func (c *Config) set(key, value string, log zerolog.Logger) error {
	atoi := func() (int, error) { return strconv.Atoi(value) }
	switch key {
	case "tickTime":
		n, err := atoi()
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.TickTimeMs = int32(n)
	case "dataDir":
		c.DataDir = value
	case "dataLogDir":
		c.DataLogDir = value
	case "clientPort":
		n, err := atoi()
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("must be a port number, got %q", value)
		}
		c.ClientPort = n
		c.clientPortSet = true
	case "clientPortAddress":
		c.ClientPortAddress = value
	case "maxClientCnxns":
		n, err := atoi()
		if err != nil || n < 0 {
			return fmt.Errorf("must be a non-negative integer, got %q", value)
		}
		c.MaxClientCnxns = n
	case "minSessionTimeout", "maxSessionTimeout":
		n, err := atoi()
		if err != nil {
			return fmt.Errorf("must be an integer, got %q", value)
		}
		if key == "minSessionTimeout" {
			c.MinSessionTimeoutMs = int32(n)
		} else {
			c.MaxSessionTimeoutMs = int32(n)
		}
	case "jute.maxbuffer":
		n, err := strconv.ParseInt(value, 0, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.JuteMaxBuffer = int(n)
	case "extendedTypesEnabled", "zookeeper.extendedTypesEnabled":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.ExtendedTypes = b
	case "4lw.commands.whitelist":
		c.FourLetterWords = map[string]bool{}
		for _, w := range strings.Split(value, ",") {
			w = strings.TrimSpace(w)
			if w == "*" {
				for _, k := range KnownFourLetterWords {
					c.FourLetterWords[k] = true
				}
			} else if w != "" {
				c.FourLetterWords[w] = true
			}
		}
	case "znode.container.checkIntervalMs":
		n, err := atoi()
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.ContainerCheckInterval = time.Duration(n) * time.Millisecond
	case "DigestAuthenticationProvider.superDigest", "zookeeper.DigestAuthenticationProvider.superDigest":
		c.SuperDigest = value
	case "snapCount":
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.SnapshotEvery = n
	case "peerType":
		if value != RoleParticipant && value != RoleObserver {
			return fmt.Errorf("must be participant or observer, got %q", value)
		}
		c.PeerType = value
	case "reconfigEnabled":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.ReconfigEnabled = b
	case "skipACL", "zookeeper.skipACL":
		c.SkipACL = value == "yes" || value == "true"
	case "globalOutstandingLimit", "zookeeper.globalOutstandingLimit":
		n, err := atoi()
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.GlobalOutstandingLimit = n
	case "zkraft.join":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.Join = b
	case "zkraft.pprof":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.Pprof = b
	case "zkraft.gcPolicy":
		switch value {
		case "headroom":
			c.GCRuntime = false
		case "runtime":
			c.GCRuntime = true
		default:
			return fmt.Errorf("must be headroom or runtime, got %q", value)
		}
	case "zkraft.electionTickMs":
		n, err := atoi()
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer, got %q", value)
		}
		c.ElectionTickMs = n
	case "zkraft.lockDelayMs":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 || n > MaxLockDelayMs {
			return fmt.Errorf("must be an integer from 0 to %d (ms), got %q", MaxLockDelayMs, value)
		}
		c.LockDelayMs = n
	case "zkraft.lockDelayPaths":
		c.LockDelayPaths = nil
		for _, p := range strings.Split(value, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if err := znode.ValidatePath(p); err != nil {
				return err
			}
			c.LockDelayPaths = append(c.LockDelayPaths, p)
		}
	case "admin.enableServer", "zookeeper.admin.enableServer":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.AdminEnabled = b
	case "admin.snapshot.enabled", "zookeeper.admin.snapshot.enabled":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.AdminSnapshotEnabled = b
	case "admin.serverAddress", "zookeeper.admin.serverAddress":
		c.AdminAddress = value
	case "admin.serverPort", "zookeeper.admin.serverPort", "metricsProvider.httpPort":
		n, err := atoi()
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("must be a port number, got %q", value)
		}
		if key == "metricsProvider.httpPort" {
			c.MetricsPort = n
		} else {
			c.AdminPort = n
		}
	case "admin.commandURL", "zookeeper.admin.commandURL":
		if !strings.HasPrefix(value, "/") || len(value) < 2 {
			return fmt.Errorf("must be a path such as /commands, got %q", value)
		}
		c.AdminCommandURL = strings.TrimSuffix(value, "/")
	case "admin.idleTimeout", "zookeeper.admin.idleTimeout":
		n, err := atoi()
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive integer (ms), got %q", value)
		}
		c.AdminIdleTimeout = time.Duration(n) * time.Millisecond
	case "metricsProvider.className":
		switch value {
		case PrometheusProviderClass:
			c.MetricsEnabled = true
		case "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider", "org.apache.zookeeper.metrics.impl.NullMetricsProvider":
			c.MetricsEnabled = false
		default:
			return fmt.Errorf("unknown metrics provider %q (zkraft has %s)", value, PrometheusProviderClass)
		}
	case "metricsProvider.httpHost":
		c.MetricsHost = value
	case "metricsProvider.exportJvmInfo":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", value)
		}
		c.MetricsExportJvm = b
	default:
		if ok, err := c.setTLSKey(key, value, log); ok {
			return err
		}
		if ok, err := c.setSASLKey(key, value); ok {
			return err
		}
		if strings.HasPrefix(key, "server.") {
			id, err := strconv.ParseUint(strings.TrimPrefix(key, "server."), 10, 64)
			if err != nil || id == 0 || id > 254 {
				return fmt.Errorf("server id must be a number from 1 to 254")
			}
			m, err := ParseMember(id, value)
			if err != nil {
				return err
			}
			if c.Members == nil {
				c.Members = map[uint64]Member{}
			}
			c.Members[id] = m
			return nil
		}
		if !ignoredKeys[key] {
			log.Warn().Str("key", key).Str("value", value).Msg("unknown config key ignored")
		}
	}
	return nil
}

// SessionBounds returns the negotiated-timeout range in ms.
func (c *Config) SessionBounds() (minMs, maxMs int32) {
	return session.Bounds(c.TickTimeMs, c.MinSessionTimeoutMs, c.MaxSessionTimeoutMs)
}

// LogDir is where the raft log lives.
func (c *Config) LogDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return c.DataDir
}
