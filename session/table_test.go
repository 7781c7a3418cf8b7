package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func pw(b byte) []byte {
	p := make([]byte, PasswordLen)
	for i := range p {
		p[i] = b + byte(i)
	}
	return p
}

func TestTable(t *testing.T) {
	tb := NewTable()
	require.Zero(t, tb.Len())
	require.Empty(t, tb.All())

	require.True(t, tb.Add(Session{ID: 30, TimeoutMs: 4000, Password: pw(3)}))
	require.True(t, tb.Add(Session{ID: -5, TimeoutMs: 6000, Password: pw(1)}))
	require.True(t, tb.Add(Session{ID: 10, TimeoutMs: 8000, Password: pw(2)}))
	require.False(t, tb.Add(Session{ID: 10, TimeoutMs: 1, Password: pw(9)}), "duplicate id")
	require.Equal(t, 3, tb.Len())

	s, ok := tb.Get(10)
	require.True(t, ok)
	require.Equal(t, Session{ID: 10, TimeoutMs: 8000, Password: pw(2)}, s, "duplicate Add changed nothing")

	_, ok = tb.Get(11)
	require.False(t, ok)
	require.True(t, tb.Has(10))
	require.False(t, tb.Has(11))

	require.Equal(t, []Session{
		{ID: -5, TimeoutMs: 6000, Password: pw(1)},
		{ID: 10, TimeoutMs: 8000, Password: pw(2)},
		{ID: 30, TimeoutMs: 4000, Password: pw(3)},
	}, tb.All(), "sorted by id")

	require.True(t, tb.SetTimeout(30, 12000))
	require.False(t, tb.SetTimeout(31, 12000))
	s, _ = tb.Get(30)
	require.Equal(t, int32(12000), s.TimeoutMs)
	require.Equal(t, pw(3), s.Password, "SetTimeout keeps the password")

	s, ok = tb.Remove(-5)
	require.True(t, ok)
	require.Equal(t, Session{ID: -5, TimeoutMs: 6000, Password: pw(1)}, s)
	_, ok = tb.Remove(-5)
	require.False(t, ok)
	_, ok = tb.Get(-5)
	require.False(t, ok)
	require.False(t, tb.Has(-5))
	require.Equal(t, 2, tb.Len())
}

func TestTableDoesNotAliasPasswords(t *testing.T) {
	tb := NewTable()
	in := pw(1)
	require.True(t, tb.Add(Session{ID: 1, TimeoutMs: 4000, Password: in}))
	in[0] = 0xEE // e.g. the entry buffer gets reused

	got, _ := tb.Get(1)
	require.Equal(t, pw(1), got.Password)
	got.Password[0] = 0xEE
	tb.All()[0].Password[1] = 0xEE

	got, _ = tb.Get(1)
	require.Equal(t, pw(1), got.Password)
}
