package main

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestChart(t *testing.T) {
	tests := []struct {
		name  string
		bars  []bar
		fills []string // of the bars, in order
	}{
		{"met, missed, no target", []bar{{"create", 1.6, 1.5}, {"setData", 0.6, 1.5}, {"mixed", 1.2, 0}},
			[]string{"#27ae60", "#c0392b", "#7f8c8d"}},
		{"a ratio past the default scale", []bar{{"getData <&>", 3.3, 1.4}}, []string{"#27ae60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := chart("title", tt.bars)
			d := xml.NewDecoder(strings.NewReader(svg))
			var fills []string
			for {
				tok, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("not XML: %v\n%s", err, svg)
					}
					break
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
					for _, a := range se.Attr {
						if a.Name.Local == "fill" && a.Value != "white" {
							fills = append(fills, a.Value)
						}
					}
				}
			}
			if strings.Join(fills, ",") != strings.Join(tt.fills, ",") {
				t.Fatalf("bar fills %v, want %v", fills, tt.fills)
			}
		})
	}
}

func TestResultPercentiles(t *testing.T) {
	var r result
	for i := 1; i <= 100; i++ {
		r.add(result{ops: 1, dur: 10 * time.Millisecond, lat: []time.Duration{time.Duration(101-i) * time.Millisecond}})
	}
	if got := r.pct(50); got != 50*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := r.pct(99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := r.rate(); got != 100 {
		t.Errorf("rate = %v ops/s, want 100", got)
	}
}
