package zkcompat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Stat;

/** getEphemerals, getAllChildrenNumber, whoAmI, getConfig. */
final class InfoChecks {
    private InfoChecks() {}

    static void register(Suite s, Ctx c) {
        s.add("getEphemerals lists the session's ephemerals, filtered by prefix", () -> {
            ZooKeeper zk = c.clients.connect();
            Assert.eq(Collections.emptyList(), zk.getEphemerals(), "ephemerals of a new session");
            String p = c.mk(Ctx.path("ephemerals"), "");
            String dir = c.mk(p + "/dir", "");
            String a = zk.create(dir + "/a", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            String b = zk.create(dir + "/b-", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL_SEQUENTIAL);
            String other = zk.create(p + "/other", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            c.zk2.create(dir + "/not-mine", new byte[0], Ctx.OPEN, CreateMode.EPHEMERAL);
            Assert.eq(sorted(a, b, other), sorted(zk.getEphemerals()), "getEphemerals()");
            Assert.eq(sorted(a, b, other), sorted(zk.getEphemerals("/")), "getEphemerals(\"/\")");
            Assert.eq(sorted(a, b), sorted(zk.getEphemerals(dir)), "getEphemerals(dir)");
            // The filter is a plain string prefix, not a path prefix.
            Assert.eq(sorted(a, b), sorted(zk.getEphemerals(p + "/d")), "getEphemerals(string prefix)");
            Assert.eq(Collections.emptyList(), zk.getEphemerals(p + "/nothing"), "getEphemerals(unmatched prefix)");
            Assert.that(c.zk2.getEphemerals(dir).contains(dir + "/not-mine"), "the other session sees its own ephemeral");
        });

        s.add("getAllChildrenNumber counts all descendants", () -> {
            String p = c.mk(Ctx.path("count"), "");
            c.mk(p + "/a", "");
            c.mk(p + "/b", "");
            c.mk(p + "/a/x", "");
            c.mk(p + "/a/x/y", "");
            Assert.eq(4, c.zk.getAllChildrenNumber(p), "descendants of " + p);
            Assert.eq(2, c.zk.getAllChildrenNumber(p + "/a"), "descendants of " + p + "/a");
            Assert.eq(0, c.zk.getAllChildrenNumber(p + "/b"), "descendants of a leaf");
            Assert.that(c.zk.getAllChildrenNumber("/") >= 7, "descendants of / include /zookeeper's and these");
            Assert.fails(Code.NONODE, "getAllChildrenNumber of a missing node", () ->
                    c.zk.getAllChildrenNumber(p + "/missing"));
        });

        s.add("whoAmI reports the ip identity and added digest identities", () -> {
            ZooKeeper zk = c.clients.connect();
            List<ClientInfo> ids = zk.whoAmI();
            Assert.eq("[ip:127.0.0.1]", render(ids), "whoAmI of a new session");
            zk.addAuthInfo("digest", Ctx.bytes("whoami-user:pw"));
            Assert.eq("[digest:whoami-user, ip:127.0.0.1]", render(zk.whoAmI()), "whoAmI after digest auth");
        });

        s.add("getConfig on a standalone server returns empty data", () -> {
            Stat st = new Stat();
            byte[] cfg = c.zk.getConfig(false, st);
            Assert.that(cfg != null, "getConfig returned null data");
            Assert.eq("", Ctx.str(cfg), "standalone config data");
            Assert.eq(0, st.getDataLength(), "dataLength");
            byte[] raw = c.zk.getData("/zookeeper/config", false, null);
            Assert.that(raw != null && raw.length == 0, "getData(/zookeeper/config) is empty: " + Arrays.toString(raw));
        });
    }

    private static List<String> sorted(String... xs) {
        return sorted(Arrays.asList(xs));
    }

    private static List<String> sorted(List<String> xs) {
        List<String> out = new ArrayList<>(xs);
        Collections.sort(out);
        return out;
    }

    private static String render(List<ClientInfo> ids) {
        if (ids == null) {
            return "null";
        }
        List<String> out = new ArrayList<>();
        for (ClientInfo i : ids) {
            out.add(i.getAuthScheme() + ":" + i.getUser());
        }
        Collections.sort(out);
        return out.toString();
    }
}
