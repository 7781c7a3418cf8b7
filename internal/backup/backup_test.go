package backup

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func sample(t *testing.T) (Header, []byte, []byte) {
	t.Helper()
	h := Header{Index: 42, Term: 3, Zxid: 40, CreatedMs: 1764000000000, Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	payload := bytes.Repeat([]byte("state!"), 1000)
	var b bytes.Buffer
	require.NoError(t, Write(&b, h, payload))
	h.PayloadLength = uint64(len(payload))
	require.Equal(t, Size(h, len(payload)), int64(b.Len()))
	return h, payload, b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	h, payload, file := sample(t)
	for _, size := range []int64{int64(len(file)), -1} {
		got, gotPayload, err := Read(bytes.NewReader(file), size)
		require.NoError(t, err)
		require.Equal(t, h, got)
		require.Equal(t, payload, gotPayload)
	}
	// An empty member list and an empty payload survive too.
	var b bytes.Buffer
	require.NoError(t, Write(&b, Header{Index: 1, Term: 1}, nil))
	got, p, err := Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	require.Equal(t, Header{Index: 1, Term: 1}, got)
	require.Empty(t, p)
}

func TestCorruptRefused(t *testing.T) {
	_, _, file := sample(t)
	hdrLen := len(file) - 6000 - 32
	flip := func(i int) []byte {
		b := bytes.Clone(file)
		b[i] ^= 0x40
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"cut in the header", file[:20], "truncated header"},
		{"cut in the member list", file[:len(Magic)+4+32+4+8], "truncated header"},
		{"cut in the payload", file[:hdrLen+100], "truncated"},
		{"checksum missing", file[:len(file)-32], "truncated"},
		{"checksum cut", file[:len(file)-1], "truncated"},
		{"trailing bytes", append(bytes.Clone(file), 0), "after the checksum"},
		{"bad magic", flip(0), "not a zkraft backup"},
		{"other version", flip(len(Magic) + 3), "format version"},
		{"payload byte flipped", flip(hdrLen + 10), "sha256 mismatch"},
		{"checksum byte flipped", flip(len(file) - 5), "sha256 mismatch"},
		{"index flipped", flip(len(Magic) + 4 + 7), "sha256 mismatch"},
		{"zxid above index", flip(len(Magic) + 4 + 16), "zxid"},
		{"length grown", flip(hdrLen - 2), "truncated"},
		{"length shrunk", flip(hdrLen - 1), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int64{int64(len(c.data)), -1} {
				_, _, err := Read(bytes.NewReader(c.data), size)
				require.Error(t, err, "size %d", size)
				require.True(t, errors.Is(err, ErrCorrupt), "%v", err)
				if c.want != "" {
					require.Contains(t, err.Error(), c.want, "size %d", size)
				}
			}
		})
	}
}
