package znode

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"math/bits"
)

// nodeIndex maps every node's full path (n.path) to the node: the tree's
// Tree.nodes. It replaces a map[string]*node, whose keys repeated the
// string headers the nodes hold: a slot here is 10 bytes (a pointer, a tag
// byte and a dist byte) against the map's 24-byte slot and control byte
// (about 15 heap bytes a znode at 1 M znodes against 56).
//
// Layout: indexShards shards, a node's shard chosen by the top bits of the
// hash of its path. Each shard is an open-addressing table with Robin Hood
// linear probing over slots grouped by groupSlots: a group holds its
// slots' tags and dists (two 8-byte arrays, tested eight at once by get)
// next to their pointers. A slot's metadata is 0 when empty, else tag<<8 |
// (dist+1), dist being the slot's distance from the home slot of its node
// (wrapping at the end of the shard) and tag 8 more bits of the hash, so a
// look-up reads a node (to compare its path) only when the tag matches.
//
// Cost: the key lives in the node, so a hit loads the node and then its
// path's bytes, one dependent load more than a map whose slot holds the
// key's header (a few ns in cache, one more cache miss out of it).
//
// Invariants of every shard, after every call:
//   - count is the number of occupied slots, and count*8 <= slots*7 (load
//     factor at most 7/8, so a probe always meets an empty slot). An insert
//     that would pass 7/8 first grows the shard to 3/2 its groups (rounded
//     up; 1 becomes 2), so a grown shard is about 7/12 full; deletions
//     never shrink it.
//   - Robin Hood order: the node in the slot s+1 has dist at most the dist
//     of the node in s plus 1, and a node with dist d > 0 in slot s has, in
//     every slot from its home to s-1, a node of dist >= its distance from
//     that home slot. So a look-up at distance d that meets an empty slot
//     or a node of dist < d stops: the path is absent.
//   - dist < maxProbe: an insert that would exceed it grows the shard
//     (never with a random seed and sane sizes; it bounds a look-up).
//   - Deletion shifts back (backward-shift deletion, no tombstones): the
//     run of nodes after the freed slot with dist > 0 moves one slot back,
//     each dist decremented, up to the first empty slot or node of dist 0.
//     The order above holds again and no slot is a tombstone.
//
// Growth: an insert into a full shard rehashes that shard only, into
// 3/2 the slots, so no write ever rehashes more than about a 1/indexShards
// part of the tree (4970 nodes, 1 to 2 ms, when shards grow at about
// 1.27 M znodes: BenchmarkNodeIndexGrowth). Shards grow independently, at
// different inserts.
//
// Order: the hash is seeded per index (maphash), so the slot order, and so
// the order of all, differs between trees and runs. Nothing observable may
// depend on it: callers of all sort (Freeze, WriteSnapshot, Check) or
// document no particular order (EachNode). Growth timing is likewise not
// observable.
//
// The zero nodeIndex is empty and ready; the first insert seeds it. It is
// not safe for concurrent use with a write (the tree's rules).
type nodeIndex struct {
	seed   maphash.Seed
	count  int
	shards []indexShard // nil until the first insert, then indexShards long
}

const (
	indexShardBits = 8
	indexShards    = 1 << indexShardBits
	groupSlots     = 8
	// tagShift selects the hash bits of the tag: below the shard bits,
	// above the 32 bits that choose the home slot.
	tagShift = 64 - indexShardBits - 8
)

// maxProbe bounds a slot's dist. dist+1 is kept in a byte, and get
// compares it with the probe's distance+1 for a group's lanes at once in
// bytes that must stay below 0x80: maxProbe+groupSlots+1 < 0x80. A
// variable only so that a test can force the overflow path of place.
var maxProbe uint16 = 112

// slotGroup is groupSlots slots: their metadata, kept as a byte array of
// tags and one of dist+1 (0: empty) so that get tests the eight at once,
// and their nodes.
type slotGroup struct {
	tags  [groupSlots]uint8
	dists [groupSlots]uint8
	nodes [groupSlots]*node
}

