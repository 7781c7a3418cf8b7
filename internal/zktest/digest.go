package zktest

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"
)

// DigestACLHash returns the id that ZooKeeper's digest scheme derives from
// "user:password": "user:" + base64(sha1("user:password")). It is the id of
// a digest ACL entry and the value of a super digest.
func DigestACLHash(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}
