package mutation

import "testing"

// TestLookup: a looked-up switch follows Set and Reset, and an unknown
// name panics.
func TestLookup(t *testing.T) {
	defer Reset()
	for _, n := range All() {
		f := Lookup(n)
		if f.On() {
			t.Fatalf("%s on before Set", n)
		}
		if err := Set(n, true); err != nil {
			t.Fatal(err)
		}
		if !f.On() || !Enabled(n) {
			t.Fatalf("%s: On() = %v, Enabled = %v after Set(true)", n, f.On(), Enabled(n))
		}
		Reset()
		if f.On() {
			t.Fatalf("%s on after Reset", n)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Lookup of an unknown name did not panic")
		}
	}()
	Lookup("no-such-mutation")
}
