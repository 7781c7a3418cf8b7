package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOutstandingLimitBlocksReaders checks globalOutstandingLimit: a reader
// waits while the server has limit requests outstanding, and resumes as soon
// as one is answered.
func TestOutstandingLimitBlocksReaders(t *testing.T) {
	var st serverStats
	const limit = 2
	st.outstanding.Store(limit)
	admitted := make(chan bool)
	go func() { admitted <- st.admit(limit, nil) }()
	select {
	case <-admitted:
		t.Fatal("reader admitted at the limit")
	case <-time.After(50 * time.Millisecond):
	}
	st.answered(limit)
	select {
	case ok := <-admitted:
		require.True(t, ok)
	case <-time.After(10 * time.Second):
		t.Fatal("reader not woken after a request was answered")
	}

	// A closed connection stops waiting.
	st.outstanding.Store(limit)
	done := make(chan struct{})
	go func() { admitted <- st.admit(limit, done) }()
	close(done)
	require.False(t, <-admitted)
}
