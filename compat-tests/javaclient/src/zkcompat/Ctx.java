package zkcompat;

import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;

/**
 * What the checks share: the client factory and two connected sessions.
 * Every check works under its own node below BASE, which is unique per run
 * so that a rerun against the same server meets no leftovers.
 */
final class Ctx {
    static final String BASE = "/javaclient-" + Long.toHexString(System.currentTimeMillis());
    static final List<ACL> OPEN = ZooDefs.Ids.OPEN_ACL_UNSAFE;

    final Clients clients;
    /** The two sessions, set by the suite's first (required) check. */
    ZooKeeper zk;
    ZooKeeper zk2;

    Ctx(Clients clients) {
        this.clients = clients;
    }

    /** The path of a check's own node, BASE/name (not created). */
    static String path(String name) {
        return BASE + "/" + name;
    }

    /** Creates an open persistent node with data and returns its path. */
    String mk(String path, String data) throws Exception {
        return zk.create(path, bytes(data), OPEN, CreateMode.PERSISTENT);
    }

    static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }
}
