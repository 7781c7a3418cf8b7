package ensemble

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestRegModel shows that the register checker of the fault tests rejects
// the histories it is there to catch (no server involved).
func TestRegModel(t *testing.T) {
	set := func(client int, val string, ver int32, call, ret int64, out regOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{Kind: regSet, Val: val, Ver: ver}, Call: call, Output: out, Return: ret}
	}
	read := func(client int, call, ret int64, val string, ver int32) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{Kind: regRead}, Call: call, Output: regOutput{Val: val, Ver: ver}, Return: ret}
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"sequential set then read", []porcupine.Operation{
			set(0, "a", 0, 0, 10, regOutput{Ver: 1}),
			read(1, 20, 30, "a", 1),
		}, porcupine.Ok},
		{"stale read after an acknowledged set (a deposed leader's sync)", []porcupine.Operation{
			set(0, "a", 0, 0, 10, regOutput{Ver: 1}),
			read(1, 20, 30, "init", 0),
		}, porcupine.Illegal},
		{"concurrent read may see either", []porcupine.Operation{
			set(0, "a", 0, 0, 30, regOutput{Ver: 1}),
			read(1, 10, 20, "init", 0),
		}, porcupine.Ok},
		{"lost acknowledged set", []porcupine.Operation{
			set(0, "a", -1, 0, 10, regOutput{Ver: 1}),
			set(1, "b", -1, 20, 30, regOutput{Ver: 1}),
		}, porcupine.Illegal},
		{"two conditional sets on one version both acknowledged", []porcupine.Operation{
			set(0, "a", 0, 0, 10, regOutput{Ver: 1}),
			set(1, "b", 0, 0, 10, regOutput{Ver: 1}),
		}, porcupine.Illegal},
		{"bad version when the version matched", []porcupine.Operation{
			set(0, "a", 0, 0, 10, regOutput{BadVersion: true}),
		}, porcupine.Illegal},
		{"unknown set may have happened", []porcupine.Operation{
			set(0, "a", 0, 0, math.MaxInt64, regOutput{Unknown: true}),
			read(1, 20, 30, "a", 1),
		}, porcupine.Ok},
		{"unknown set may not have happened", []porcupine.Operation{
			set(0, "a", 0, 0, math.MaxInt64, regOutput{Unknown: true}),
			read(1, 20, 30, "init", 0),
		}, porcupine.Ok},
		{"unknown set seen, then unseen", []porcupine.Operation{
			set(0, "a", 0, 0, math.MaxInt64, regOutput{Unknown: true}),
			read(1, 20, 30, "a", 1),
			read(1, 40, 50, "init", 0),
		}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(regModel, tt.ops, 0); got != tt.want {
				t.Fatalf("check = %v; want %v", got, tt.want)
			}
		})
	}
}

// TestFencedCounter shows that the fenced counter refuses a paused holder's
// stale write, and that without that refusal the lost update is reported.
func TestFencedCounter(t *testing.T) {
	var fc fencedCounter
	v1, ok := fc.read(1, 10)
	if !ok {
		t.Fatal("first holder's read refused")
	}
	// Holder 1 pauses; holder 2 takes the lock with a higher token.
	v2, ok := fc.read(2, 20)
	if !ok || !fc.write(2, 20, v2+1) {
		t.Fatal("second holder refused")
	}
	if fc.write(1, 10, v1+1) {
		t.Fatal("stale holder's write accepted")
	}
	if fc.value != 1 || fc.accepted != 1 || len(fc.violations) != 0 {
		t.Fatalf("counter value %d, %d accepted, violations %v", fc.value, fc.accepted, fc.violations)
	}
	// Unfenced, the stale write would overwrite 1 with 1: write reports it.
	fc.maxToken = 0
	fc.owner = 10
	fc.write(1, 10, v1+1)
	if len(fc.violations) != 1 {
		t.Fatalf("a lost increment was not reported: %v", fc.violations)
	}
}
