package javaclient_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// suiteTimeout bounds one run of the suite, javac included.
const suiteTimeout = 120 * time.Second

// superUser is the digest user the servers treat as super; the suite gets
// it through $ZKCOMPAT_SUPER_USER.
const superUser = "super:s3cret"

// TestJavaClientSuite runs run.sh (javac + the suite) against each target.
func TestJavaClientSuite(t *testing.T) {
	script, err := filepath.Abs("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			t.Parallel()
			s := zktest.Start(t, target, zktest.Options{
				ContainerCheckIntervalMs: 500,
				SuperDigest:              zktest.DigestACLHash(superUser),
			})
			zktest.RunSuite(t, suiteTimeout, []string{"ZKCOMPAT_SUPER_USER=" + superUser}, script, s.Addr)
		})
	}
}
