package znode

import (
	"fmt"
	"iter"
	"unsafe"
)

// childSet is the set of a node's children, by node: an open-addressing
// table with linear probing, keyed by the child's address. It replaces a
// map[string]struct{} of the children's names, whose 16-byte keys pointed
// into the children's paths (and would keep an old allocation of a child's
// path and data alive once setData replaced it, meta.pd): a slot here is 8
// bytes, about 10 bytes a child at 1 M znodes under 10 parents against
// the map's 19.
//
// Order: a node's address varies between runs and members, so slot order
// does too; nothing observable may depend on it (GetChildren sorts; the
// other callers count, sum, or promise no order). Go's heap objects do
// not move, so an address is a stable key while the node is reachable.
//
// Invariants, after every call:
//   - len(slots) is a power of two >= minChildSlots, and count*8 <=
//     len(slots)*7: a probe always meets an empty slot.
//   - Every child is in the run of non-empty slots that starts at its home
//     slot (hash of its address), with no empty slot between its home and
//     it (deletion shifts back, so there are no tombstones).
//   - A node appears at most once.
type childSet struct {
	slots []*node
	count int
}

const minChildSlots = 2

// len returns the number of children; 0 for a nil set.
func (c *childSet) len() int {
	if c == nil {
		return 0
	}
	return c.count
}

// childHome returns n's home slot in a table of mask+1 slots
// (Fibonacci hashing of the address: nodes are allocated at regular
// strides, which the multiplication spreads).
func childHome(n *node, mask uint64) uint64 {
	h := uint64(uintptr(unsafe.Pointer(n))) * 0x9e3779b97f4a7c15
	return (h >> 32) & mask
}

// add inserts n, which must not be in the set.
func (c *childSet) add(n *node) {
	if (c.count+1)*8 > len(c.slots)*7 {
		c.resize(max(minChildSlots, 2*len(c.slots)))
	}
	c.place(n)
	c.count++
}

// place puts n in the first empty slot from its home.
func (c *childSet) place(n *node) {
	mask := uint64(len(c.slots) - 1)
	for i := childHome(n, mask); ; i = (i + 1) & mask {
		if c.slots[i] == nil {
			c.slots[i] = n
			return
		}
	}
}

// resize rehashes the set into slots slots (a power of two).
func (c *childSet) resize(slots int) {
	old := c.slots
	c.slots = make([]*node, slots)
	for _, n := range old {
		if n != nil {
			c.place(n)
		}
	}
}

// find returns n's slot, or -1.
func (c *childSet) find(n *node) int {
	if c.len() == 0 {
		return -1
	}
	mask := uint64(len(c.slots) - 1)
	for i := childHome(n, mask); ; i = (i + 1) & mask {
		switch c.slots[i] {
		case n:
			return int(i)
		case nil:
			return -1
		}
	}
}

// has reports whether n is in the set.
func (c *childSet) has(n *node) bool { return c.find(n) >= 0 }

// remove deletes n, if present, by backward shift: each following node
// that may move to the freed slot (the freed slot lies between its home
// and its slot, cyclically) moves there, until an empty slot. It shrinks
// the table to half when it is at most 1/8 full.
func (c *childSet) remove(n *node) {
	i := c.find(n)
	if i < 0 {
		return
	}
	mask := uint64(len(c.slots) - 1)
	hole := uint64(i)
	for j := (hole + 1) & mask; c.slots[j] != nil; j = (j + 1) & mask {
		// m may fill the hole iff its home is not in (hole, j].
		if home := childHome(c.slots[j], mask); (j-home)&mask >= (j-hole)&mask {
			c.slots[hole] = c.slots[j]
			hole = j
		}
	}
	c.slots[hole] = nil
	c.count--
	if len(c.slots) > minChildSlots && c.count*8 <= len(c.slots) {
		c.resize(len(c.slots) / 2)
	}
}

// all yields every child once, in slot order (see Order above).
func (c *childSet) all() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		if c == nil {
			return
		}
		for _, n := range c.slots {
			if n != nil && !yield(n) {
				return
			}
		}
	}
}

// verify checks the invariants above.
func (c *childSet) verify() error {
	if c == nil {
		return nil
	}
	slots := len(c.slots)
	if slots < minChildSlots || slots&(slots-1) != 0 {
		return fmt.Errorf("child set of %d slots", slots)
	}
	if c.count*8 > slots*7 {
		return fmt.Errorf("child set: %d children in %d slots", c.count, slots)
	}
	mask := uint64(slots - 1)
	count := 0
	seen := make(map[*node]bool, c.count)
	for i, n := range c.slots {
		if n == nil {
			continue
		}
		count++
		if seen[n] {
			return fmt.Errorf("child set: %q twice", n.path())
		}
		seen[n] = true
		for j := childHome(n, mask); j != uint64(i); j = (j + 1) & mask {
			if c.slots[j] == nil {
				return fmt.Errorf("child set: %q in slot %d after an empty slot %d", n.path(), i, j)
			}
		}
	}
	if count != c.count {
		return fmt.Errorf("child set: %d children counted as %d", count, c.count)
	}
	return nil
}
