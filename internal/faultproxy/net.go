package faultproxy

import (
	"errors"
	"sync"
	"time"
)

// Link names the proxies member From dials to reach member To.
type Link struct{ From, To int }

// Net is the proxies between the members of a cluster, by directed link.
// Every connection through the proxies of Link{a, b} is dialled by a, so
// the bytes a sends to b flow Up on them and b's answers Down; the bytes b
// sends to a also flow Up on the proxies of Link{b, a}.
type Net struct {
	mu    sync.Mutex
	links map[Link][]*Proxy
}

// NewNet returns an empty Net.
func NewNet() *Net { return &Net{links: map[Link][]*Proxy{}} }

// Add starts a proxy that from dials to reach target (one of to's
// listening addresses) and returns the address from must dial.
func (n *Net) Add(from, to int, target string) (string, error) {
	p, err := Listen(target)
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	l := Link{from, to}
	n.links[l] = append(n.links[l], p)
	n.mu.Unlock()
	return p.Addr(), nil
}

// each calls f on every proxy of the links that match.
func (n *Net) each(match func(Link) bool, f func(*Proxy, Link)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for l, ps := range n.links {
		if match(l) {
			for _, p := range ps {
				f(p, l)
			}
		}
	}
}

// Cut blocks (on) or restores (off) every byte from member from to member
// to: Up on from's proxies to to, Down on to's proxies to from. The other
// direction is untouched: a one-way partition.
func (n *Net) Cut(from, to int, on bool) {
	n.each(func(l Link) bool { return l == Link{from, to} || l == Link{to, from} }, func(p *Proxy, l Link) {
		if l.From == from {
			p.Block(Up, on)
		} else {
			p.Block(Down, on)
		}
	})
}

// Isolate cuts every link of member id, both ways.
func (n *Net) Isolate(id int) {
	n.each(func(l Link) bool { return l.From == id || l.To == id }, func(p *Proxy, _ Link) {
		p.Block(Up, true)
		p.Block(Down, true)
	})
}

// Delay holds every byte from member from to member to for d.
func (n *Net) Delay(from, to int, d time.Duration) {
	n.each(func(l Link) bool { return l == Link{from, to} || l == Link{to, from} }, func(p *Proxy, l Link) {
		if l.From == from {
			p.SetDelay(Up, d)
		} else {
			p.SetDelay(Down, d)
		}
	})
}

// Heal unblocks and undelays every link.
func (n *Net) Heal() {
	n.each(func(Link) bool { return true }, func(p *Proxy, _ Link) {
		for _, d := range []Direction{Up, Down} {
			p.Block(d, false)
			p.SetDelay(d, 0)
		}
	})
}

// Reset closes every connection through the links of member id.
func (n *Net) Reset(id int) {
	n.each(func(l Link) bool { return l.From == id || l.To == id }, func(p *Proxy, _ Link) { p.Reset() })
}

// Close closes every proxy.
func (n *Net) Close() error {
	n.mu.Lock()
	var all []*Proxy
	for _, ps := range n.links {
		all = append(all, ps...)
	}
	n.links = map[Link][]*Proxy{}
	n.mu.Unlock()
	var errs []error
	for _, p := range all {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
