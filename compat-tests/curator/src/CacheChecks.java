import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.NodeCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCacheEvent;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;

/** Caches: CuratorCache (persistent recursive watch), PathChildrenCache, NodeCache, TreeCache. */
@SuppressWarnings("deprecation")
final class CacheChecks {
    static final long EVENT_MS = 5_000;

    private CacheChecks() {
    }

    static void register() {
        CuratorSuite.add("CuratorCache events for descendants", CacheChecks::curatorCache);
        CuratorSuite.add("PathChildrenCache", CacheChecks::pathChildrenCache);
        CuratorSuite.add("NodeCache", CacheChecks::nodeCache);
        CuratorSuite.add("TreeCache", CacheChecks::treeCache);
    }

    /** An event reduced to what the checks compare: type, path and data. */
    record Ev(String type, String path, String data) {
        @Override
        public String toString() {
            return type + " " + path + (data == null ? "" : " [" + data + "]");
        }
    }

    /** expect takes events until one equals want, failing on timeout; unrelated events in between are reported. */
    static <T> void expect(BlockingQueue<T> q, T want) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EVENT_MS);
        StringBuilder other = new StringBuilder();
        while (true) {
            long left = deadline - System.nanoTime();
            T got = left > 0 ? q.poll(left, TimeUnit.NANOSECONDS) : null;
            if (got == null) {
                throw new CheckFailed("no event " + want + " within " + EVENT_MS + " ms"
                        + (other.length() > 0 ? " (got instead:" + other + ")" : ""));
            }
            if (got.equals(want)) {
                return;
            }
            other.append(' ').append(got);
        }
    }

    static String data(ChildData d) {
        return d == null ? null : Ctx.str(d.getData());
    }

    static void curatorCache(Ctx ctx) throws Exception {
        String root = ctx.path("cc");
        CuratorFramework c = ctx.client();
        CuratorFramework w = ctx.client();
        c.create().creatingParentsIfNeeded().forPath(root, Ctx.bytes("root"));
        c.create().forPath(root + "/pre", Ctx.bytes("p"));
        BlockingQueue<Ev> q = new LinkedBlockingQueue<>();
        CountDownLatch init = new CountDownLatch(1);
        CuratorCache cache = ctx.onClose(CuratorCache.build(c, root));
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, ChildData oldData, ChildData data) {
                ChildData d = data != null ? data : oldData;
                q.add(new Ev(type.name(), d.getPath(), type == Type.NODE_DELETED ? null : data(data)));
            }

            @Override
            public void initialized() {
                init.countDown();
            }
        });
        cache.start();
        Ctx.check(init.await(EVENT_MS, TimeUnit.MILLISECONDS), "CuratorCache not initialized within %d ms", EVENT_MS);
        Ctx.check(cache.get(root + "/pre").isPresent(), "existing child missing from the initialized cache");
        Ctx.equal("p", data(cache.get(root + "/pre").get()), "cached data of the existing child");
        q.clear();

        w.create().forPath(root + "/a", Ctx.bytes("1"));
        expect(q, new Ev("NODE_CREATED", root + "/a", "1"));
        w.create().forPath(root + "/a/b", Ctx.bytes("2"));
        expect(q, new Ev("NODE_CREATED", root + "/a/b", "2"));
        w.create().forPath(root + "/a/b/c", Ctx.bytes("3"));
        expect(q, new Ev("NODE_CREATED", root + "/a/b/c", "3"));
        w.setData().forPath(root + "/a/b", Ctx.bytes("2b"));
        expect(q, new Ev("NODE_CHANGED", root + "/a/b", "2b"));
        w.setData().forPath(root, Ctx.bytes("root2"));
        expect(q, new Ev("NODE_CHANGED", root, "root2"));
        w.delete().forPath(root + "/a/b/c");
        expect(q, new Ev("NODE_DELETED", root + "/a/b/c", null));
        w.delete().deletingChildrenIfNeeded().forPath(root + "/a");
        expect(q, new Ev("NODE_DELETED", root + "/a/b", null));
        expect(q, new Ev("NODE_DELETED", root + "/a", null));
        Ctx.check(cache.get(root + "/a").isEmpty(), "deleted node still cached");
        Ctx.equal(2, cache.size(), "cache size (root and pre)");
    }

    static void pathChildrenCache(Ctx ctx) throws Exception {
        String root = ctx.path("pcc");
        CuratorFramework c = ctx.client();
        CuratorFramework w = ctx.client();
        c.create().creatingParentsIfNeeded().forPath(root);
        c.create().forPath(root + "/pre", Ctx.bytes("p"));
        BlockingQueue<Ev> q = new LinkedBlockingQueue<>();
        PathChildrenCache cache = ctx.onClose(new PathChildrenCache(c, root, true));
        cache.getListenable().addListener((client, e) -> {
            ChildData d = e.getData();
            q.add(new Ev(e.getType().name(), d == null ? null : d.getPath(),
                    e.getType() == PathChildrenCacheEvent.Type.CHILD_REMOVED ? null : data(d)));
        });
        cache.start(PathChildrenCache.StartMode.POST_INITIALIZED_EVENT);
        expect(q, new Ev("INITIALIZED", null, null));
        Ctx.equal(1, cache.getCurrentData().size(), "children cached after INITIALIZED");
        Ctx.equal("p", data(cache.getCurrentData(root + "/pre")), "cached data of the existing child");

        w.create().forPath(root + "/x", Ctx.bytes("1"));
        expect(q, new Ev("CHILD_ADDED", root + "/x", "1"));
        w.setData().forPath(root + "/x", Ctx.bytes("2"));
        expect(q, new Ev("CHILD_UPDATED", root + "/x", "2"));
        w.delete().forPath(root + "/x");
        expect(q, new Ev("CHILD_REMOVED", root + "/x", null));
        Ctx.check(cache.getCurrentData(root + "/x") == null, "removed child still cached");
        // A grandchild is not a child: no event for it, only for the next child change.
        w.create().forPath(root + "/pre/deep", Ctx.bytes("d"));
        w.create().forPath(root + "/y", Ctx.bytes("y"));
        Ev next = Ctx.poll(q, EVENT_MS, "CHILD_ADDED of y");
        Ctx.equal(new Ev("CHILD_ADDED", root + "/y", "y"), next, "event after creating a grandchild and a child");
    }

    static void nodeCache(Ctx ctx) throws Exception {
        String p = ctx.path("nc", "node");
        CuratorFramework c = ctx.client();
        CuratorFramework w = ctx.client();
        NodeCache cache = ctx.onClose(new NodeCache(c, p));
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        cache.getListenable().addListener(() -> {
            ChildData d = cache.getCurrentData();
            q.add(d == null ? "<none>" : Ctx.str(d.getData()));
        });
        cache.start(true);
        Ctx.check(cache.getCurrentData() == null, "cache of a missing node has data");
        w.create().creatingParentsIfNeeded().forPath(p, Ctx.bytes("v1"));
        expect(q, "v1");
        w.setData().forPath(p, Ctx.bytes("v2"));
        expect(q, "v2");
        Ctx.equal(1, cache.getCurrentData().getStat().getVersion(), "cached version");
        w.delete().forPath(p);
        expect(q, "<none>");
        w.create().forPath(p, Ctx.bytes("v3"));
        expect(q, "v3");
    }

    static void treeCache(Ctx ctx) throws Exception {
        String root = ctx.path("tc");
        CuratorFramework c = ctx.client();
        CuratorFramework w = ctx.client();
        c.create().creatingParentsIfNeeded().forPath(root, Ctx.bytes("r"));
        BlockingQueue<Ev> q = new LinkedBlockingQueue<>();
        TreeCache cache = ctx.onClose(TreeCache.newBuilder(c, root).setCacheData(true).build());
        cache.getListenable().addListener((client, e) -> {
            ChildData d = e.getData();
            q.add(new Ev(e.getType().name(), d == null ? null : d.getPath(),
                    e.getType() == TreeCacheEvent.Type.NODE_REMOVED ? null : data(d)));
        });
        cache.start();
        expect(q, new Ev("INITIALIZED", null, null));
        w.create().forPath(root + "/x", Ctx.bytes("1"));
        expect(q, new Ev("NODE_ADDED", root + "/x", "1"));
        w.create().forPath(root + "/x/y", Ctx.bytes("2"));
        expect(q, new Ev("NODE_ADDED", root + "/x/y", "2"));
        w.setData().forPath(root + "/x/y", Ctx.bytes("3"));
        expect(q, new Ev("NODE_UPDATED", root + "/x/y", "3"));
        Ctx.equal(java.util.Set.of("x"), cache.getCurrentChildren(root).keySet(), "children of the root in the cache");
        Ctx.equal("3", data(cache.getCurrentData(root + "/x/y")), "cached grandchild data");
        w.delete().forPath(root + "/x/y");
        expect(q, new Ev("NODE_REMOVED", root + "/x/y", null));
        Ctx.check(cache.getCurrentData(root + "/x/y") == null, "removed node still cached");
    }
}
