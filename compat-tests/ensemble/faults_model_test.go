package ensemble

import "testing"

// TestFencedCounter shows that the fenced counter of TestFaultFencedLock
// refuses a paused holder's stale write, and that without the fence the
// lost update is reported by check.FencedCounter.
func TestFencedCounter(t *testing.T) {
	tests := []struct {
		unfenced bool
		wantErr  bool
	}{
		{unfenced: false, wantErr: false},
		{unfenced: true, wantErr: true},
	}
	for _, tt := range tests {
		fc := &fencedCounter{unfenced: tt.unfenced}
		v1 := fc.read(1, 10) // holder 1 reads, then pauses
		v2 := fc.read(2, 20) // holder 2 took the lock over
		if !fc.write(2, 20, v2+1) {
			t.Fatalf("unfenced=%v: the current holder's write was refused", tt.unfenced)
		}
		if got := fc.write(1, 10, v1+1); got != tt.unfenced {
			t.Fatalf("unfenced=%v: stale write accepted = %v", tt.unfenced, got)
		}
		err := fc.check()
		if (err != nil) != tt.wantErr {
			t.Fatalf("unfenced=%v: check = %v; want an error: %v", tt.unfenced, err, tt.wantErr)
		}
		t.Logf("unfenced=%v: %v", tt.unfenced, err)
	}
}
