package server

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// withAdmin enables every four-letter word and the AdminServer on a free
// loopback port.
func withAdmin(c *Config) {
	c.FourLetterWords = map[string]bool{}
	for _, w := range knownFourLetterWords {
		c.FourLetterWords[w] = true
	}
	c.AdminEnabled = true
	c.AdminAddress = "127.0.0.1"
	c.AdminPort = 0
}

// workload opens a session that creates /a and the ephemeral /e, and sets a
// data watch on /a, a child watch on / and an exists watch on /nonexist.
func workload(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second,
		zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = c.Create("/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, _, _, err = c.GetW("/a")
	require.NoError(t, err)
	_, _, _, err = c.ChildrenW("/")
	require.NoError(t, err)
	_, _, _, err = c.ExistsW("/nonexist")
	require.NoError(t, err)
	return c
}

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf(format, args...) }

// settle waits until the server holds n connections: a four-letter
// connection may still be registered for a moment after its answer.
func settle(t *testing.T, s *Server, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.connMu.Lock()
		defer s.connMu.Unlock()
		return len(s.conns) == n
	}, 5*time.Second, time.Millisecond)
}

func fourLetter(t *testing.T, s *Server, cmd string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = io.WriteString(nc, cmd)
	require.NoError(t, err)
	out, err := io.ReadAll(nc)
	require.NoError(t, err)
	return string(out)
}

