// Package backup checks zkraft's backups end to end with real processes
// and go-zookeeper: a zkraft with ACL'd nodes that only the super user may
// read is saved with `zkraft snapshot save` over its AdminServer (refused
// without credentials once / needs them), inspected, restored with
// `zkraft snapshot restore` into a new data directory, and a second zkraft
// started there must hold the same tree: every node's data, ACL and stat.
// New writes there get zxids above the backup's. A 3-member ensemble's
// backup restored into 3 voters and an observer on other ports publishes
// the new members in /zookeeper/config, keeps the observer one and never
// dials the source's ports. `zkraft version` is checked on the same binary.
//
// Run with `go test ./compat-tests/backup/ -count=1 -v`.
package backup
