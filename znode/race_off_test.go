//go:build !race

package znode

// readSnapshotAllocsPerNode bounds TestReadSnapshotAllocations (see
// race_on_test.go for the bound under -race).
const readSnapshotAllocsPerNode = 3.5
