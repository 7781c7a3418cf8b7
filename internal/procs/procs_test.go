package procs

import "testing"

func TestChoose(t *testing.T) {
	tests := []struct {
		name     string
		env      string
		defaults int
		want     int
		set      bool
	}{
		{"unset, 2 CPUs", "", 2, 2 + Spare, true},
		{"unset, 1 CPU", "", 1, 1 + Spare, true},
		{"unset, 64 CPUs", "", 64, 64 + Spare, true},
		{"user's choice wins", "3", 3, 3, false},
		{"user's choice of 1 wins", "1", 1, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set := Choose(tt.env, tt.defaults)
			if got != tt.want || set != tt.set {
				t.Fatalf("Choose(%q, %d) = %d, %v; want %d, %v", tt.env, tt.defaults, got, set, tt.want, tt.set)
			}
		})
	}
}