// meta returns lane l's metadata: 0 if empty, else tag<<8 | (dist+1).
func (g *slotGroup) meta(l uint32) uint16 {
	return uint16(g.tags[l%groupSlots])<<8 | uint16(g.dists[l%groupSlots])
}

// set sets lane l's metadata and node.
func (g *slotGroup) set(l uint32, m uint16, n *node) {
	g.tags[l%groupSlots], g.dists[l%groupSlots], g.nodes[l%groupSlots] = uint8(m>>8), uint8(m), n
}

// indexShard is one open-addressing table; its slots are its groups'
// slots in order, slot i being groups[i/groupSlots] lane i%groupSlots.
type indexShard struct {
	groups []slotGroup
	count  int
}

// len returns the number of nodes indexed.
func (x *nodeIndex) len() int { return x.count }

func (x *nodeIndex) hash(path string) uint64 { return maphash.String(x.seed, path) }

func (x *nodeIndex) shard(h uint64) *indexShard { return &x.shards[h>>(64-indexShardBits)] }

// home returns the home slot of hash h in a shard of slots slots: the low
// 32 bits scaled to [0, slots) (multiply-shift, no division).
func home(h uint64, slots uint32) uint32 {
	return uint32(uint64(uint32(h)) * uint64(slots) >> 32)
}

// metaAt0 returns the metadata of hash h at distance 0 from its home.
func metaAt0(h uint64) uint16 { return uint16(uint8(h>>tagShift))<<8 | 1 }

// get returns the node whose path is path, or nil.
//
// It tests a group's lanes from the probe's on at once (SWAR on the tag
// and dist bytes as uint64s, lane j in byte j): the lanes whose tag is the
// path's are candidates, and the first lane whose dist+1 is below the
// probe's distance+1 there (empty, or a node nearer its home) ends the
// probe; candidates before it are compared in order. A candidate of
// another home (same tag) only costs a path comparison.
func (x *nodeIndex) get(path string) *node {
	if x.count == 0 {
		return nil
	}
	h := x.hash(path)
	s := x.shard(h)
	ngroups := uint32(len(s.groups))
	if ngroups == 0 {
		return nil
	}
	i := home(h, ngroups*groupSlots)
	gi, shift := i/groupSlots, (i%groupSlots)*8
	tags := bytes8 * uint64(uint8(h>>tagShift))
	// want holds, in byte j, the probe's distance+1 at lane j of the
	// group, counted from the probe's first lane there (bytes < 0x80:
	// maxProbe+groupSlots+1 < 0x80).
	want := uint64(ramp8 + bytes8)
	for {
		g := &s.groups[gi]
		valid := ^uint64(0) >> shift // lanes from the probe's on
		dists := binary.LittleEndian.Uint64(g.dists[:]) >> shift
		// High bit of byte j set iff dists[j] < want[j] (no borrow
		// crosses bytes: each byte of dists|high8 is >= 0x80 > want's).
		stop := ^((dists | high8) - want) & high8 & valid
		match := zeroBytes(binary.LittleEndian.Uint64(g.tags[:])>>shift^tags) & valid
		if stop != 0 {
			match &= stop&-stop - 1 // lanes before the first stop
		}
		for ; match != 0; match &= match - 1 {
			l := uint32(bits.TrailingZeros64(match))/8 + shift/8
			if n := g.nodes[l%groupSlots]; n.path() == path {
				return n
			}
		}
		if stop != 0 {
			return nil
		}
		want += bytes8 * uint64(groupSlots-shift/8)
		if gi++; gi == ngroups {
			gi = 0
		}
		shift = 0
	}
}

const (
	bytes8 = 0x0101010101010101 // 1 in every byte
	high8  = 0x8080808080808080 // the high bit of every byte
	ramp8  = 0x0706050403020100 // j in byte j
)

// zeroBytes returns v with the high bit of each zero byte set, and no
// other bit.
func zeroBytes(v uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((v&low7 + low7) | v | low7)
}

