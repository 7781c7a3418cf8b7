package zkcompat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.data.Stat;

/** create modes, create2 stats, setData/getData stats, the exists watch. */
final class NodeChecks {
    private NodeChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("create2 returns the new node's stat", () -> {
            String p = Ctx.path("create2");
            Stat st = new Stat();
            long before = System.currentTimeMillis();
            String got = c.zk.create(p, Ctx.bytes("hello"), Ctx.OPEN, CreateMode.PERSISTENT, st);
            Assert.eq(p, got, "created path");
            Assert.that(st.getCzxid() > 0, "czxid > 0: " + st);
            Assert.eq(st.getCzxid(), st.getMzxid(), "mzxid");
            Assert.eq(st.getCzxid(), st.getPzxid(), "pzxid");
            Assert.eq(st.getCtime(), st.getMtime(), "mtime");
            Assert.that(Math.abs(st.getCtime() - before) < 60_000, "ctime near now: " + st.getCtime() + " vs " + before);
            Assert.eq(0, st.getVersion(), "version");
            Assert.eq(0, st.getCversion(), "cversion");
            Assert.eq(0, st.getAversion(), "aversion");
            Assert.eq(0L, st.getEphemeralOwner(), "ephemeralOwner");
            Assert.eq(5, st.getDataLength(), "dataLength");
            Assert.eq(0, st.getNumChildren(), "numChildren");
            Assert.eq(st, c.zk2.exists(p, false), "stat from exists on another session");
        });

        s.add("ephemeral sequential create with stat", () -> {
            String p = c.mk(Ctx.path("eseq"), "");
            Stat st = new Stat();
            String a = c.zk.create(p + "/e-", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL_SEQUENTIAL, st);
            Stat st2 = new Stat();
            String b = c.zk.create(p + "/e-", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL_SEQUENTIAL, st2);
            Assert.eq(p + "/e-0000000000", a, "first sequential name");
            Assert.eq(p + "/e-0000000001", b, "second sequential name");
            Assert.eq(c.zk.getSessionId(), st.getEphemeralOwner(), "ephemeralOwner");
            Stat parent = c.zk.exists(p, false);
            Assert.eq(2, parent.getNumChildren(), "parent numChildren");
            Assert.eq(2, parent.getCversion(), "parent cversion");
            Assert.eq(st2.getCzxid(), parent.getPzxid(), "parent pzxid is the second create's zxid");
        });

        s.add("CONTAINER node is removed after its last child goes", () -> {
            String p = Ctx.path("container");
            Stat st = new Stat();
            Assert.eq(p, c.zk.create(p, new byte[0], Ctx.OPEN, CreateMode.CONTAINER, st), "created path");
            Assert.eq(0L, st.getEphemeralOwner(), "container ephemeralOwner on the wire");
            c.mk(p + "/child", "");
            Events ev = new Events();
            Assert.that(c.zk.exists(p, ev) != null, "container exists");
            c.zk.delete(p + "/child", -1);
            ev.expect(EventType.NodeDeleted, p);
            Assert.eq(null, c.zk2.exists(p, false), "container stat after removal");
        });

        s.add("PERSISTENT_WITH_TTL node expires", () -> {
            String p = Ctx.path("ttl");
            Stat st = new Stat();
            Assert.eq(p, c.zk.create(p, Ctx.bytes("t"), Ctx.OPEN, CreateMode.PERSISTENT_WITH_TTL, st, 1000), "created path");
            Assert.eq(0L, st.getEphemeralOwner(), "TTL node ephemeralOwner on the wire");
            String q = c.zk.create(Ctx.path("ttlseq-"), new byte[0], Ctx.OPEN,
                    CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, null, 60_000);
            Assert.that(q.matches(Ctx.BASE + "/ttlseq-\\d{10}"), "sequential TTL name: " + q);
            Events ev = new Events();
            Assert.that(c.zk.exists(p, ev) != null, "TTL node exists");
            ev.expect(EventType.NodeDeleted, p);
            Assert.that(c.zk2.exists(q, false) != null, "TTL node with 60 s ttl is still there");
        });

