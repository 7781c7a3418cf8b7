package zkcompat;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.Watcher.WatcherType;

/** addWatch (persistent, persistent-recursive), removeWatches, removeAllWatches. */
final class WatchChecks {
    private WatchChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("addWatch PERSISTENT fires repeatedly for the node and its children list", () -> {
            String p = Ctx.path("persistent");
            Events ev = new Events();
            c.zk.addWatch(p, ev, AddWatchMode.PERSISTENT);
            c.zk2.create(p, new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeCreated, p);
            c.zk2.setData(p, Ctx.bytes("1"), -1);
            ev.expect(EventType.NodeDataChanged, p);
            c.zk2.setData(p, Ctx.bytes("2"), -1);
            ev.expect(EventType.NodeDataChanged, p);
            c.zk2.create(p + "/kid", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeChildrenChanged, p);
            c.zk2.setData(p + "/kid", Ctx.bytes("x"), -1);
            c.zk2.delete(p + "/kid", -1);
            ev.expect(EventType.NodeChildrenChanged, p);
            c.zk2.delete(p, -1);
            ev.expect(EventType.NodeDeleted, p);
            Clients.barrier(c.zk);
            ev.expectNone("after the node was deleted");
            c.zk.removeWatches(p, ev, WatcherType.Any, false);
            ev.expect(EventType.PersistentWatchRemoved, p);
            c.zk2.create(p, new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            Clients.barrier(c.zk);
            ev.expectNone("after the persistent watch was removed");
        });

        s.add("addWatch PERSISTENT_RECURSIVE fires for every descendant", () -> {
            String p = Ctx.path("recursive");
            Events ev = new Events();
            c.zk.addWatch(p, ev, AddWatchMode.PERSISTENT_RECURSIVE);
            c.zk2.create(p, new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeCreated, p);
            c.zk2.create(p + "/a", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeCreated, p + "/a");
            c.zk2.create(p + "/a/b", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            ev.expect(EventType.NodeCreated, p + "/a/b");
            c.zk2.setData(p + "/a/b", Ctx.bytes("x"), -1);
            ev.expect(EventType.NodeDataChanged, p + "/a/b");
            c.zk2.setData(p + "/a/b", Ctx.bytes("y"), -1);
            ev.expect(EventType.NodeDataChanged, p + "/a/b");
            c.zk2.delete(p + "/a/b", -1);
            ev.expect(EventType.NodeDeleted, p + "/a/b");
            c.zk2.create(Ctx.path("recursive-sibling"), new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            Clients.barrier(c.zk);
            ev.expectNone("(no NodeChildrenChanged, nothing for a sibling with a common name prefix)");
            c.zk.removeAllWatches(p, WatcherType.Any, false);
            ev.expect(EventType.PersistentWatchRemoved, p);
            c.zk2.delete(p + "/a", -1);
            Clients.barrier(c.zk);
            ev.expectNone("after removeAllWatches");
        });

        s.add("removeWatches removes one watcher", () -> {
            String p = c.mk(Ctx.path("remove-one"), "");
            Events gone = new Events();
            Events kept = new Events();
            c.zk.getData(p, gone, null);
            c.zk.getData(p, kept, null);
            c.zk.removeWatches(p, gone, WatcherType.Data, false);
            gone.expect(EventType.DataWatchRemoved, p);
            c.zk2.setData(p, Ctx.bytes("x"), -1);
            kept.expect(EventType.NodeDataChanged, p);
            Clients.barrier(c.zk);
            gone.expectNone("after setData");
        });

        s.add("removeAllWatches removes data and child watches", () -> {
            String p = c.mk(Ctx.path("remove-all"), "");
            Events data = new Events();
            Events kids = new Events();
            c.zk.getData(p, data, null);
            c.zk.getChildren(p, kids);
            c.zk.removeAllWatches(p, WatcherType.Any, false);
            data.expect(EventType.DataWatchRemoved, p);
            kids.expect(EventType.ChildWatchRemoved, p);
            c.zk2.setData(p, Ctx.bytes("x"), -1);
            c.zk2.create(p + "/kid", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            Clients.barrier(c.zk);
            data.expectNone("after setData");
            kids.expectNone("after a child create");
        });

        s.add("removeWatches and removeAllWatches with no watch give NoWatcher", () -> {
            String p = c.mk(Ctx.path("no-watcher"), "");
            Assert.fails(Code.NOWATCHER, "removeWatches of an unregistered watcher", () ->
                    c.zk.removeWatches(p, new Events(), WatcherType.Data, false));
            Assert.fails(Code.NOWATCHER, "removeAllWatches on a path without watches", () ->
                    c.zk.removeAllWatches(p, WatcherType.Any, false));
            Events kids = new Events();
            c.zk.getChildren(p, kids);
            Assert.fails(Code.NOWATCHER, "removeAllWatches of type Data when only a child watch exists", () ->
                    c.zk.removeAllWatches(p, WatcherType.Data, false));
            c.zk.removeAllWatches(p, WatcherType.Children, false);
            kids.expect(EventType.ChildWatchRemoved, p);
        });
    }
}
