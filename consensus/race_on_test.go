//go:build race

package consensus

// snapJobBytes bounds TestSnapshotJobAllocationDoesNotScaleWithPayload (a
// 64 MB payload) under -race (measured: 1.0 MiB at 8 MB and at 64 MB).
const snapJobBytes = 8 << 20
