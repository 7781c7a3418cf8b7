package znode

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidatePath(t *testing.T) {
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/b/c", true},
		{"/a.b", true},
		{"/.a", true},
		{"/a.", true},
		{"/...", true},
		{"/a/..b", true},
		{"/zookeeper", true},
		{"/ünïcödé", true},
		{"/a b", true},
		{"/a\u00a0", true},
		{"/\uf900", true},
		{"/\uffef", true},
		{"", false},
		{"a", false},
		{"a/b", false},
		{"/a/", false},
		{"//", false},
		{"/a//b", false},
		{"/.", false},
		{"/..", false},
		{"/a/.", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a/..", false},
		{"/a\x00b", false},
		{"/a\x01", false},
		{"/a\x1f", false},
		{"/a\x7f", false},
		{"/a\u0085", false},
		{"/a\u009f", false},
		{"/\ud7ff", true},
		{"/\ue000", false},
		{"/\uf8ff", false},
		{"/\ufff0", false},
		{"/\ufffd", false},
		{"/\uffff", false},
		{"/😀", false},      // a surrogate pair in Java
		{"/a\xffb", false}, // invalid UTF-8 decodes to U+FFFD
	} {
		err := ValidatePath(tt.path)
		if tt.ok {
			require.NoError(t, err, "ValidatePath(%q)", tt.path)
		} else {
			require.Error(t, err, "ValidatePath(%q)", tt.path)
			require.True(t, errors.Is(err, ErrInvalidPath), "ValidatePath(%q) = %v; want ErrInvalidPath", tt.path, err)
		}
	}
}