func adminGet(t *testing.T, s *Server, path string) (int, []byte) {
	t.Helper()
	require.NotNil(t, s.AdminAddr(), "AdminServer not running")
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + s.AdminAddr().String() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func getCommand(t *testing.T, s *Server, name string) map[string]any {
	t.Helper()
	code, body := adminGet(t, s, "/commands/"+name)
	require.Equal(t, http.StatusOK, code, string(body))
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return m
}

func TestFourLetterWords(t *testing.T) {
	s := startServer(t, withAdmin)
	workload(t, s)
	hex := `0x[0-9a-f]+`
	tests := []struct {
		cmd  string
		want []string // regexps, one per line, in order
	}{
		{"ruok", []string{`^imok$`}},
		{"isro", []string{`^rw$`}},
		{"srvr", []string{`^Zookeeper version: \d+\.\d+\.\d+-\S+, built on .+$`, `^Latency min/avg/max: \d+/\d+\.\d+/\d+$`,
			`^Received: \d+$`, `^Sent: \d+$`, `^Connections: 2$`, `^Outstanding: \d+$`, `^Zxid: ` + hex + `$`,
			`^Mode: standalone$`, `^Node count: 7$`, `^$`}},
		{"stat", []string{`^Zookeeper version: `, `^Clients:$`, `^ /127\.0\.0\.1:\d+\[1\]\(queued=\d+,recved=\d+,sent=\d+\)$`,
			`^ /127\.0\.0\.1:\d+\[0\]\(queued=0,recved=0,sent=0\)$`, `^$`, `^Latency min/avg/max: `, `^Received: `, `^Sent: `,
			`^Connections: 2$`, `^Outstanding: `, `^Zxid: `, `^Mode: standalone$`, `^Node count: 7$`, `^$`}},
		{"cons", []string{`^ /127\.0\.0\.1:\d+\[1\]\(queued=\d+,recved=\d+,sent=\d+,sid=` + hex + `,lop=EXIS,est=\d+,to=10000,` +
			`lcxid=` + hex + `,lzxid=` + hex + `,lresp=\d+,llat=\d+,minlat=\d+,avglat=\d+,maxlat=\d+\)$`,
			`^ /127\.0\.0\.1:\d+\[0\]\(queued=0,recved=0,sent=0\)$`, `^$`, `^$`}},
		{"conf", []string{`^clientPort=\d+$`, `^secureClientPort=-1$`, `^dataDir=/`, `^dataDirSize=\d+$`, `^dataLogDir=/`,
			`^dataLogSize=\d+$`, `^tickTime=2000$`, `^maxClientCnxns=60$`, `^minSessionTimeout=4000$`, `^maxSessionTimeout=40000$`,
			`^clientPortListenBacklog=-1$`, `^serverId=0$`, `^$`}},
		{"wchs", []string{`^1 connections watching 2 paths$`, `^Total watches:2$`, `^$`}},
		{"wchc", []string{`^` + hex + `$`, "^\t/a$", "^\t/nonexist$", `^$`, `^$`}},
		{"wchp", []string{`^/a$`, "^\t" + hex + `$`, `^/nonexist$`, "^\t" + hex + `$`, `^$`, `^$`}},
		{"dirs", []string{`^datadir_size: \d+$`, `^logdir_size: \d+$`, `^$`}},
		{"dump", []string{`^SessionTracker dump:$`, `^Session Sets \(1\)/\(1\):$`, `^1 expire at \w{3} \w{3} \d\d \d\d:\d\d:\d\d \S+ \d{4}:$`,
			"^\t" + hex + `$`, `^ephemeral nodes dump:$`, `^Sessions with Ephemerals \(1\):$`, `^` + hex + `:$`, "^\t/e$",
			`^Connections dump:$`, `^Connections Sets \(\d\)/\(2\):$`}},
		{"crst", []string{`^Connection stats reset\.$`, `^$`}},
		{"srst", []string{`^Server stats reset\.$`, `^$`}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			// The stat and cons connection lines: the session's, then this
			// four-letter connection's own (sorted by connection age).
			settle(t, s, 1)
			lines := strings.Split(fourLetter(t, s, tt.cmd), "\n")
			require.GreaterOrEqual(t, len(lines), len(tt.want), strings.Join(lines, "\n"))
			for i, re := range tt.want {
				require.Regexp(t, regexp.MustCompile(re), lines[i], "line %d of %s:\n%s", i, tt.cmd, strings.Join(lines, "\n"))
			}
		})
	}
	t.Run("mntr", func(t *testing.T) {
		settle(t, s, 1)
		out := fourLetter(t, s, "mntr")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.True(t, strings.HasPrefix(lines[0], "zk_version\t"+Version), lines[0])
		require.Equal(t, "zk_server_state\tstandalone", lines[1])
		got := map[string]string{}
		for _, l := range lines {
			k, v, ok := strings.Cut(l, "\t")
			require.True(t, ok, "line %q has no tab", l)
			require.Regexp(t, `^zk_[a-z0-9_]+$`, k)
			got[k] = v
		}
		for k, want := range map[string]string{
			"zk_znode_count": "7", "zk_ephemerals_count": "1", "zk_watch_count": "3", "zk_global_sessions": "1",
			"zk_num_alive_connections": "2", "zk_local_sessions": "0", "zk_raft_is_leader": "1", "zk_raft_voters": "1",
		} {
			require.Equal(t, want, got[k], k)
		}
		for _, k := range []string{"zk_avg_latency", "zk_avg_readlatency", "zk_avg_updatelatency"} {
			require.Regexp(t, `^\d+\.\d+$`, got[k], k) // a double, as ZooKeeper prints it
		}
		for _, k := range []string{"zk_raft_term", "zk_raft_commit_index", "zk_raft_applied_index", "zk_raft_last_snapshot_index",
			"zk_raft_log_entries", "zk_uptime", "zk_approximate_data_size", "zk_packets_received", "zk_p99_updatelatency"} {
			require.Regexp(t, `^\d+$`, got[k], k)
		}
		require.NotEqual(t, "0", got["zk_raft_term"])
	})
	t.Run("envi", func(t *testing.T) {
		lines := strings.Split(fourLetter(t, s, "envi"), "\n")
		require.Equal(t, "Environment:", lines[0])
		require.True(t, strings.HasPrefix(lines[1], "zookeeper.version="+Version+", built on "), lines[1])
		for _, l := range lines[2 : len(lines)-1] {
			require.Regexp(t, `^[a-z.]+=`, l)
		}
	})
}

func TestFourLetterWhitelist(t *testing.T) {
	s := startServer(t, func(c *Config) { c.FourLetterWords = map[string]bool{"srvr": true, "ruok": true} })
	require.Equal(t, "imok", fourLetter(t, s, "ruok"))
	require.Contains(t, fourLetter(t, s, "srvr"), "Mode: standalone\n")
	for _, w := range append(knownFourLetterWords, "gtmk", "stmk", "hash") {
		if w == "srvr" || w == "ruok" {
			continue
		}
		require.Equal(t, w+" is not executed because it is not in the whitelist.\n", fourLetter(t, s, w))
	}
}

