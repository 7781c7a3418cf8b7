package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// bar is one workload's ratio and its target (0: none).
type bar struct {
	name   string
	ratio  float64
	target float64
}

// chart draws the ratios as horizontal bars on a linear scale from 0, with
// a line at 1.0x (parity) and a tick per bar at its target; bars at or above
// their target are green, the others red.
func chart(title string, bars []bar) string {
	const (
		left, right, top, rowH, barH = 150, 40, 50, 34, 20
		plotW                        = 460
	)
	maxX := 2.0
	for _, b := range bars {
		maxX = math.Max(maxX, math.Ceil(b.ratio*2)/2)
	}
	x := func(v float64) float64 { return left + v/maxX*plotW }
	width := left + plotW + right
	height := top + rowH*len(bars) + 40
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="13">`+"\n", width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&s, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", 10, html.EscapeString(title))
	bottom := top + rowH*len(bars)
	for v := 0.0; v <= maxX+1e-9; v += 0.5 {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top-6, x(v), bottom)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.1fx</text>`+"\n", x(v), bottom+18, v)
	}
	for i, b := range bars {
		y := top + rowH*i
		color := "#c0392b"
		if b.target > 0 && b.ratio >= b.target {
			color = "#27ae60"
		} else if b.target == 0 {
			color = "#7f8c8d"
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-5, html.EscapeString(b.name))
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, x(b.ratio)-left, barH, color)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d">%.2fx</text>`+"\n", x(b.ratio)+4, y+barH-5, b.ratio)
		if b.target > 0 {
			fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="2"/>`+"\n",
				x(b.target), y-3, x(b.target), y+barH+3)
		}
	}
	fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4 3"/>`+"\n", x(1), top-6, x(1), bottom)
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="11">dashed: parity (1.0x); black tick: issue 11 target; green: target met</text>`+"\n", 10, bottom+34)
	s.WriteString("</svg>\n")
	return s.String()
}
