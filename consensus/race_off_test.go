//go:build !race

package consensus

// snapJobBytes bounds TestSnapshotJobAllocationDoesNotScaleWithPayload (a
// 64 MB payload): the file writer's 1 MiB buffer, bbolt's transaction and
// the rest of Run (measured: 1.0 MiB at 8 MB and at 64 MB).
const snapJobBytes = 8 << 20