// TestFourLetterUnimplementedWords pins what the README says of gtmk, stmk
// and hash: "*" does not enable them, and named in the whitelist they answer
// nothing, since zkraft has no trace mask or digest log to print.
func TestFourLetterUnimplementedWords(t *testing.T) {
	tests := []struct {
		name      string
		whitelist string
		want      func(word string) string
	}{
		{name: "star", whitelist: "*", want: func(w string) string {
			return w + " is not executed because it is not in the whitelist.\n"
		}},
		{name: "named", whitelist: "ruok, gtmk, stmk, hash", want: func(string) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "zoo.cfg")
			require.NoError(t, os.WriteFile(path, []byte("4lw.commands.whitelist="+tt.whitelist+"\n"), 0o600))
			cfg, err := Load(path, zerolog.Nop())
			require.NoError(t, err)
			s := startServer(t, func(c *Config) { c.FourLetterWords = cfg.FourLetterWords })
			require.Equal(t, "imok", fourLetter(t, s, "ruok"))
			for _, w := range []string{"gtmk", "stmk", "hash"} {
				require.Equal(t, tt.want(w), fourLetter(t, s, w), w)
			}
		})
	}
}

func TestFourLetterNotServing(t *testing.T) {
	s := startServer(t, withAdmin)
	s.serving.Store(false)
	defer s.serving.Store(true)
	require.Equal(t, "imok", fourLetter(t, s, "ruok"))
	require.Equal(t, "null", fourLetter(t, s, "isro"))
	require.True(t, strings.HasPrefix(fourLetter(t, s, "envi"), "Environment:\n"))
	for _, w := range []string{"srvr", "stat", "mntr", "cons", "wchs", "dump", "conf"} {
		require.Equal(t, notServing+"\n", fourLetter(t, s, w), w)
	}
	m := getCommand(t, s, "srvr")
	require.Equal(t, notServing, m["error"])
	m = getCommand(t, s, "ruok")
	require.Nil(t, m["error"])
}

