import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

/**
 * Node recipes and node types: PersistentNode, PersistentTtlNode, TTL nodes, containers.
 * The container and TTL checks assume the server's container check interval is small
 * (the Go test sets it to 500 ms).
 */
final class NodeChecks {
    /** Bound for container / TTL removal: a few check intervals plus slack. */
    static final long REAP_MS = 8_000;

    private NodeChecks() {
    }

    static void register() {
        CuratorSuite.add("PersistentNode ephemeral recreated after deletion", NodeChecks::persistentNode);
        CuratorSuite.add("PersistentTtlNode kept alive then expires", NodeChecks::persistentTtlNode);
        CuratorSuite.add("TTL node expires", NodeChecks::ttlNode);
        CuratorSuite.add("container parents via creatingParentContainersIfNeeded", NodeChecks::containers);
    }

    static void persistentNode(Ctx ctx) throws Exception {
        String p = ctx.path("pn", "node");
        CuratorFramework owner = ctx.client();
        CuratorFramework other = ctx.client();
        other.create().creatingParentsIfNeeded().forPath(ctx.path("pn"));
        PersistentNode node = ctx.onClose(new PersistentNode(owner, CreateMode.EPHEMERAL, false, p, Ctx.bytes("d1")));
        node.start();
        Ctx.check(node.waitForInitialCreate(5, TimeUnit.SECONDS), "PersistentNode not created within 5 s");
        Ctx.equal(p, node.getActualPath(), "actual path");
        long sid = Ctx.sessionId(owner);
        Stat first = Ctx.stat(other, p);
        Ctx.equal(sid, first.getEphemeralOwner(), "ephemeralOwner");
        Ctx.equal("d1", Ctx.str(other.getData().forPath(p)), "data");

        other.delete().forPath(p);
        Ctx.waitForZk(5_000, "the node to be recreated", () -> {
            Stat s = other.checkExists().forPath(p);
            return s != null && s.getCzxid() > first.getCzxid();
        });
        Stat again = Ctx.stat(other, p);
        Ctx.equal(sid, again.getEphemeralOwner(), "ephemeralOwner of the recreated node");
        Ctx.equal("d1", Ctx.str(other.getData().forPath(p)), "data of the recreated node");

        node.setData(Ctx.bytes("d2"));
        Ctx.waitForZk(5_000, "setData through the PersistentNode", () -> "d2".equals(Ctx.str(other.getData().forPath(p))));
        other.delete().forPath(p);
        Ctx.waitForZk(5_000, "the node to be recreated with the new data",
                () -> other.checkExists().forPath(p) != null && "d2".equals(Ctx.str(other.getData().forPath(p))));

        node.close();
        Ctx.waitForZk(5_000, "the node to be deleted on close", () -> other.checkExists().forPath(p) == null);
    }

    static void persistentTtlNode(Ctx ctx) throws Exception {
        String p = ctx.path("pttl", "node");
        final long ttl = 1_500;
        CuratorFramework owner = ctx.client();
        CuratorFramework other = ctx.client();
        other.create().creatingParentsIfNeeded().forPath(ctx.path("pttl"));
        PersistentTtlNode node = ctx.onClose(new PersistentTtlNode(owner, p, ttl, Ctx.bytes("t")));
        node.start();
        Ctx.check(node.waitForInitialCreate(5, TimeUnit.SECONDS), "PersistentTtlNode not created within 5 s");
        String touch = p + "/" + PersistentTtlNode.DEFAULT_CHILD_NODE_NAME;
        Ctx.waitForZk(5_000, "the touch child " + touch, () -> other.checkExists().forPath(touch) != null);
        Ctx.equal("t", Ctx.str(other.getData().forPath(p)), "data of the TTL node");
        Ctx.equal(0L, Ctx.stat(other, p).getEphemeralOwner(), "ephemeralOwner of the container (reported as 0)");
        Ctx.equal(0L, Ctx.stat(other, touch).getEphemeralOwner(), "ephemeralOwner of the TTL child (reported as 0)");
        // Alive for well over the TTL while the recipe keeps touching it.
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ttl * 2);
        while (System.nanoTime() < until) {
            Ctx.check(other.checkExists().forPath(p) != null, "TTL node vanished while kept alive");
            Thread.sleep(100);
        }
        Ctx.check(other.checkExists().forPath(touch) != null, "touch child vanished while kept alive");
        node.close();
        Ctx.waitForZk(ttl + REAP_MS, "the TTL node to go away after close",
                () -> other.checkExists().forPath(p) == null);
    }

    static void ttlNode(Ctx ctx) throws Exception {
        String p = ctx.path("ttl", "node");
        CuratorFramework c = ctx.client();
        c.create().creatingParentsIfNeeded().forPath(ctx.path("ttl"));
        Stat st = new Stat();
        c.create().withTtl(1_000).storingStatIn(st).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath(p, Ctx.bytes("x"));
        Ctx.equal(0L, st.getEphemeralOwner(), "ephemeralOwner of a TTL node (reported as 0)");
        Ctx.check(Ctx.exists(c, p), "TTL node missing right after create");
        String seq = c.create().withTtl(1_000).withMode(CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL)
                .forPath(ctx.path("ttl", "seq-"));
        Ctx.check(seq.matches(".*/seq-\\d{10}"), "sequential TTL name %s", seq);
        // A TTL node with a child is not removed; the plain one is.
        c.create().forPath(seq + "/child");
        Ctx.waitForZk(1_000 + REAP_MS, "the TTL node to expire", () -> c.checkExists().forPath(p) == null);
        Ctx.check(Ctx.exists(c, seq), "TTL node with a child was removed");
        c.delete().forPath(seq + "/child");
        Ctx.waitForZk(1_000 + REAP_MS, "the emptied TTL node to expire", () -> c.checkExists().forPath(seq) == null);
    }

    static void containers(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        c.create().creatingParentsIfNeeded().forPath(ctx.path("cont"));
        String cont = ctx.path("cont", "a", "b");
        String plain = ctx.path("cont", "plain", "b");
        c.create().creatingParentContainersIfNeeded().forPath(cont + "/leaf");
        c.create().creatingParentsIfNeeded().forPath(plain + "/leaf");
        Ctx.equal(0L, Ctx.stat(c, cont).getEphemeralOwner(), "ephemeralOwner of a container (reported as 0)");
        c.delete().forPath(cont + "/leaf");
        c.delete().forPath(plain + "/leaf");
        // The emptied container goes, then its (container) parent, which is now empty too.
        Ctx.waitForZk(REAP_MS, "the emptied container " + cont + " to be removed", () -> c.checkExists().forPath(cont) == null);
        Ctx.waitForZk(REAP_MS, "the emptied parent container to be removed",
                () -> c.checkExists().forPath(ctx.path("cont", "a")) == null);
        Ctx.check(Ctx.exists(c, plain), "a persistent parent was removed like a container");
        // createContainers makes a container too: once used and emptied, it goes.
        String made = ctx.path("cont", "made");
        c.createContainers(made);
        Ctx.check(Ctx.exists(c, made), "createContainers did not create %s", made);
        c.create().forPath(made + "/child");
        c.delete().forPath(made + "/child");
        Ctx.waitForZk(REAP_MS, "the container made by createContainers to be removed",
                () -> c.checkExists().forPath(made) == null);
        Ctx.check(Ctx.exists(c, plain), "a persistent parent was removed like a container");
    }
}
