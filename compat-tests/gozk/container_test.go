package gozk

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkraft/zkraft/internal/zktest"
)

// TestContainerAndTTLRemoval checks the background removal of containers
// and TTL nodes on a dedicated server with a 200 ms check interval: a
// container goes once its last child is deleted, a never-used container and
// a TTL node with a child stay, an expired childless TTL node goes, and the
// removals fire the delete watches.
func TestContainerAndTTLRemoval(t *testing.T) {
	eachTarget(t, func(t *testing.T, target zktest.Target) {
		s := zktest.Start(t, target, zktest.Options{ContainerCheckIntervalMs: 200})
		c, _ := s.Connect(t)

		_, err := c.CreateContainer("/never-used", nil, zk.FlagContainer, openACL)
		noErr(t, err, "create never-used container")
		_, err = c.CreateTTL("/ttl-parent", nil, zk.FlagTTL, openACL, 300*time.Millisecond)
		noErr(t, err, "create TTL parent")
		mustCreate(t, c, "/ttl-parent/k", nil, zk.FlagPersistent)
		_, err = c.CreateContainer("/used", nil, zk.FlagContainer, openACL)
		noErr(t, err, "create container")
		mustCreate(t, c, "/used/k", nil, zk.FlagPersistent)
		_, err = c.CreateTTL("/ttl", []byte("x"), zk.FlagTTL, openACL, 300*time.Millisecond)
		noErr(t, err, "create TTL node")

		_, _, ttlCh, err := c.ExistsW("/ttl")
		noErr(t, err, "existsW ttl")
		wantEvent(t, ttlCh, zk.EventNodeDeleted, "/ttl")

		_, _, usedCh, err := c.GetW("/used")
		noErr(t, err, "getW used")
		noErr(t, c.Delete("/used/k", -1), "delete the container's child")
		wantEvent(t, usedCh, zk.EventNodeDeleted, "/used")

		// The passes that removed them also saw these two, which stay.
		for _, path := range []string{"/never-used", "/ttl-parent"} {
			ok, _, err := c.Exists(path)
			noErr(t, err, "exists %s", path)
			isTrue(t, ok, "%s still exists", path)
		}
	})
}