        s.add("setData and getData stats", () -> {
            String p = Ctx.path("data");
            Stat created = new Stat();
            c.zk.create(p, Ctx.bytes("v0"), Ctx.OPEN, CreateMode.PERSISTENT, created);
            Stat set = c.zk.setData(p, Ctx.bytes("value-1"), 0);
            Assert.eq(1, set.getVersion(), "version after setData");
            Assert.eq(7, set.getDataLength(), "dataLength after setData");
            Assert.eq(created.getCzxid(), set.getCzxid(), "czxid kept");
            Assert.that(set.getMzxid() > created.getMzxid(), "mzxid grows: " + created.getMzxid() + " -> " + set.getMzxid());
            Assert.eq(created.getCtime(), set.getCtime(), "ctime kept");
            Assert.that(set.getMtime() >= created.getMtime(), "mtime does not go back");
            Assert.eq(created.getPzxid(), set.getPzxid(), "pzxid untouched by setData");
            Stat got = new Stat();
            Assert.eq("value-1", Ctx.str(c.zk2.getData(p, false, got)), "data");
            Assert.eq(set, got, "getData stat equals setData stat");
            Stat empty = c.zk.setData(p, new byte[0], -1);
            Assert.eq(2, empty.getVersion(), "version after setData with version -1");
            byte[] d = c.zk2.getData(p, false, null);
            Assert.that(d != null && d.length == 0, "empty data reads back as an empty array: " + Arrays.toString(d));
            Assert.fails(Code.BADVERSION, "setData with stale version", () -> c.zk.setData(p, Ctx.bytes("x"), 1));
        });

        s.add("null data stays null, empty data stays empty", () -> {
            String p = Ctx.path("nulldata");
            Stat st = new Stat();
            c.zk.create(p, null, Ctx.OPEN, CreateMode.PERSISTENT, st);
            Assert.eq(0, st.getDataLength(), "dataLength of a node created with null data");
            Assert.eq(null, c.zk2.getData(p, false, null), "getData of a node created with null data");
            c.zk.setData(p, new byte[0], -1);
            byte[] d = c.zk2.getData(p, false, null);
            Assert.that(d != null && d.length == 0, "getData after setData(empty) is empty, not null: " + Arrays.toString(d));
            c.zk.setData(p, null, -1);
            Assert.eq(null, c.zk2.getData(p, false, null), "getData after setData(null)");
        });

        s.add("getChildren with stat, sequence numbers count every child create", () -> {
            String p = c.mk(Ctx.path("children"), "");
            c.mk(p + "/a", "");
            c.mk(p + "/b", "");
            c.zk.delete(p + "/a", -1);
            String seq = c.zk.create(p + "/s-", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT_SEQUENTIAL);
            Assert.eq(p + "/s-0000000002", seq, "sequential name after two creates and a delete");
            Stat st = new Stat();
            List<String> kids = new ArrayList<>(c.zk2.getChildren(p, false, st));
            Collections.sort(kids);
            Assert.eq(Arrays.asList("b", "s-0000000002"), kids, "children");
            Assert.eq(2, st.getNumChildren(), "numChildren");
            Assert.eq(4, st.getCversion(), "cversion after 3 creates and 1 delete");
            Stat seqStat = c.zk2.exists(seq, false);
            Assert.eq(seqStat.getCzxid(), st.getPzxid(), "pzxid is the last child change");
            CountDownLatch synced = new CountDownLatch(1);
            int[] rc = {Integer.MIN_VALUE};
            c.zk2.sync(p, (code, path, ctx) -> {
                rc[0] = code;
                synced.countDown();
            }, null);
            Assert.that(synced.await(Events.WAIT_MS, TimeUnit.MILLISECONDS), "sync callback within " + Events.WAIT_MS + " ms");
            Assert.eq(0, rc[0], "sync result code");
        });

        s.add("exists watch on a missing node fires NodeCreated", () -> {
            String p = Ctx.path("exists-watch");
            Events ev = new Events();
            Assert.eq(null, c.zk.exists(p, ev), "exists on missing node");
            c.zk2.create(p, new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeCreated, p);
            c.zk2.setData(p, Ctx.bytes("x"), -1);
            Clients.barrier(c.zk);
            ev.expectNone("after setData (the exists watch is one-shot)");
        });

        s.add("getData and getChildren watches fire once", () -> {
            String p = c.mk(Ctx.path("oneshot"), "");
            Events data = new Events();
            Events kids = new Events();
            c.zk.getData(p, data, null);
            c.zk.getChildren(p, kids);
            c.zk2.create(p + "/k", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            kids.expect(EventType.NodeChildrenChanged, p);
            c.zk2.setData(p, Ctx.bytes("1"), -1);
            data.expect(EventType.NodeDataChanged, p);
            c.zk2.setData(p, Ctx.bytes("2"), -1);
            c.zk2.delete(p + "/k", -1);
            Clients.barrier(c.zk);
            data.expectNone("after a second setData");
            kids.expectNone("after a second child change");
            c.zk.getData(p, data, null);
            c.zk.getChildren(p, kids);
            c.zk2.delete(p, -1);
            data.expect(EventType.NodeDeleted, p);
            kids.expect(EventType.NodeDeleted, p);
        });
    }
}
