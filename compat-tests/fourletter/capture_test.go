package fourletter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/zktest"
)

// words are the four-letter words compared (the resets are sent after the
// others, so that they do not change what the others report).
var words = []string{"ruok", "isro", "srvr", "stat", "conf", "cons", "envi", "dirs", "wchs", "wchc", "wchp", "dump", "mntr", "crst", "srst"}

// adminNames are the AdminServer names queried: every primary name, the
// four-letter aliases, and one unknown name (resets after the others).
var adminNames = []string{
	"ruok", "srvr", "server_stats", "stat", "stats", "mntr", "monitor", "conf", "configuration", "cons", "connections",
	"wchs", "watch_summary", "wchc", "watches", "wchp", "watches_by_path", "dump", "envi", "environment", "dirs",
	"isro", "is_read_only", "lead", "leader", "voting_view", "zabstate", "lsnp", "last_snapshot", "icfg",
	"initial_configuration", "hash", "sysp", "system_properties", "obsr", "observers", "gtmk", "get_trace_mask",
	"stmk", "set_trace_mask", "nosuch", "orst", "observer_connection_stat_reset", "crst", "connection_stat_reset",
	"srst", "stat_reset",
}

// apacheJars start Debian's ZooKeeper 3.8 with its AdminServer: zktest's
// class path plus Jetty, the servlet API and Jackson (all pulled in by the
// zookeeper package).
var apacheJars = []string{
	"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar", "netty-all.jar", "commons-cli.jar",
	"metrics-core.jar", "snappy-java.jar", "jetty9-server.jar", "jetty9-servlet.jar", "jetty9-http.jar", "jetty9-io.jar",
	"jetty9-util.jar", "jetty9-util-ajax.jar", "jetty9-security.jar", "servlet-api.jar", "jackson-databind.jar",
	"jackson-core.jar", "jackson-annotations.jar",
}

func isReset(name string) bool {
	switch name {
	case "crst", "srst", "orst", "connection_stat_reset", "stat_reset", "observer_connection_stat_reset":
		return true
	}
	return false
}

// capture is what one server answered after the workload.
type capture struct {
	target    zktest.Target
	sessionID int64
	words     map[string]string
	admin     map[string]map[string]any // decoded JSON per name
	adminList string                    // GET /commands
}

func freePort() (int, error) {
	return freeport.Port()
}

// serverOptions enables the AdminServer on a free loopback port.
func serverOptions() (zktest.Options, int, error) {
	port, err := freePort()
	if err != nil {
		return zktest.Options{}, 0, err
	}
	return zktest.Options{Extra: map[string]string{
		"admin.enableServer": "true", "admin.serverAddress": "127.0.0.1", "admin.serverPort": strconv.Itoa(port),
	}}, port, nil
}

// setApacheClasspath makes zktest start Apache with the AdminServer's jars.
func setApacheClasspath() error {
	var cp []string
	for _, j := range apacheJars {
		p := "/usr/share/java/" + j
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("Apache ZooKeeper's AdminServer needs %s (Debian zookeeper package, scripts/install-deps.sh): %w", p, err)
		}
		cp = append(cp, p)
	}
	return os.Setenv(zktest.ApacheClasspathEnv, strings.Join(cp, ":"))
}

// launch starts a server of target with the AdminServer on; the caller
// closes it and removes dir.
func launch(target zktest.Target, dir string) (*zktest.Server, int, error) {
	if target == zktest.Apache {
		if err := setApacheClasspath(); err != nil {
			return nil, 0, err
		}
	}
	opts, adminPort, err := serverOptions()
	if err != nil {
		return nil, 0, err
	}
	srv, err := zktest.Launch(target, dir, opts)
	if err != nil {
		return nil, 0, err
	}
	if err := waitHTTP(adminPort); err != nil {
		srv.Close()
		return nil, 0, fmt.Errorf("%s AdminServer: %w", target, err)
	}
	return srv, adminPort, nil
}

func waitHTTP(port int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listening on port %d: %w", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// runCapture runs the workload on a fresh server and records every answer.
func runCapture(target zktest.Target) (*capture, error) {
	dir, err := os.MkdirTemp("", "fourletter-"+string(target)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, adminPort, err := launch(target, dir)
	if err != nil {
		return nil, err
	}
	defer srv.Close()

	c, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(discardLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	steps := []func() error{
		func() error { _, err := c.Create("/a", []byte("x"), 0, acl); return err },
		func() error { _, err := c.Create("/e", []byte("x"), zk.FlagEphemeral, acl); return err },
		func() error { _, _, _, err := c.GetW("/a"); return err },
		func() error { _, _, _, err := c.ChildrenW("/"); return err },
		func() error { _, _, _, err := c.ExistsW("/nonexist"); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("workload step %d: %w", i, err)
		}
	}
	out := &capture{target: target, sessionID: c.SessionID(), words: map[string]string{}, admin: map[string]map[string]any{}}
	base := "http://127.0.0.1:" + strconv.Itoa(adminPort) + "/commands"
	client := http.Client{Timeout: 5 * time.Second}
	get := func(url string) ([]byte, error) {
		resp, err := client.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	list, err := get(base)
	if err != nil {
		return nil, err
	}
	out.adminList = string(list)
	queryAdmin := func(name string) error {
		body, err := get(base + "/" + name)
		if err != nil {
			return err
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // session ids do not fit a float64
		if err := dec.Decode(&m); err != nil {
			return fmt.Errorf("%s: %w\n%s", name, err, body)
		}
		out.admin[name] = m
		return nil
	}
	sendWord := func(w string) error {
		s, err := srv.FourLetter(w)
		out.words[w] = s
		return err
	}
	// Everything that only reads first, then the resets.
	for _, reset := range []bool{false, true} {
		for _, w := range words {
			if isReset(w) == reset {
				if err := sendWord(w); err != nil {
					return nil, err
				}
			}
		}
		for _, name := range adminNames {
			if isReset(name) == reset {
				if err := queryAdmin(name); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// reference is the Apache capture every target is compared with, made once
// per test process.
var reference struct {
	once sync.Once
	cap  *capture
	err  error
}

func referenceCapture(t *testing.T) *capture {
	t.Helper()
	reference.once.Do(func() { reference.cap, reference.err = runCapture(zktest.Apache) })
	if reference.err != nil {
		t.Fatalf("reference Apache ZooKeeper: %v", reference.err)
	}
	return reference.cap
}

// targetCapture captures a target; the apache target gets a second
// instance, so the comparison proves the checks ignore incidental values.
var targetCaptures sync.Map // zktest.Target -> *capture

func targetCapture(t *testing.T, target zktest.Target) *capture {
	t.Helper()
	if c, ok := targetCaptures.Load(target); ok {
		return c.(*capture)
	}
	c, err := runCapture(target)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	targetCaptures.Store(target, c)
	return c
}
