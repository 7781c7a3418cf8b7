package znode

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath is wrapped by every error ValidatePath returns.
var ErrInvalidPath = errors.New("znode: invalid path")

// Built-in paths (ZooKeeper's ZooDefs / Quotas / ZooDefs.CONFIG_NODE).
const (
	rootPath   = "/"
	procPath   = "/zookeeper"
	quotaPath  = "/zookeeper/quota"
	configPath = "/zookeeper/config"
)

// isSpecialPath reports whether path is one of the built-in nodes that can
// never be deleted (DataTree.isSpecialPath).
func isSpecialPath(path string) bool {
	switch path {
	case rootPath, procPath, quotaPath, configPath:
		return true
	}
	return false
}

// ValidatePath checks path against ZooKeeper's PathUtils.validatePath rules:
// it starts with '/', only the root ends with '/', it has no empty, "." or
// ".." components, and no NUL, U+0001-U+001F, U+007F-U+009F, U+D800-U+F8FF,
// U+FFF0-U+FFFF characters. As Java sees strings as UTF-16, characters
// outside the BMP (surrogate pairs) and invalid UTF-8 (which Java decodes
// to U+FFFD) are rejected too. The error wraps ErrInvalidPath.
func ValidatePath(path string) error {
	if path == "" {
		return fmt.Errorf("%w: path length must be > 0", ErrInvalidPath)
	}
	if path[0] != '/' {
		return fmt.Errorf("%w %q: path must start with / character", ErrInvalidPath, path)
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("%w %q: path must not end with / character", ErrInvalidPath, path)
	}
	prev, prev2 := rune('/'), rune(0)
	for i, c := range path[1:] {
		i++ // index into path
		size := utf8.RuneLen(c)
		if c == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(path[i:])
		}
		next := byte('/')
		end := i+size == len(path)
		if !end {
			next = path[i+size]
		}
		var reason string
		switch {
		case c == 0:
			reason = "null character not allowed"
		case c == '/' && prev == '/':
			reason = "empty node name specified"
		case c == '.' && prev == '.':
			if prev2 == '/' && (end || next == '/') {
				reason = "relative paths not allowed"
			}
		case c == '.':
			if prev == '/' && (end || next == '/') {
				reason = "relative paths not allowed"
			}
		case c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			// c >= 0xfff0 covers U+FFF0-U+FFFF, U+FFFD from invalid UTF-8,
			// and every non-BMP character (a surrogate pair in Java).
			reason = "invalid character"
		}
		if reason != "" {
			return fmt.Errorf("%w %q: %s @%d", ErrInvalidPath, path, reason, i)
		}
		prev2, prev = prev, c
	}
	return nil
}

// lastSlash returns the index of the last '/' in path, or -1.
func lastSlash(path string) int {
	return strings.LastIndexByte(path, '/')
}

// parentOf returns the parent path of path whose last '/' is at i: the text
// before it, with "" (a child of the root) mapped to "/".
func parentOf(path string, i int) string {
	if i == 0 {
		return rootPath
	}
	return path[:i]
}

// hasNUL reports whether path contains a NUL character.
func hasNUL(path string) bool {
	return strings.IndexByte(path, 0) >= 0
}