// put indexes n under n.path, replacing the node indexed under that path
// if any.
func (x *nodeIndex) put(n *node) {
	if x.shards == nil {
		x.init()
	}
	p := n.path()
	h := x.hash(p)
	s := x.shard(h)
	if (s.count+1)*8 > len(s.groups)*groupSlots*7 {
		x.resize(s, growGroups(len(s.groups)))
	}
	if i, ok := s.locate(h, p); ok {
		s.groups[i/groupSlots].nodes[i%groupSlots] = n
		return
	}
	s.count++
	x.count++
	for c := x.place(s, n, h); c != nil; c = x.place(s, c, x.hash(c.path())) {
		// c was carried out of the table by a displacement that hit
		// maxProbe: regrow, then place it.
		x.resize(s, 2*len(s.groups))
	}
}

// init seeds an empty index and makes its shards.
func (x *nodeIndex) init() {
	x.seed = maphash.MakeSeed()
	x.shards = make([]indexShard, indexShards)
}

// reserve sizes the shards of an empty index for about n nodes (a
// snapshot's count) so that reading them grows few shards.
func (x *nodeIndex) reserve(n int) {
	if x.count != 0 || n <= 0 {
		return
	}
	x.init()
	// A shard gets about m nodes, give or take sqrt(m): room for m plus
	// four standard deviations at the maximum load factor.
	m := float64(n) / indexShards
	want := m + 4*math.Sqrt(m) + 1
	groups := int(math.Ceil(want * 8 / 7 / groupSlots))
	for i := range x.shards {
		x.shards[i].groups = make([]slotGroup, groups)
	}
}

// growGroups returns the group count a shard of groups groups grows to.
func growGroups(groups int) int {
	return max(1, groups+(groups+1)/2)
}

// place inserts n, absent from s and counted, with hash h by Robin Hood
// insertion. It returns nil, or the node (n or one it displaced) left out
// of the table when a dist would reach maxProbe.
func (x *nodeIndex) place(s *indexShard, n *node, h uint64) *node {
	slots := uint32(len(s.groups)) * groupSlots
	i := home(h, slots)
	cur := metaAt0(h)
	for {
		if cur&0xff > maxProbe {
			return n
		}
		g := &s.groups[i/groupSlots]
		l := i % groupSlots
		m := g.meta(l)
		if m == 0 {
			g.set(l, cur, n)
			return nil
		}
		if m&0xff < cur&0xff {
			// Robin Hood: the richer node (nearer its home) gives
			// up its slot and travels on.
			next := g.nodes[l]
			g.set(l, cur, n)
			cur, n = m, next
		}
		cur++
		if i++; i == slots {
			i = 0
		}
	}
}

// maxShardSlots bounds a shard's table for count nodes: far beyond what
// the load factor needs (7/8) and beyond what random hashes ever need to
// keep every dist below maxProbe.
func maxShardSlots(count int) int { return max(1<<16, 256*count) }

// locate probes s, which has slots, for path of hash h: the slot that holds
// it and true, or false once the probe reaches a slot whose node sits
// nearer its home than path would (Robin Hood order: path is not further
// on).
func (s *indexShard) locate(h uint64, path string) (uint32, bool) {
	slots := uint32(len(s.groups)) * groupSlots
	i := home(h, slots)
	want := metaAt0(h)
	for {
		g := &s.groups[i/groupSlots]
		m := g.meta(i)
		if m&0xff < want&0xff {
			return i, false
		}
		if m == want && g.nodes[i%groupSlots].path() == path {
			return i, true
		}
		want++
		if i++; i == slots {
			i = 0
		}
	}
}

