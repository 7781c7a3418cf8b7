package session

import (
	"bytes"
	"slices"
)

// Session is one replicated session record.
type Session struct {
	ID        int64  // session id, see IDGenerator
	TimeoutMs int32  // negotiated timeout
	Password  []byte // PasswordLen bytes, see NewPassword
}

func (s Session) clone() Session {
	s.Password = bytes.Clone(s.Password)
	return s
}

// Table is the replicated set of live sessions. It is part of the state
// machine: it changes only when committed log entries (createSession,
// closeSession, reattach) are applied, in log order, on every member, so
// every member holds the same Table at the same applied index.
//
// Table copies passwords in and out, so callers can neither alias an entry
// buffer into it nor change a stored password through a returned Session.
//
// Table is not safe for concurrent use; the caller serializes access (the
// apply loop writes, readers take the same lock).
type Table struct {
	sessions map[int64]Session
}

// NewTable returns an empty Table.
func NewTable() *Table {
	return &Table{sessions: make(map[int64]Session)}
}

// Add inserts s. It returns false, and changes nothing, if a session with the
// same id already exists.
func (t *Table) Add(s Session) bool {
	if _, ok := t.sessions[s.ID]; ok {
		return false
	}
	t.sessions[s.ID] = s.clone()
	return true
}

// Remove deletes the session id and returns it, or returns false if it was
// not there.
func (t *Table) Remove(id int64) (Session, bool) {
	s, ok := t.sessions[id]
	if ok {
		delete(t.sessions, id)
	}
	return s, ok
}

// Get returns the session id, or false if it is not live.
func (t *Table) Get(id int64) (Session, bool) {
	s, ok := t.sessions[id]
	if !ok {
		return Session{}, false
	}
	return s.clone(), true
}

// Has reports whether session id is live (Get without the copy of its
// password).
func (t *Table) Has(id int64) bool {
	_, ok := t.sessions[id]
	return ok
}

// SetTimeout changes the timeout of session id (a reattach negotiated a new
// one). It returns false if the session is not live.
func (t *Table) SetTimeout(id int64, timeoutMs int32) bool {
	s, ok := t.sessions[id]
	if !ok {
		return false
	}
	s.TimeoutMs = timeoutMs
	t.sessions[id] = s
	return true
}

// Len returns the number of live sessions.
func (t *Table) Len() int { return len(t.sessions) }

// All returns every live session, sorted by id.
func (t *Table) All() []Session {
	all := make([]Session, 0, len(t.sessions))
	for _, s := range t.sessions {
		all = append(all, s.clone())
	}
	slices.SortFunc(all, func(a, b Session) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return all
}