func TestAdminCommandList(t *testing.T) {
	s := startServer(t, withAdmin)
	for _, path := range []string{"/commands", "/commands/"} {
		code, body := adminGet(t, s, path)
		require.Equal(t, http.StatusOK, code)
		for _, c := range adminCommands {
			require.Contains(t, string(body), fmt.Sprintf("<a href=\"/commands/%s\">%s</a>\n<br/>\n", c.names[0], c.names[0]))
		}
		require.Equal(t, len(adminCommands), strings.Count(string(body), "<a href="))
	}
	code, _ := adminGet(t, s, "/")
	require.Equal(t, http.StatusNotFound, code)
	resp, err := http.Post("http://"+s.AdminAddr().String()+"/commands/ruok", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestAdminCommands(t *testing.T) {
	s := startServer(t, withAdmin)
	c := workload(t, s)
	sid := float64(c.SessionID())
	tests := []struct {
		names   []string
		command string
		keys    []string
		check   func(t *testing.T, m map[string]any)
	}{
		{[]string{"ruok"}, "ruok", nil, nil},
		{[]string{"srvr", "server_stats"}, "server_stats", []string{"version", "read_only", "server_stats", "client_response", "node_count"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, 7.0, m["node_count"])
				st := m["server_stats"].(map[string]any)
				require.Equal(t, "standalone", st["server_state"])
				require.Contains(t, st, "last_processed_zxid")
				require.Contains(t, st, "num_alive_client_connections")
			}},
		{[]string{"stat", "stats"}, "stats", []string{"version", "server_stats", "node_count", "connections", "secure_connections"},
			func(t *testing.T, m map[string]any) {
				conns := m["connections"].([]any)
				require.Len(t, conns, 1)
				require.Equal(t, 1.0, conns[0].(map[string]any)["interest_ops"])
				require.NotContains(t, conns[0], "session_id")
			}},
		{[]string{"cons", "connections"}, "connections", []string{"connections", "secure_connections"},
			func(t *testing.T, m map[string]any) {
				conn := m["connections"].([]any)[0].(map[string]any)
				require.Equal(t, sid, conn["session_id"])
				require.Equal(t, "EXIS", conn["last_operation"])
				require.Equal(t, 10000.0, conn["session_timeout"])
			}},
		{[]string{"mntr", "monitor"}, "monitor", []string{"version", "server_state", "znode_count", "raft_term", "raft_applied_index"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, 7.0, m["znode_count"])
				require.Equal(t, 3.0, m["watch_count"])
				require.Equal(t, 1.0, m["ephemerals_count"])
			}},
		{[]string{"conf", "configuration", "config"}, "configuration", []string{"client_port", "data_dir", "data_log_dir", "tick_time",
			"max_client_cnxns", "min_session_timeout", "max_session_timeout", "server_id", "client_port_listen_backlog"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, float64(s.Addr().(*net.TCPAddr).Port), m["client_port"])
			}},
		{[]string{"wchs", "watch_summary"}, "watch_summary", []string{"num_connections", "num_paths", "num_total_watches"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, 2.0, m["num_total_watches"])
			}},
		{[]string{"wchc", "watches"}, "watches", []string{"session_id_to_watched_paths"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, map[string]any{fmt.Sprint(c.SessionID()): []any{"/a", "/nonexist"}}, m["session_id_to_watched_paths"])
			}},
		{[]string{"wchp", "watches_by_path"}, "watches_by_path", []string{"path_to_session_ids"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, map[string]any{"/a": []any{sid}, "/nonexist": []any{sid}}, m["path_to_session_ids"])
			}},
		{[]string{"dump"}, "dump", []string{"expiry_time_to_session_ids", "session_id_to_ephemeral_paths"},
			func(t *testing.T, m map[string]any) {
				require.Equal(t, map[string]any{fmt.Sprint(c.SessionID()): []any{"/e"}}, m["session_id_to_ephemeral_paths"])
			}},
		{[]string{"envi", "environment", "env"}, "environment", []string{"zookeeper.version", "host.name", "os.name", "user.dir"}, nil},
		{[]string{"dirs"}, "dirs", []string{"datadir_size", "logdir_size"}, nil},
		{[]string{"isro", "is_read_only"}, "is_read_only", []string{"read_only"}, nil},
		{[]string{"gtmk", "get_trace_mask"}, "get_trace_mask", []string{"tracemask"}, nil},
		{[]string{"hash"}, "hash", []string{"digests"}, nil},
		{[]string{"icfg", "initial_configuration"}, "initial_configuration", []string{"initial_configuration"}, nil},
		{[]string{"lsnp", "last_snapshot"}, "last_snapshot", []string{"zxid", "timestamp"}, nil},
		{[]string{"obsr", "observers"}, "observers", []string{"synced_observers", "observers"}, nil},
		{[]string{"orst", "observer_connection_stat_reset"}, "observer_connection_stat_reset", nil, nil},
		{[]string{"sysp", "system_properties"}, "system_properties", []string{"os.name", "go.version"}, nil},
		{[]string{"voting_view"}, "voting_view", []string{"current_config"}, nil},
		{[]string{"zabstate"}, "zabstate", []string{"voting", "zabstate"}, nil},
		{[]string{"crst", "connection_stat_reset"}, "connection_stat_reset", nil, nil},
		{[]string{"srst", "stat_reset"}, "stat_reset", nil, nil},
	}
	for _, tt := range tests {
		for _, name := range tt.names {
			t.Run(name, func(t *testing.T) {
				settle(t, s, 1)
				m := getCommand(t, s, name)
				require.Equal(t, tt.command, m["command"])
				require.Contains(t, m, "error")
				require.Nil(t, m["error"])
				for _, k := range tt.keys {
					require.Contains(t, m, k)
				}
				if tt.check != nil {
					tt.check(t, m)
				}
			})
		}
	}

	t.Run("leader standalone", func(t *testing.T) {
		m := getCommand(t, s, "lead")
		require.Equal(t, "leader", m["command"])
		require.Equal(t, "server is not initialized", m["error"])
	})
	t.Run("unknown", func(t *testing.T) {
		m := getCommand(t, s, "nosuch")
		require.Equal(t, map[string]any{"command": "nosuch", "error": "Unknown command: nosuch"}, m)
	})
	t.Run("trace mask", func(t *testing.T) {
		require.Equal(t, "setTraceMask requires long traceMask argument", getCommand(t, s, "stmk")["error"])
		require.Equal(t, 12.0, getCommand(t, s, "set_trace_mask?traceMask=12")["tracemask"])
		require.Equal(t, 12.0, getCommand(t, s, "gtmk")["tracemask"])
	})
	t.Run("doubles keep a fraction", func(t *testing.T) {
		_, body := adminGet(t, s, "/commands/mntr")
		require.Regexp(t, `"avg_latency": \d+\.\d+`, string(body))
	})
}

