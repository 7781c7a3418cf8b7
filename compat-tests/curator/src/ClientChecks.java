import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

/** Checks of the framework itself: CRUD, protected creates, transactions, watch removal, EnsembleTracker. */
final class ClientChecks {
    private ClientChecks() {
    }

    static void register() {
        CuratorSuite.add("framework CRUD with create2 stats", ClientChecks::crud);
        CuratorSuite.add("protected ephemeral sequential create", ClientChecks::protectedCreate);
        CuratorSuite.add("transaction success", ClientChecks::transactionSuccess);
        CuratorSuite.add("transaction failure atomicity", ClientChecks::transactionFailure);
        CuratorSuite.add("watcher removal", ClientChecks::watcherRemoval);
        CuratorSuite.add("EnsembleTracker keeps a usable connection string", ClientChecks::ensembleTracker);
    }

    static void crud(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        String p = ctx.path("crud", "node");
        Stat st = new Stat();
        String created = c.create().creatingParentsIfNeeded().storingStatIn(st).forPath(p, Ctx.bytes("v0"));
        Ctx.equal(p, created, "created path");
        Ctx.check(st.getCzxid() > 0, "create2 stat has czxid %d, want > 0", st.getCzxid());
        Ctx.equal(0, st.getVersion(), "create2 stat version");
        Ctx.equal(2, st.getDataLength(), "create2 stat dataLength");
        Ctx.equal(st.getCzxid(), st.getMzxid(), "create2 stat mzxid");
        Ctx.equal(0L, st.getEphemeralOwner(), "create2 stat ephemeralOwner");

        Stat st2 = c.setData().withVersion(0).forPath(p, Ctx.bytes("v1"));
        Ctx.equal(1, st2.getVersion(), "version after setData");
        Ctx.equal("v1", Ctx.str(c.getData().forPath(p)), "data after setData");
        try {
            c.setData().withVersion(0).forPath(p, Ctx.bytes("stale"));
            throw new CheckFailed("setData with stale version 0 succeeded");
        } catch (KeeperException.BadVersionException expected) {
            // the version check is enforced
        }
        try {
            c.create().forPath(p);
            throw new CheckFailed("second create of " + p + " succeeded");
        } catch (KeeperException.NodeExistsException expected) {
            // node exists
        }
        List<String> kids = c.getChildren().forPath(ctx.path("crud"));
        Ctx.equal(List.of("node"), kids, "children of parent");
        c.delete().withVersion(1).forPath(p);
        Ctx.check(!Ctx.exists(c, p), "%s still exists after delete", p);
        try {
            c.getData().forPath(p);
            throw new CheckFailed("getData of deleted node succeeded");
        } catch (KeeperException.NoNodeException expected) {
            // gone
        }
    }

    static void protectedCreate(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        String parent = ctx.path("prot");
        c.create().creatingParentsIfNeeded().forPath(parent);
        String a = c.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(parent + "/n", Ctx.bytes("x"));
        String b = c.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(parent + "/n", Ctx.bytes("y"));
        for (String got : new String[] {a, b}) {
            String name = got.substring(parent.length() + 1);
            Ctx.check(name.startsWith("_c_") && name.matches("_c_[0-9a-f-]{36}-n\\d{10}"),
                    "protected name %s does not look like _c_<uuid>-n<10 digits>", name);
            Stat st = Ctx.stat(c, got);
            Ctx.equal(Ctx.sessionId(c), st.getEphemeralOwner(), "ephemeralOwner of " + got);
        }
        long sa = Long.parseLong(a.substring(a.length() - 10));
        long sb = Long.parseLong(b.substring(b.length() - 10));
        Ctx.check(sb > sa, "sequence numbers not increasing: %d then %d", sa, sb);
        c.close();
        CuratorFramework d = ctx.client();
        Ctx.waitForZk(5_000, "ephemerals removed after the owner closed", () -> d.getChildren().forPath(parent).isEmpty());
    }

    static void transactionSuccess(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        String p = ctx.path("txn");
        c.create().creatingParentsIfNeeded().forPath(p);
        String a = p + "/a";
        String b = p + "/b";
        List<CuratorOp> ops = List.of(
                c.transactionOp().create().forPath(a, Ctx.bytes("a1")),
                c.transactionOp().create().forPath(b),
                c.transactionOp().setData().forPath(a, Ctx.bytes("a2")),
                c.transactionOp().check().withVersion(0).forPath(b),
                c.transactionOp().delete().forPath(b));
        List<CuratorTransactionResult> res = c.transaction().forOperations(ops);
        Ctx.equal(5, res.size(), "number of results");
        List<OperationType> types = new ArrayList<>();
        for (CuratorTransactionResult r : res) {
            types.add(r.getType());
            Ctx.equal(0, r.getError(), "error of " + r.getType() + " " + r.getForPath());
        }
        Ctx.equal(List.of(OperationType.CREATE, OperationType.CREATE, OperationType.SET_DATA, OperationType.CHECK,
                OperationType.DELETE), types, "result types");
        Ctx.equal(a, res.get(0).getResultPath(), "result path of create a");
        Ctx.equal(b, res.get(1).getResultPath(), "result path of create b");
        Ctx.check(res.get(2).getResultStat() != null && res.get(2).getResultStat().getVersion() == 1,
                "setData result stat %s, want version 1", res.get(2).getResultStat());
        Stat st = new Stat();
        Ctx.equal("a2", Ctx.str(c.getData().storingStatIn(st).forPath(a)), "data of a");
        Ctx.equal(1, st.getVersion(), "version of a");
        Ctx.check(!Ctx.exists(c, b), "b exists after the transaction deleted it");
        // Every op of one multi is one transaction: the same zxid created a and modified it.
        Ctx.equal(st.getCzxid(), st.getMzxid(), "czxid vs mzxid of a (one transaction)");

        // Sequential creates inside a transaction report the actual name.
        List<CuratorTransactionResult> seq = c.transaction().forOperations(List.of(
                c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(p + "/s-")));
        String sp = seq.get(0).getResultPath();
        Ctx.check(sp.matches(java.util.regex.Pattern.quote(p) + "/s-\\d{10}"), "sequential result path %s", sp);
        Ctx.check(Ctx.exists(c, sp), "%s does not exist", sp);
    }

