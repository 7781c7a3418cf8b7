package zoocfg

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr bool
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", file: "", check: func(t *testing.T, c Config) {
			require.Equal(t, int32(2000), c.TickTimeMs)
			require.Equal(t, 2181, c.ClientPort)
			require.Equal(t, 60, c.MaxClientCnxns)
			require.Equal(t, 0xfffff, c.JuteMaxBuffer)
			require.Equal(t, map[string]bool{"srvr": true}, c.FourLetterWords)
			minMs, maxMs := c.SessionBounds()
			require.Equal(t, [2]int32{4000, 40000}, [2]int32{minMs, maxMs})
		}},
		{name: "zookeeper keys", file: "tickTime=500\ndataDir=/d\ndataLogDir=/l\nclientPort=2999\n" +
			"clientPortAddress=127.0.0.1\nmaxClientCnxns=7\nminSessionTimeout=1500\nmaxSessionTimeout=9000\n" +
			"jute.maxbuffer=0x1000\nextendedTypesEnabled=true\n4lw.commands.whitelist=ruok, mntr\n" +
			"# comment\n\ninitLimit=5\nznode.container.checkIntervalMs=250\n",
			check: func(t *testing.T, c Config) {
				require.Equal(t, int32(500), c.TickTimeMs)
				require.Equal(t, "/d", c.DataDir)
				require.Equal(t, "/l", c.LogDir())
				require.Equal(t, 2999, c.ClientPort)
				require.Equal(t, "127.0.0.1", c.ClientPortAddress)
				require.Equal(t, 7, c.MaxClientCnxns)
				minMs, maxMs := c.SessionBounds()
				require.Equal(t, [2]int32{1500, 9000}, [2]int32{minMs, maxMs})
				require.Equal(t, 0x1000, c.JuteMaxBuffer)
				require.True(t, c.ExtendedTypes)
				require.Equal(t, map[string]bool{"ruok": true, "mntr": true}, c.FourLetterWords)
				require.Equal(t, 250*time.Millisecond, c.ContainerCheckInterval)
			}},
		{name: "star whitelist", file: "4lw.commands.whitelist=*\n", check: func(t *testing.T, c Config) {
			for _, w := range KnownFourLetterWords {
				require.True(t, c.FourLetterWords[w], w)
			}
		}},
		{name: "unknown key is not fatal", file: "someFutureKey=1\n", check: func(t *testing.T, c Config) {
			require.Equal(t, 2181, c.ClientPort)
		}},
		{name: "lock-delay off by default", file: "", check: func(t *testing.T, c Config) {
			ms, paths := c.LockDelay()
			require.Zero(t, ms)
			require.Nil(t, paths)
		}},
		{name: "lock-delay", file: "zkraft.lockDelayMs=5000\nzkraft.lockDelayPaths=/locks, /app/locks\n",
			check: func(t *testing.T, c Config) {
				ms, paths := c.LockDelay()
				require.Equal(t, int64(5000), ms)
				require.Equal(t, []string{"/locks", "/app/locks"}, paths)
			}},
		{name: "lock-delay without paths is off", file: "zkraft.lockDelayMs=5000\n", check: func(t *testing.T, c Config) {
			ms, paths := c.LockDelay()
			require.Zero(t, ms)
			require.Nil(t, paths)
		}},
		{name: "lock-delay path must be a znode path", file: "zkraft.lockDelayPaths=locks/\n", wantErr: true},
		{name: "lock-delay must be a duration", file: "zkraft.lockDelayMs=-1\n", wantErr: true},
		{name: "gc policy: headroom by default", file: "", check: func(t *testing.T, c Config) {
			require.False(t, c.GCRuntime)
		}},
		{name: "gc policy: runtime", file: "zkraft.gcPolicy=runtime\n", check: func(t *testing.T, c Config) {
			require.True(t, c.GCRuntime)
		}},
		{name: "gc policy: headroom", file: "zkraft.gcPolicy=runtime\nzkraft.gcPolicy=headroom\n", check: func(t *testing.T, c Config) {
			require.False(t, c.GCRuntime)
		}},
		{name: "gc policy: unknown", file: "zkraft.gcPolicy=off\n", wantErr: true},
		{name: "bad tickTime", file: "tickTime=abc\n", wantErr: true},
		{name: "bad port", file: "clientPort=70000\n", wantErr: true},
		{name: "not key=value", file: "clientPort\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "zoo.cfg")
			require.NoError(t, os.WriteFile(path, []byte(tt.file), 0o644))
			c, err := Load(path, zerolog.New(zerolog.NewTestWriter(t)))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}