func TestAdminServerConfig(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		s := startServer(t, func(c *Config) { c.AdminEnabled = false })
		require.Nil(t, s.AdminAddr())
	})
	t.Run("command URL", func(t *testing.T) {
		s := startServer(t, func(c *Config) { withAdmin(c); c.AdminCommandURL = "/cmds" })
		code, body := adminGet(t, s, "/cmds")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, string(body), `<a href="/cmds/ruok">ruok</a>`)
		code, _ = adminGet(t, s, "/commands/ruok")
		require.Equal(t, http.StatusNotFound, code)
	})
	t.Run("pprof only when zkraft.pprof is set", func(t *testing.T) {
		s := startServer(t, withAdmin)
		code, _ := adminGet(t, s, "/debug/pprof/")
		require.Equal(t, http.StatusNotFound, code)
		s = startServer(t, func(c *Config) { withAdmin(c); c.Pprof = true })
		code, body := adminGet(t, s, "/debug/pprof/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, string(body), "goroutine")
		code, body = adminGet(t, s, "/debug/pprof/heap?debug=1")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, string(body), "heap profile")
	})
	t.Run("port in use does not stop the server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		s := startServer(t, func(c *Config) { withAdmin(c); c.AdminPort = ln.Addr().(*net.TCPAddr).Port })
		require.Nil(t, s.AdminAddr())
		require.Equal(t, "imok", fourLetter(t, s, "ruok"))
	})
}

func TestOperabilityConfigKeys(t *testing.T) {
	d := Default()
	require.True(t, d.AdminEnabled)
	require.Equal(t, "0.0.0.0", d.AdminAddress)
	require.Equal(t, 8080, d.AdminPort)
	require.Equal(t, "/commands", d.AdminCommandURL)
	require.True(t, d.AdminSnapshotEnabled)
	require.False(t, d.MetricsEnabled)
	require.Equal(t, 7000, d.MetricsPort)
	require.Equal(t, map[string]bool{"srvr": true}, d.FourLetterWords)
	require.False(t, d.Pprof)

	path := filepath.Join(t.TempDir(), "zoo.cfg")
	text := "admin.enableServer=false\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=9090\nadmin.commandURL=/cmds/\n" +
		"admin.idleTimeout=5000\nadmin.snapshot.enabled=false\nmetricsProvider.className=" + PrometheusProviderClass + "\nmetricsProvider.httpHost=127.0.0.2\n" +
		"metricsProvider.httpPort=7001\nmetricsProvider.exportJvmInfo=false\nzkraft.pprof=true\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	c, err := Load(path, zerolog.Nop())
	require.NoError(t, err)
	require.False(t, c.AdminEnabled)
	require.Equal(t, "127.0.0.1", c.AdminAddress)
	require.Equal(t, 9090, c.AdminPort)
	require.Equal(t, "/cmds", c.AdminCommandURL)
	require.Equal(t, 5*time.Second, c.AdminIdleTimeout)
	require.False(t, c.AdminSnapshotEnabled)
	require.True(t, c.MetricsEnabled)
	require.Equal(t, "127.0.0.2", c.MetricsHost)
	require.Equal(t, 7001, c.MetricsPort)
	require.False(t, c.MetricsExportJvm)
	require.True(t, c.Pprof)
	require.Equal(t, text, c.InitialConfig)

	for _, bad := range []string{"admin.serverPort=x", "admin.enableServer=maybe", "admin.snapshot.enabled=yes", "admin.commandURL=commands",
		"metricsProvider.className=com.example.Other", "metricsProvider.httpPort=70000", "zkraft.pprof=sometimes"} {
		require.NoError(t, os.WriteFile(path, []byte(bad+"\n"), 0o644))
		_, err := Load(path, zerolog.Nop())
		require.Error(t, err, bad)
	}
}