// resize rehashes s into groups groups (more if a node would reach
// maxProbe).
func (x *nodeIndex) resize(s *indexShard, groups int) {
	old := s.groups
retry:
	s.groups = make([]slotGroup, groups)
	for gi := range old {
		g := &old[gi]
		for l, n := range g.nodes {
			if g.dists[l] != 0 && x.place(s, n, x.hash(n.path())) != nil {
				groups *= 2
				if groups*groupSlots > maxShardSlots(s.count) {
					// Only more than maxProbe nodes whose hashes agree in
					// the shard and home bits (a collision of about 40
					// bits under a secret random seed) get here: stop
					// with a clear message rather than double until the
					// process runs out of memory.
					panic(fmt.Sprintf("znode: node index: %d nodes of a shard still collide at %d slots", s.count, groups*groupSlots))
				}
				goto retry
			}
		}
	}
}

// delete removes the node indexed under path, if any.
func (x *nodeIndex) delete(path string) {
	if x.count == 0 {
		return
	}
	h := x.hash(path)
	s := x.shard(h)
	slots := uint32(len(s.groups)) * groupSlots
	if slots == 0 {
		return
	}
	i, ok := s.locate(h, path)
	if !ok {
		return
	}
	s.count--
	x.count--
	// Backward shift: move each following node of dist > 0 one slot
	// back (nearer its home) until an empty slot or a node at its home.
	for {
		j := i + 1
		if j == slots {
			j = 0
		}
		gi, gj := &s.groups[i/groupSlots], &s.groups[j/groupSlots]
		m := gj.meta(j)
		if m&0xff <= 1 {
			gi.set(i, 0, nil)
			return
		}
		gi.set(i, m-1, gj.nodes[j%groupSlots])
		i = j
	}
}

// all yields every indexed node once, in slot order: an order that
// depends on the seed, which callers must not let show (sort, or promise
// no order). The index must not change during the iteration.
func (x *nodeIndex) all() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		for si := range x.shards {
			s := &x.shards[si]
			for gi := range s.groups {
				g := &s.groups[gi]
				for l, n := range g.nodes {
					if g.dists[l] != 0 && !yield(n) {
						return
					}
				}
			}
		}
	}
}

// verify checks the invariants above: counts, load factors, each slot's
// shard, tag and dist against its node's hash, and the Robin Hood order.
func (x *nodeIndex) verify() error {
	total := 0
	for si := range x.shards {
		s := &x.shards[si]
		slots := uint32(len(s.groups)) * groupSlots
		count := 0
		for i := range slots {
			g := &s.groups[i/groupSlots]
			m, n := g.meta(i), g.nodes[i%groupSlots]
			if m == 0 {
				if n != nil {
					return fmt.Errorf("shard %d slot %d: empty slot holds %q", si, i, n.path())
				}
				continue
			}
			count++
			if n == nil {
				return fmt.Errorf("shard %d slot %d: occupied slot holds no node", si, i)
			}
			h := x.hash(n.path())
			if int(h>>(64-indexShardBits)) != si {
				return fmt.Errorf("shard %d slot %d: %q belongs to shard %d", si, i, n.path(), h>>(64-indexShardBits))
			}
			dist := (i + slots - home(h, slots)) % slots
			if want := metaAt0(h) + uint16(dist); m != want || dist >= uint32(maxProbe) {
				return fmt.Errorf("shard %d slot %d: %q has metadata %#x, want %#x", si, i, n.path(), m, want)
			}
			// Robin Hood order: the previous slot holds a node of
			// dist >= this one's - 1 (a node of dist 0 may follow
			// anything).
			p := (i + slots - 1) % slots
			if pm := s.groups[p/groupSlots].meta(p); dist > 0 && (pm == 0 || int(pm&0xff-1) < int(dist)-1) {
				return fmt.Errorf("shard %d slot %d: %q at dist %d after slot metadata %#x", si, i, n.path(), dist, pm)
			}
		}
		if count != s.count {
			return fmt.Errorf("shard %d: %d nodes counted as %d", si, count, s.count)
		}
		if s.count*8 > int(slots)*7 {
			return fmt.Errorf("shard %d: %d nodes in %d slots", si, s.count, slots)
		}
		total += count
	}
	if total != x.count {
		return fmt.Errorf("%d nodes counted as %d", total, x.count)
	}
	return nil
}
