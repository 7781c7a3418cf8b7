package zoocfg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestParseMember(t *testing.T) {
	tests := []struct {
		value   string
		want    Member
		wantErr string
	}{
		{value: "10.0.0.1:2888:3888", want: Member{ID: 3, Host: "10.0.0.1", PeerPort: 2888, ElectionPort: 3888, Role: "participant"}},
		{value: "h:2888", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888, Role: "participant"}},
		{value: "h:2888:3888:participant;2181", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888,
			Role: "participant", ClientAddr: "h:2181"}},
		{value: "h:2888:3888;0.0.0.0:2181", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888,
			Role: "participant", ClientAddr: "h:2181"}},
		{value: "h:2888:participant;127.0.0.1:2181", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888,
			Role: "participant", ClientAddr: "127.0.0.1:2181"}},
		{value: "h", wantErr: "want host:peerPort"},
		{value: "h:0", wantErr: "bad peer port"},
		{value: "h:2888:70000", wantErr: "bad election port"},
		{value: "h:2888:3888:observer", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888, Role: "observer"}},
		{value: "h:2888:3888:observer;127.0.0.1:2184", want: Member{ID: 3, Host: "h", PeerPort: 2888, ElectionPort: 3888,
			Role: "observer", ClientAddr: "127.0.0.1:2184"}},
		{value: "h:2888:3888:boss", wantErr: `unknown role "boss"`},
		{value: "h:2888:3888;x", wantErr: "bad client port"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := ParseMember(3, tt.value)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResolve(t *testing.T) {
	three := "server.1=h:1:2\nserver.2=h:3:4\nserver.3=h:5:6\n"
	tests := []struct {
		name, file, myid string
		wantID           uint64
		wantErr          string
		wantPeerType     string
		wantWarning      string
	}{
		{name: "standalone", file: "clientPort=2181\n", wantID: 1},
		{name: "myid", file: three, myid: "2\n", wantID: 2},
		{name: "one server line, no myid", file: "server.7=h:1:2\n", wantID: 7},
		{name: "ensemble without myid", file: three, wantErr: "read myid"},
		{name: "myid without a line", file: three, myid: "4", wantErr: "myid 4 has no server.4 line"},
		{name: "bad myid", file: three, myid: "0", wantErr: "myid must be a number from 1 to 254"},
		{name: "observer", file: three + "server.4=h:7:8:observer\npeerType=observer\n", myid: "4", wantID: 4,
			wantPeerType: "observer"},
		{name: "observer line without peerType", file: three + "server.4=h:7:8:observer\n", myid: "4", wantID: 4,
			wantPeerType: "observer"},
		{name: "peerType observer on a participant line", file: three + "peerType=observer\n", myid: "2", wantID: 2,
			wantPeerType: "participant", wantWarning: "peer type from servers list (participant) doesn't match peerType (observer)"},
		{name: "peerType participant on an observer line", file: three + "server.4=h:7:8:observer\npeerType=participant\n",
			myid: "4", wantID: 4, wantPeerType: "observer", wantWarning: "servers list (observer) doesn't match peerType (participant)"},
		{name: "bad peerType", file: three + "peerType=watcher\n", myid: "1", wantErr: "must be participant or observer"},
		{name: "observers only", file: "server.1=h:1:2:observer\nserver.2=h:3:4:observer\n", myid: "1",
			wantErr: "observers without participants"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.myid != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "myid"), []byte(tt.myid), 0o600))
			}
			c, err := Load(writeFile(t, "zoo.cfg", []byte("dataDir="+dir+"\n"+tt.file)), zerolog.Nop())
			if err == nil {
				err = c.Resolve()
			}
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantID, c.ServerID)
			if tt.wantPeerType != "" {
				require.Equal(t, tt.wantPeerType, c.PeerType)
			}
			if tt.wantWarning != "" {
				require.Contains(t, c.PeerTypeWarning, tt.wantWarning)
			} else {
				require.Empty(t, c.PeerTypeWarning)
			}
		})
	}
}

func TestMemberString(t *testing.T) {
	// ZooKeeper 3.8's QuorumServer.toString: host:peer:election:role;client.
	tests := []struct {
		m    Member
		want string
	}{
		{Member{ID: 1, Host: "127.0.0.1", PeerPort: 2881, ElectionPort: 3881, Role: "participant", ClientAddr: "127.0.0.1:2181"},
			"server.1=127.0.0.1:2881:3881:participant;127.0.0.1:2181"},
		{Member{ID: 4, Host: "127.0.0.1", PeerPort: 2884, ElectionPort: 3884, Role: "observer", ClientAddr: "127.0.0.1:2184"},
			"server.4=127.0.0.1:2884:3884:observer;127.0.0.1:2184"},
		{Member{ID: 4, Host: "h", PeerPort: 2884, ElectionPort: 3884, Role: "observer"}, "server.4=h:2884:3884:observer"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.m.String())
			back, err := ParseMember(tt.m.ID, strings.TrimPrefix(tt.want, fmt.Sprintf("server.%d=", tt.m.ID)))
			require.NoError(t, err)
			require.Equal(t, tt.m, back)
		})
	}
}
