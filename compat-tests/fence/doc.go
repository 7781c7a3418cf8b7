// Package fence checks the fencing guard (package fence) and the
// zkraft-native fenced write against a real zkraft with go-zookeeper
// clients, in the scenario fencing exists for: holder A takes a lock and
// stalls (its client's traffic is blocked by a fault proxy) until its
// session expires; B acquires the lock with a larger token and writes; A
// resumes and its late write must be refused: by the file guard and by the
// znode guard (A's token is lower than B's) and, for a resource kept in
// zkraft, by the multi that checks A's lock node together with the write
// (A's ephemeral lock node is gone).
//
// Run with `go test ./compat-tests/fence/ -count=1 -v`.
package fence
