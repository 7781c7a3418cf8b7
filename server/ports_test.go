package server

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/internal/freeport"
	"github.com/zkraft/zkraft/internal/memnet"
)

// TestConfPortsOnEveryNetwork: conf's clientPort and secureClientPort are
// the ports the listeners got, on the operating system's network and on
// memnet (whose addresses are no *net.TCPAddr).
func TestConfPortsOnEveryNetwork(t *testing.T) {
	f := newTLSFixture(t)
	tests := []struct {
		name string
		net  func(c *Config)
	}{
		{"loopback", func(*Config) {}},
		{"memnet", func(c *Config) {
			c.Network = memnet.New().Host("m1")
			c.ClientPortAddress = "m1"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			securePort, err := freeport.Port()
			require.NoError(t, err)
			srv := startServer(t, func(c *Config) {
				f.secure("need")(c)
				tt.net(c)
				c.SecureClientPort = securePort
			})
			port := func(a net.Addr) int64 {
				_, p, err := net.SplitHostPort(a.String())
				require.NoError(t, err)
				n, err := strconv.Atoi(p)
				require.NoError(t, err)
				return int64(n)
			}
			conf := map[string]any{}
			for _, e := range srv.configuration() {
				conf[e.k] = e.v
			}
			require.NotZero(t, port(srv.Addr()), "the client listener's port")
			require.Equal(t, port(srv.Addr()), conf["clientPort"], "conf's clientPort")
			require.Equal(t, int64(securePort), port(srv.SecureAddr()))
			require.Equal(t, int64(securePort), conf["secureClientPort"], "conf's secureClientPort")
		})
	}
}
