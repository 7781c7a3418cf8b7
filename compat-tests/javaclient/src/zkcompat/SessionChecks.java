package zkcompat;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/** Reattaching to a session by id and password; closing deletes ephemerals. */
final class SessionChecks {
    private SessionChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("watches survive a reconnect (setWatches, setWatches2)", () -> {
            String p = c.mk(Ctx.path("reconnect"), "");
            Clients.States st = new Clients.States();
            ZooKeeper zk = c.clients.connect(st);
            Events data = new Events();
            Events kids = new Events();
            Events exist = new Events();
            Events rec = new Events();
            zk.getData(p, data, null);
            zk.getChildren(p, kids);
            Assert.eq(null, zk.exists(p + "/new", exist), "exists of a missing node");
            zk.addWatch(p + "/rec", rec, AddWatchMode.PERSISTENT_RECURSIVE);
            long id = zk.getSessionId();
            Clients.dropConnection(zk);
            st.await(KeeperState.Disconnected);
            // Made while the client is away or just back: either the
            // server fires it on setWatches, or the restored watch does.
            c.zk2.setData(p, Ctx.bytes("while away"), -1);
            st.await(KeeperState.SyncConnected);
            Assert.eq(id, zk.getSessionId(), "session id after the reconnect");
            data.expect(EventType.NodeDataChanged, p);
            c.zk2.create(p + "/new", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            exist.expect(EventType.NodeCreated, p + "/new");
            kids.expect(EventType.NodeChildrenChanged, p);
            c.zk2.create(p + "/rec", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            rec.expect(EventType.NodeCreated, p + "/rec");
            c.zk2.create(p + "/rec/a", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            rec.expect(EventType.NodeCreated, p + "/rec/a");
            Clients.barrier(zk);
            data.expectNone("after the reconnect");
            kids.expectNone("after the reconnect");
            exist.expectNone("after the reconnect");
        });

        s.add("session reattach keeps the ephemerals", () -> {
            String p = c.mk(Ctx.path("reattach"), "");
            ZooKeeper first = c.clients.connect();
            String eph = first.create(p + "/eph", Ctx.bytes("mine"), Ctx.OPEN, CreateMode.EPHEMERAL);
            long id = first.getSessionId();
            byte[] passwd = first.getSessionPasswd();
            // Drop the first client without a closeSession: its socket closes, the session lives on.
            first.getTestable().injectSessionExpiration();
            Clients.States st = new Clients.States();
            ZooKeeper second = c.clients.reattach(id, passwd, st);
            st.await(KeeperState.SyncConnected);
            Assert.eq(id, second.getSessionId(), "session id after reattach");
            Stat es = second.exists(eph, false);
            Assert.that(es != null, "ephemeral survives the reattach");
            Assert.eq(id, es.getEphemeralOwner(), "ephemeralOwner");
            Assert.eq(java.util.Collections.singletonList(eph), second.getEphemerals(p), "getEphemerals after reattach");
            String eph2 = second.create(p + "/eph2", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            Events ev = new Events();
            Assert.that(c.zk.exists(eph, ev) != null, "ephemeral seen by another session");
            Events ev2 = new Events();
            Assert.that(c.zk.exists(eph2, ev2) != null, "second ephemeral seen by another session");
            second.close();
            ev.expect(EventType.NodeDeleted, eph);
            ev2.expect(EventType.NodeDeleted, eph2);
        });

        s.add("reattach with a wrong password is refused as expired", () -> {
            ZooKeeper owner = c.clients.connect();
            String eph = owner.create(Ctx.path("owned"), new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            Clients.States st = new Clients.States();
            byte[] wrong = owner.getSessionPasswd().clone();
            wrong[0] ^= 0x5a;
            c.clients.reattach(owner.getSessionId(), wrong, st);
            st.await(KeeperState.Expired);
            // ZooKeeper drops the owner's connection first; the session itself lives on.
            Stat es = c.zk.exists(eph, false);
            Assert.that(es != null, "the owner's ephemeral survives");
            Assert.eq(owner.getSessionId(), es.getEphemeralOwner(), "ephemeralOwner");
        });

        s.add("reattach to a closed session is refused as expired", () -> {
            ZooKeeper zk = c.clients.connect();
            long id = zk.getSessionId();
            byte[] passwd = zk.getSessionPasswd();
            zk.close();
            Clients.States st = new Clients.States();
            c.clients.reattach(id, passwd, st);
            st.await(KeeperState.Expired);
        });
    }
}
