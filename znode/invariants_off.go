//go:build !invariants

package znode

// checkEveryWrite makes Apply and DeleteEphemerals run Check after every
// write (build with -tags invariants).
const checkEveryWrite = false