    static void transactionFailure(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        String p = ctx.path("txnfail");
        String a = p + "/a";
        c.create().creatingParentsIfNeeded().forPath(a, Ctx.bytes("keep"));
        Stat before = Ctx.stat(c, a);

        // A bad version in the last op: the create before it must not happen.
        try {
            c.transaction().forOperations(List.of(
                    c.transactionOp().create().forPath(p + "/c"),
                    c.transactionOp().setData().withVersion(99).forPath(a, Ctx.bytes("changed"))));
            throw new CheckFailed("transaction with setData version 99 succeeded");
        } catch (KeeperException.BadVersionException expected) {
            // the first failing op decides the error
        }
        Ctx.check(!Ctx.exists(c, p + "/c"), "create of a failed transaction was applied");
        Ctx.equal("keep", Ctx.str(c.getData().forPath(a)), "data after failed transaction");

        // A duplicate create at the end: the delete and create before it must not happen.
        try {
            c.transaction().forOperations(List.of(
                    c.transactionOp().delete().forPath(a),
                    c.transactionOp().create().forPath(p + "/d"),
                    c.transactionOp().create().forPath(p + "/d")));
            throw new CheckFailed("transaction creating /d twice succeeded");
        } catch (KeeperException.NodeExistsException expected) {
            // duplicate
        }
        Ctx.check(Ctx.exists(c, a), "delete of a failed transaction was applied");
        Ctx.check(!Ctx.exists(c, p + "/d"), "create of a failed transaction was applied (/d)");

        // A failed check op aborts the whole transaction too.
        try {
            c.transaction().forOperations(List.of(
                    c.transactionOp().setData().forPath(a, Ctx.bytes("x")),
                    c.transactionOp().check().withVersion(5).forPath(a)));
            throw new CheckFailed("transaction with failing check succeeded");
        } catch (KeeperException.BadVersionException expected) {
            // check failed
        }
        Stat after = Ctx.stat(c, a);
        Ctx.equal(before.getMzxid(), after.getMzxid(), "mzxid of a after failed transactions");
        Ctx.equal(before.getVersion(), after.getVersion(), "version of a after failed transactions");
    }

    static void watcherRemoval(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        String p = ctx.path("watchrm");
        c.create().creatingParentsIfNeeded().forPath(p, Ctx.bytes("0"));
        BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
        Watcher w = events::add;
        c.getData().usingWatcher(w).forPath(p);
        c.watchers().remove(w).ofType(Watcher.WatcherType.Data).forPath(p);
        WatchedEvent ev = Ctx.poll(events, 5_000, "DataWatchRemoved event");
        Ctx.equal(Watcher.Event.EventType.DataWatchRemoved, ev.getType(), "event after removing the watch");
        Ctx.equal(p, ev.getPath(), "path of the removal event");

        // A fresh watch still fires after the removal.
        c.checkExists().usingWatcher(w).forPath(p);
        CuratorFramework other = ctx.client();
        other.setData().forPath(p, Ctx.bytes("1"));
        WatchedEvent ev2 = Ctx.poll(events, 5_000, "NodeDataChanged after re-watching");
        Ctx.equal(Watcher.Event.EventType.NodeDataChanged, ev2.getType(), "event type of the new watch");
    }

    static void ensembleTracker(Ctx ctx) throws Exception {
        CuratorFramework c = ctx.client();
        BlockingQueue<ConnectionState> states = new LinkedBlockingQueue<>();
        c.getConnectionStateListenable().addListener((cl, s) -> states.add(s));
        // The config znode the tracker reads on connect is readable.
        byte[] cfg = c.getConfig().forEnsemble();
        Ctx.check(cfg != null, "getConfig returned null");
        // Round trips after connect: the tracker's background getData of /zookeeper/config has been
        // answered by now; the connection string must still be the server we dialled.
        for (int i = 0; i < 5; i++) {
            c.sync().forPath("/");
            c.checkExists().forPath("/zookeeper/config");
            Thread.sleep(100);
        }
        Ctx.equal(ctx.addr, c.getZookeeperClient().getCurrentConnectionString(), "connection string after connect");
        Ctx.check(c.getZookeeperClient().isConnected(), "client not connected");

        // Force Curator to build a new ZooKeeper handle from its (possibly tracker-updated)
        // connection string: it must reach the server again.
        long oldSession = Ctx.sessionId(c);
        c.getZookeeperClient().getZooKeeper().getTestable().injectSessionExpiration();
        Ctx.waitForZk(15_000, "a new session after the injected expiry", () -> {
            if (!c.getZookeeperClient().isConnected()) {
                return false;
            }
            long sid = Ctx.sessionId(c);
            return sid != 0 && sid != oldSession;
        });
        Ctx.equal(ctx.addr, c.getZookeeperClient().getCurrentConnectionString(), "connection string after reconnect");
        String p = ctx.path("after-reconnect");
        c.create().creatingParentsIfNeeded().forPath(p, Ctx.bytes("ok"));
        Ctx.equal("ok", Ctx.str(c.getData().forPath(p)), "data written after reconnect");
        Ctx.check(states.contains(ConnectionState.LOST), "no LOST state reported for the expired session (states %s)", states);
    }
}
