package zkcompat;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/** The error codes of the ordinary operations, with the path they name. */
final class ErrorChecks {
    private ErrorChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("error NoNode", () -> {
            String p = Ctx.path("nonode");
            KeeperException e = Assert.fails(Code.NONODE, "getData of a missing node", () -> c.zk.getData(p, false, null));
            Assert.eq(p, e.getPath(), "exception path");
            Assert.fails(Code.NONODE, "create under a missing parent", () ->
                    c.zk.create(p + "/child", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT));
            Assert.fails(Code.NONODE, "delete of a missing node", () -> c.zk.delete(p, -1));
            Assert.fails(Code.NONODE, "setData of a missing node", () -> c.zk.setData(p, new byte[0], -1));
            Assert.fails(Code.NONODE, "getChildren of a missing node", () -> c.zk.getChildren(p, false));
            Assert.fails(Code.NONODE, "getACL of a missing node", () -> c.zk.getACL(p, null));
        });

        s.add("error NodeExists", () -> {
            String p = c.mk(Ctx.path("exists"), "");
            KeeperException e = Assert.fails(Code.NODEEXISTS, "second create", () -> c.mk(p, "again"));
            Assert.eq(p, e.getPath(), "exception path");
            Assert.fails(Code.NODEEXISTS, "create of /", () -> c.mk("/", ""));
        });

        s.add("error BadVersion", () -> {
            String p = c.mk(Ctx.path("badversion"), "");
            Assert.fails(Code.BADVERSION, "setData with version 3", () -> c.zk.setData(p, new byte[0], 3));
            Assert.fails(Code.BADVERSION, "delete with version 3", () -> c.zk.delete(p, 3));
            Assert.fails(Code.BADVERSION, "setACL with aversion 3", () -> c.zk.setACL(p, Ctx.OPEN, 3));
            Assert.that(c.zk.exists(p, false) != null, "node still there");
        });

        s.add("error NotEmpty", () -> {
            String p = c.mk(Ctx.path("notempty"), "");
            c.mk(p + "/child", "");
            Assert.fails(Code.NOTEMPTY, "delete of a node with a child", () -> c.zk.delete(p, -1));
        });

        s.add("error NoChildrenForEphemerals", () -> {
            String p = c.zk.create(Ctx.path("eph-parent"), new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            Assert.fails(Code.NOCHILDRENFOREPHEMERALS, "create under an ephemeral node", () ->
                    c.zk.create(p + "/child", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT));
            Assert.fails(Code.NOCHILDRENFOREPHEMERALS, "create under another session's ephemeral node", () ->
                    c.zk2.create(p + "/child", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL));
        });

        s.add("error BadArguments for the reserved nodes", () -> {
            Assert.fails(Code.BADARGUMENTS, "delete /zookeeper", () -> c.zk.delete("/zookeeper", -1));
            Assert.fails(Code.BADARGUMENTS, "delete /zookeeper/config", () -> c.zk.delete("/zookeeper/config", -1));
            Assert.fails(Code.NOAUTH, "setData /zookeeper/config", () -> c.zk.setData("/zookeeper/config", new byte[0], -1));
        });
    }
}
