package consensus

import "errors"

// Sentinel errors returned by Node methods. Callers compare with errors.Is.
var (
	// ErrStopped is returned by Propose, ReadIndex and WaitApplied once the
	// node has stopped, whether by Stop or because of a fatal storage error
	// (Err then returns the cause).
	ErrStopped = errors.New("consensus: node stopped")
	// ErrNoLeader is returned by Propose and ReadIndex when this member does
	// not currently know a leader (an election is under way). Retrying later
	// is safe: nothing was handed to raft.
	ErrNoLeader = errors.New("consensus: no leader")
	// ErrEmptyProposal is returned by Propose for empty data: raft uses empty
	// normal entries internally and the state machine never sees them.
	ErrEmptyProposal = errors.New("consensus: empty proposal")
	// ErrCorruptSnapshot marks a snapshot file whose header or checksum does
	// not verify. Start refuses to continue with such a file.
	ErrCorruptSnapshot = errors.New("consensus: corrupt snapshot")
	// ErrCorruptLog marks a raft log that cannot be read completely: a bad
	// record that is not a torn tail of the WAL's last segment, missing
	// segments, entries that are not contiguous or disagree with the
	// snapshot.
	ErrCorruptLog = errors.New("consensus: corrupt raft log")
)
