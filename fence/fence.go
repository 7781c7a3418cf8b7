package fence

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// TokenEnv is the environment variable `zkraft lock` sets for the command it
// runs: the token (czxid of the lock node) in decimal.
const TokenEnv = "ZKRAFT_LOCK_TOKEN"

// ErrStaleToken is what errors.Is matches for a refused token.
var ErrStaleToken = errors.New("fence: stale token")

// StaleTokenError is a refusal: Token is lower than Highest, the highest
// token already accepted for Resource.
type StaleTokenError struct {
	Resource string
	Token    int64
	Highest  int64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fence: stale token %d for %q: %d already accepted", e.Token, e.Resource, e.Highest)
}

// Is makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// ParseToken parses a token: a czxid in decimal, at least 1.
func ParseToken(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fence: parse token %q: %w", s, err)
	}
	if v < 1 {
		return 0, fmt.Errorf("fence: parse token %q: must be a positive zxid", s)
	}
	return v, nil
}

// TokenFromEnv reads the token `zkraft lock` exported in ZKRAFT_LOCK_TOKEN.
func TokenFromEnv() (int64, error) {
	s, ok := os.LookupEnv(TokenEnv)
	if !ok {
		return 0, fmt.Errorf("fence: %s is not set (run under `zkraft lock`)", TokenEnv)
	}
	return ParseToken(s)
}

// CheckedWrite returns the operations of the ZooKeeper-native fenced write
// for go-zookeeper's Conn.Multi: a check that lockNode (the holder's own
// lock node) still exists at lockVersion (0 for a lock node nobody wrote),
// then ops (for example a *zk.SetDataRequest). The multi applies all or
// nothing: after the holder lost its lock (its session expired, so its
// ephemeral lock node was deleted) the check fails with zk.ErrNoNode and
// none of ops is applied.
func CheckedWrite(lockNode string, lockVersion int32, ops ...any) []any {
	return append([]any{&zk.CheckVersionRequest{Path: lockNode, Version: lockVersion}}, ops...)
}
