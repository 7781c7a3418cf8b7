package server

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

func uiJSON(t *testing.T, s *Server, path string) map[string]any {
	t.Helper()
	code, body := adminGet(t, s, path)
	require.Equal(t, http.StatusOK, code, string(body))
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return m
}

// TestUIFiles: the page and its assets are served from the binary; /ui
// redirects to /ui/; other paths stay 404.
func TestUIFiles(t *testing.T) {
	s := startServer(t, withAdmin)
	tests := []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html", `<script src="app.js">`},
		{"/ui/app.js", "javascript", "api/state"},
		{"/ui/style.css", "text/css", "--held"},
	}
	client := http.Client{Timeout: 5 * time.Second}
	for _, tc := range tests {
		resp, err := client.Get("http://" + s.AdminAddr().String() + tc.path)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.path)
		require.Contains(t, resp.Header.Get("Content-Type"), tc.contentType, tc.path)
		require.Contains(t, string(b), tc.contains, tc.path)
	}
	code, body := adminGet(t, s, "/ui") // follows the redirect
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "<title>zkraft</title>")
	code, _ = adminGet(t, s, "/ui/nosuch.js")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = adminGet(t, s, "/uix")
	require.Equal(t, http.StatusNotFound, code)
}

// TestUIState: the state endpoint carries the locks (as the locks command),
// the sessions with their client addresses, and the standalone member.
func TestUIState(t *testing.T) {
	s := startServer(t, withAdmin)
	a := lockClient(t, s)
	l := zk.NewLock(a, "/locks/ui", zk.WorldACL(zk.PermAll))
	require.NoError(t, l.Lock())
	st := uiJSON(t, s, "/ui/api/state")
	self := st["self"].(map[string]any)
	require.Equal(t, "standalone", self["mode"])
	require.Equal(t, true, self["serving"])
	members := st["members"].([]any)
	require.Len(t, members, 1)
	require.Equal(t, "standalone", members[0].(map[string]any)["role"])
	var found bool
	for _, x := range st["sessions"].([]any) {
		m := x.(map[string]any)
		if m["session_id"] == sessionHex(a.SessionID()) {
			found = true
			require.Regexp(t, `^127\.0\.0\.1:\d+$`, m["client_address"])
			require.Equal(t, float64(1), m["ephemerals"])
			require.Greater(t, m["expires_in_ms"].(float64), float64(0))
		}
	}
	require.True(t, found, "session missing: %v", st["sessions"])
	locks := st["locks"].(map[string]any)["locks"].([]any)
	require.Len(t, locks, 1)
	d := locks[0].(map[string]any)
	require.Equal(t, "/locks/ui", d["path"])
	h := lockEntries(t, d["holders"], "held_for_ms")
	require.Equal(t, sessionHex(a.SessionID()), h[0].SessionID)
}

// TestUIMembers: on an ensemble every member is listed with its role, and
// exactly one is the leader.
func TestUIMembers(t *testing.T) {
	servers, _ := startEnsemble(t, 3, func(c *Config) { withAdmin(c) })
	require.Eventually(t, func() bool {
		leaders := 0
		members := uiJSON(t, servers[0], "/ui/api/state")["members"].([]any)
		for _, x := range members {
			if x.(map[string]any)["role"] == "leader" {
				leaders++
			}
		}
		return len(members) == 3 && leaders == 1
	}, 20*time.Second, 50*time.Millisecond)
	for i, s := range servers {
		var self []float64
		for _, x := range uiJSON(t, s, "/ui/api/state")["members"].([]any) {
			if m := x.(map[string]any); m["self"] == true {
				self = append(self, m["id"].(float64))
			}
		}
		require.Equal(t, []float64{float64(i + 1)}, self)
	}
}

// TestUIZnode: the znode endpoint shows Stat and children; data only when
// world:anyone may read it, as text or hex.
func TestUIZnode(t *testing.T) {
	s := startServer(t, withAdmin)
	c := lockClient(t, s)
	open := zk.WorldACL(zk.PermAll)
	_, err := c.Create("/app", []byte("hello"), 0, open)
	require.NoError(t, err)
	_, err = c.Create("/app/bin", []byte{0, 1, 0xff}, 0, open)
	require.NoError(t, err)
	require.NoError(t, c.AddAuth("digest", []byte("u:p")))
	_, err = c.Create("/app/secret", []byte("s3cret"), 0, zk.DigestACL(zk.PermAll, "u", "p"))
	require.NoError(t, err)
	_, err = c.Create("/app/wo", []byte("w"), 0, zk.WorldACL(zk.PermWrite))
	require.NoError(t, err)
	_, err = c.Create("/app/nil", nil, 0, open)
	require.NoError(t, err)

	tests := []struct {
		path     string
		data     any
		encoding string
		hidden   bool
	}{
		{"/app", "hello", "utf-8", false},
		{"/app/bin", "0001ff", "hex", false},
		{"/app/secret", nil, "", true},
		{"/app/wo", nil, "", true},
	}
	for _, tc := range tests {
		z := uiJSON(t, s, "/ui/api/znode?path="+tc.path)
		require.Nil(t, z["error"], tc.path)
		require.Equal(t, tc.data, z["data"], tc.path)
		require.Equal(t, tc.encoding, z["data_encoding"], tc.path)
		require.Equal(t, tc.hidden, z["data_hidden"], tc.path)
	}
	z := uiJSON(t, s, "/ui/api/znode?path=/app")
	require.Equal(t, []any{"bin", "nil", "secret", "wo"}, z["children"])
	require.Equal(t, float64(4), z["stat"].(map[string]any)["num_children"])
	z = uiJSON(t, s, "/ui/api/znode")
	require.Equal(t, "/", z["path"])
	require.Contains(t, z["children"], "app")
	z = uiJSON(t, s, "/ui/api/znode?path=/nosuch")
	require.Equal(t, "no node", z["error"])
}