// TestOperabilityEnsemble starts a three-member ensemble in process and
// checks what the commands add in a quorum: Mode, the leader's proposal
// line, peer state, membership, and the AdminServer's leader, voting view
// and zab state.
func TestOperabilityEnsemble(t *testing.T) {
	servers, members := startEnsemble(t, 3, withAdmin)
	var leader *Server
	require.Eventually(t, func() bool {
		n := 0
		for _, s := range servers {
			if s.lead.isLeader() {
				leader, n = s, n+1
			}
		}
		return n == 1
	}, 20*time.Second, 20*time.Millisecond)

	for _, s := range servers {
		mode := "follower"
		if s == leader {
			mode = "leader"
		}
		srvr := fourLetter(t, s, "srvr")
		require.Contains(t, srvr, "\nMode: "+mode+"\n")
		require.Equal(t, s == leader, strings.Contains(srvr, "\nProposal sizes last/min/max: -1/-1/-1\n"), srvr)
		state := map[string]string{"leader": "leading - broadcast", "follower": "following - broadcast"}[mode]
		require.Contains(t, fourLetter(t, s, "mntr"), "\nzk_peer_state\t"+state+"\n")
		conf := fourLetter(t, s, "conf")
		require.Contains(t, conf, fmt.Sprintf("\nserverId=%d\n", s.cfg.ServerID))
		require.Contains(t, conf, "\nmembership: \n")
		for _, m := range members {
			require.Contains(t, conf, m.String()+"\n")
		}

		lead := getCommand(t, s, "leader")
		require.Nil(t, lead["error"])
		require.Equal(t, s == leader, lead["is_leader"])
		require.Equal(t, float64(leader.cfg.ServerID), lead["leader_id"])
		require.Equal(t, "127.0.0.1", lead["leader_ip"])
		view := getCommand(t, s, "voting_view")["current_config"].(map[string]any)
		require.Len(t, view, 3)
		require.Equal(t, strings.TrimPrefix(members[2].String(), "server.2="), view["2"])
		zab := getCommand(t, s, "zabstate")
		require.Equal(t, true, zab["voting"])
		require.Equal(t, "BROADCAST", zab["zabstate"])
		cfg := getCommand(t, s, "conf")
		require.Equal(t, float64(s.cfg.ServerID), cfg["server_id"])
		require.Contains(t, cfg["membership"], members[1].String())
	}
}

// TestOperabilityObserver starts 3 voters and an observer (member 4) in
// process: the observer's srvr, mntr, conf and zabstate say so, the voting
// view lists the voters only, and the leader's observers command lists it.
func TestOperabilityObserver(t *testing.T) {
	servers, _ := startEnsemble(t, 4, func(c *Config) {
		withAdmin(c)
		ms := maps.Clone(c.Members)
		m := ms[4]
		m.Role = "observer"
		ms[4] = m
		c.Members = ms
	})
	var leader *Server
	require.Eventually(t, func() bool {
		n := 0
		for _, s := range servers {
			if s.lead.isLeader() {
				leader, n = s, n+1
			}
		}
		return n == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.NotEqual(t, uint64(4), leader.cfg.ServerID)
	for _, s := range servers {
		observer := s.cfg.ServerID == 4
		mode := map[bool]string{true: "observer", false: "follower"}[observer]
		if s == leader {
			mode = "leader"
		}
		require.Contains(t, fourLetter(t, s, "srvr"), "\nMode: "+mode+"\n")
		state := map[string]string{"leader": "leading - broadcast", "follower": "following - broadcast",
			"observer": "observing - broadcast"}[mode]
		mntr := fourLetter(t, s, "mntr")
		require.Contains(t, mntr, "\nzk_server_state\t"+mode+"\n")
		require.Contains(t, mntr, "\nzk_peer_state\t"+state+"\n")
		require.Contains(t, fourLetter(t, s, "conf"), fmt.Sprintf("\npeerType=%d\n", map[bool]int{true: 1, false: 0}[observer]))
		require.Equal(t, !observer, getCommand(t, s, "zabstate")["voting"])
		view := getCommand(t, s, "voting_view")["current_config"].(map[string]any)
		require.Len(t, view, 3)
		require.NotContains(t, view, "4")
	}
	require.Eventually(t, func() bool {
		obs := getCommand(t, leader, "observers")
		list, _ := obs["observers"].([]any)
		return obs["synced_observers"] == float64(1) && len(list) == 1 && list[0].(map[string]any)["sid"] == float64(4)
	}, 10*time.Second, 50*time.Millisecond)
	for _, s := range servers {
		if s != leader {
			require.Equal(t, float64(0), getCommand(t, s, "observers")["synced_observers"])
		}
	}
}
