package server

import "github.com/zkraft/zkraft/internal/zoocfg"

// Member is one line of an ensemble's membership, as zoo.cfg's
// server.N=host:peerPort[:electionPort][:participant][;[clientHost:]clientPort]
// and /zookeeper/config write it (internal/zoocfg parses it).
type Member = zoocfg.Member

// parseMember parses the value of a server.N key.
func parseMember(id uint64, value string) (Member, error) { return zoocfg.ParseMember(id, value) }

// sortedMembers returns members ordered by id.
func sortedMembers(ms map[uint64]Member) []Member { return zoocfg.SortedMembers(ms) }
