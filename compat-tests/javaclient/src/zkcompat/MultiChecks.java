package zkcompat;

import java.util.Arrays;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.data.Stat;

/** multi: per-op results on success, all-or-nothing with per-op errors on failure. */
final class MultiChecks {
    private MultiChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("multi success returns per-op results", () -> {
            String p = Ctx.path("multi-ok");
            List<OpResult> res = c.zk.multi(Arrays.asList(
                    Op.create(p, Ctx.bytes("a"), Ctx.OPEN, CreateMode.PERSISTENT),
                    Op.create(p + "/seq-", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT_SEQUENTIAL),
                    Op.setData(p, Ctx.bytes("bb"), 0),
                    Op.check(p, 1),
                    Op.create(p + "/gone", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT),
                    Op.delete(p + "/gone", 0)));
            Assert.eq(6, res.size(), "result count");
            Assert.that(res.get(0) instanceof OpResult.CreateResult, "result 0 is a CreateResult: " + res.get(0));
            Assert.eq(p, ((OpResult.CreateResult) res.get(0)).getPath(), "result 0 path");
            Assert.eq(p + "/seq-0000000000", ((OpResult.CreateResult) res.get(1)).getPath(), "result 1 sequential path");
            Assert.that(res.get(2) instanceof OpResult.SetDataResult, "result 2 is a SetDataResult: " + res.get(2));
            Stat st = ((OpResult.SetDataResult) res.get(2)).getStat();
            Assert.eq(1, st.getVersion(), "setData result version");
            Assert.eq(2, st.getDataLength(), "setData result dataLength");
            Assert.eq(st.getCzxid(), st.getMzxid(), "all ops share one zxid (czxid == mzxid)");
            Assert.that(res.get(3) instanceof OpResult.CheckResult, "result 3 is a CheckResult: " + res.get(3));
            Assert.that(res.get(5) instanceof OpResult.DeleteResult, "result 5 is a DeleteResult: " + res.get(5));
            Stat now = new Stat();
            Assert.eq("bb", Ctx.str(c.zk2.getData(p, false, now)), "data seen by another session");
            Assert.eq(Arrays.asList("seq-0000000000"), c.zk2.getChildren(p, false), "children after multi");
            Assert.eq(3, now.getCversion(), "cversion after 2 child creates and 1 delete");
        });

        s.add("multi of reads returns per-op results and errors", () -> {
            String p = c.mk(Ctx.path("multi-read"), "r");
            c.mk(p + "/k1", "");
            c.mk(p + "/k2", "");
            List<OpResult> res = c.zk.multi(Arrays.asList(
                    Op.getChildren(p),
                    Op.getData(p),
                    Op.getData(p + "/missing"),
                    Op.getData(p + "/k1")));
            Assert.eq(4, res.size(), "result count");
            Assert.that(res.get(0) instanceof OpResult.GetChildrenResult, "result 0 is a GetChildrenResult: " + res.get(0));
            List<String> kids = new java.util.ArrayList<>(((OpResult.GetChildrenResult) res.get(0)).getChildren());
            java.util.Collections.sort(kids);
            Assert.eq(Arrays.asList("k1", "k2"), kids, "children");
            Assert.that(res.get(1) instanceof OpResult.GetDataResult, "result 1 is a GetDataResult: " + res.get(1));
            OpResult.GetDataResult gd = (OpResult.GetDataResult) res.get(1);
            Assert.eq("r", Ctx.str(gd.getData()), "data");
            Assert.eq(2, gd.getStat().getNumChildren(), "stat numChildren");
            Assert.that(res.get(2) instanceof OpResult.ErrorResult, "result 2 is an ErrorResult: " + res.get(2));
            Assert.eq(Code.NONODE.intValue(), ((OpResult.ErrorResult) res.get(2)).getErr(), "result 2 error");
            Assert.that(res.get(3) instanceof OpResult.GetDataResult, "result 3 (after the error) is a GetDataResult: " + res.get(3));
        });

        s.add("multi with a failing check is atomic and reports per-op errors", () -> {
            String p = c.mk(Ctx.path("multi-fail"), "orig");
            KeeperException e = Assert.fails(Code.BADVERSION, "multi with check version 7", () ->
                    c.zk.multi(Arrays.asList(
                            Op.create(p + "/a", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT),
                            Op.setData(p, Ctx.bytes("changed"), -1),
                            Op.check(p, 7),
                            Op.create(p + "/b", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT))));
            List<OpResult> res = e.getResults();
            Assert.that(res != null, "KeeperException carries per-op results");
            Assert.eq(4, res.size(), "result count");
            int[] want = {0, 0, Code.BADVERSION.intValue(), Code.RUNTIMEINCONSISTENCY.intValue()};
            for (int i = 0; i < want.length; i++) {
                Assert.that(res.get(i) instanceof OpResult.ErrorResult, "result " + i + " is an ErrorResult: " + res.get(i));
                Assert.eq(want[i], ((OpResult.ErrorResult) res.get(i)).getErr(), "result " + i + " error code");
            }
            Assert.eq(null, c.zk2.exists(p + "/a", false), "stat of " + p + "/a (rolled back)");
            Assert.eq(null, c.zk2.exists(p + "/b", false), "stat of " + p + "/b (never applied)");
            Stat st = new Stat();
            Assert.eq("orig", Ctx.str(c.zk2.getData(p, false, st)), "data after rolled-back setData");
            Assert.eq(0, st.getVersion(), "version after rolled-back setData");
        });

        s.add("multi failing create rolls back an earlier delete", () -> {
            String p = c.mk(Ctx.path("multi-rollback"), "");
            c.mk(p + "/x", "keep");
            KeeperException e = Assert.fails(Code.NONODE, "multi creating under a missing parent", () ->
                    c.zk.multi(Arrays.asList(
                            Op.delete(p + "/x", -1),
                            Op.create(p + "/missing/y", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT))));
            List<OpResult> res = e.getResults();
            Assert.eq(2, res == null ? -1 : res.size(), "result count");
            Assert.eq(0, ((OpResult.ErrorResult) res.get(0)).getErr(), "result 0 error code");
            Assert.eq(Code.NONODE.intValue(), ((OpResult.ErrorResult) res.get(1)).getErr(), "result 1 error code");
            Assert.eq("keep", Ctx.str(c.zk2.getData(p + "/x", false, null)), "deleted node is still there");
            // A rolled-back multi uses up no sequence number.
            String seq = c.zk.create(p + "/s-", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT_SEQUENTIAL);
            Assert.eq(p + "/s-0000000001", seq, "next sequential name (x was child 0)");
        });
    }
}
