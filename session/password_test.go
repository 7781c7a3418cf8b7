package session

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewPassword(t *testing.T) {
	src := bytes.NewReader([]byte("0123456789abcdefXYZ"))
	p, err := NewPassword(src)
	require.NoError(t, err)
	require.Equal(t, []byte("0123456789abcdef"), p)

	p1, err := NewPassword(rand.Reader)
	require.NoError(t, err)
	require.Len(t, p1, PasswordLen)

	_, err = NewPassword(bytes.NewReader([]byte("short")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestVerifyPassword(t *testing.T) {
	pw := []byte("0123456789abcdef")
	s := Session{ID: 1, TimeoutMs: 4000, Password: pw}
	tests := []struct {
		name   string
		passwd []byte
		want   bool
	}{
		{"equal", []byte("0123456789abcdef"), true},
		{"one byte differs", []byte("0123456789abcdeF"), false},
		{"zero password of a new-session request", make([]byte, 16), false},
		{"shorter", pw[:15], false},
		{"longer", append(bytes.Clone(pw), 0), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, VerifyPassword(s, tt.passwd), tt.name)
	}
	require.False(t, VerifyPassword(Session{ID: 1}, nil), "a session without a password matches nothing")
	require.False(t, VerifyPassword(Session{ID: 1}, []byte{}), "a session without a password matches nothing")
}
