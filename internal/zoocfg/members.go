package zoocfg

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Member is one line of an ensemble's membership, as zoo.cfg's
// server.N=host:peerPort[:electionPort][:participant][;[clientHost:]clientPort]
// and /zookeeper/config write it.
type Member struct {
	ID           uint64
	Host         string
	PeerPort     int    // raft traffic
	ElectionPort int    // zkraft's member-to-member side channel (session liveness)
	Role         string // "participant" or "observer" (a raft learner that never votes)
	ClientAddr   string // host:port clients use; "" when the line does not say
}

// PeerAddr is where raft messages for this member go.
func (m Member) PeerAddr() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.PeerPort)) }

// ElectionAddr is where zkraft's side channel for this member listens.
func (m Member) ElectionAddr() string {
	return net.JoinHostPort(m.Host, strconv.Itoa(m.ElectionPort))
}

// Observer reports whether the member is an observer: it serves clients and
// receives the log as a raft learner but never votes.
func (m Member) Observer() bool { return m.Role == RoleObserver }

// The roles of a server.N line.
const (
	RoleParticipant = "participant"
	RoleObserver    = "observer"
)

// String formats the member as a /zookeeper/config line, as ZooKeeper's
// QuorumServer.toString does: server.N=host:peer:election:role;client.
func (m Member) String() string {
	s := fmt.Sprintf("server.%d=%s:%d:%d:%s", m.ID, m.Host, m.PeerPort, m.ElectionPort, m.Role)
	if m.ClientAddr != "" {
		s += ";" + m.ClientAddr
	}
	return s
}

// ParseMember parses the value of a server.N key.
func ParseMember(id uint64, value string) (Member, error) {
	m := Member{ID: id, Role: RoleParticipant}
	addrPart, clientPart, hasClient := strings.Cut(value, ";")
	fields := strings.Split(strings.TrimSpace(addrPart), ":")
	if len(fields) < 2 {
		return m, fmt.Errorf("server.%d: want host:peerPort[:electionPort][:role], got %q", id, value)
	}
	m.Host = fields[0]
	var err error
	if m.PeerPort, err = strconv.Atoi(fields[1]); err != nil || m.PeerPort <= 0 || m.PeerPort > 65535 {
		return m, fmt.Errorf("server.%d: bad peer port %q", id, fields[1])
	}
	rest := fields[2:]
	if len(rest) > 0 {
		if p, err := strconv.Atoi(rest[0]); err == nil {
			if p <= 0 || p > 65535 {
				return m, fmt.Errorf("server.%d: bad election port %q", id, rest[0])
			}
			m.ElectionPort = p
			rest = rest[1:]
		}
	}
	if len(rest) > 0 {
		switch rest[0] {
		case RoleParticipant, RoleObserver:
			m.Role = rest[0]
		default:
			return m, fmt.Errorf("server.%d: unknown role %q", id, rest[0])
		}
	}
	if m.ElectionPort == 0 {
		m.ElectionPort = m.PeerPort + 1000
	}
	if hasClient {
		clientPart = strings.TrimSpace(clientPart)
		host, port, err := net.SplitHostPort(clientPart)
		if err != nil {
			host, port = "", clientPart
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return m, fmt.Errorf("server.%d: bad client port %q", id, clientPart)
		}
		if host == "" || host == "0.0.0.0" {
			host = m.Host
		}
		m.ClientAddr = net.JoinHostPort(host, port)
	}
	return m, nil
}

// ReadMyID reads the member id from dataDir/myid, as ZooKeeper does.
func ReadMyID(dataDir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	if err != nil {
		return 0, fmt.Errorf("read myid: %w", err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || id == 0 || id > 254 {
		return 0, fmt.Errorf("myid must be a number from 1 to 254, got %q", strings.TrimSpace(string(b)))
	}
	return id, nil
}

// SortedMembers returns members ordered by id.
func SortedMembers(ms map[uint64]Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
