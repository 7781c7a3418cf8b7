package session

import (
	"crypto/subtle"
	"fmt"
	"io"
)

// PasswordLen is the length of a session password. ZooKeeper clients send
// and expect exactly 16 bytes.
const PasswordLen = 16

// NewPassword returns PasswordLen random bytes read from r
// (crypto/rand.Reader in production, a fixed stream in tests).
//
// The password travels inside the replicated createSession entry, so every
// member of the ensemble learns it from the log: no shared secret or
// deterministic derivation is needed for a client to reconnect elsewhere.
func NewPassword(r io.Reader) ([]byte, error) {
	p := make([]byte, PasswordLen)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("session: read password: %w", err)
	}
	return p, nil
}

// VerifyPassword reports whether passwd equals the session's password. The
// comparison runs in constant time for equal lengths. A session without a
// password matches nothing.
func VerifyPassword(s Session, passwd []byte) bool {
	if len(s.Password) == 0 {
		return false
	}
	return subtle.ConstantTimeCompare(s.Password, passwd) == 1
}
