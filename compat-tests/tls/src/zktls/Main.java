package zktls;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/**
 * The ZooKeeper 3.8 Java client over TLS (ClientCnxnSocketNetty) against a
 * server's secure client port. Usage: Main host:port. The good client's
 * key and trust stores come from the zookeeper.ssl.* system properties
 * (run.sh sets them); refused clients override them in their ZKClientConfig.
 * Environment: ZKTLS_DIR (the PEM files), ZKTLS_CLIENT_DN, ZKTLS_OTHER_DN.
 * Prints one PASS/FAIL line per check and "N passed, M failed"; exits 0
 * only if every check passed. Every wait is bounded.
 */
public final class Main {
    private static final long PER_CHECK_MS = 25_000;
    private static final long TOTAL_MS = 80_000;
    private static final int CONNECT_MS = 10_000;
    private static final int REFUSED_MS = 4_000;

    private static String addr;
    private static String dir;
    private static String clientDN;
    private static String otherDN;
    private static final String ROOT = "/tls-java-" + Long.toHexString(System.nanoTime());

    private int passed;
    private int failed;

    private Main() {}

    interface Check {
        void run() throws Exception;
    }

    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: zktls.Main host:port");
            System.exit(2);
        }
        addr = args[0];
        dir = System.getenv("ZKTLS_DIR");
        clientDN = System.getenv("ZKTLS_CLIENT_DN");
        otherDN = System.getenv("ZKTLS_OTHER_DN");
        if (dir == null || clientDN == null || otherDN == null) {
            System.err.println("ZKTLS_DIR, ZKTLS_CLIENT_DN and ZKTLS_OTHER_DN must be set");
            System.exit(2);
        }
        Main m = new Main();
        m.runAll();
        System.out.println(m.passed + " passed, " + m.failed + " failed");
        System.out.flush();
        // Client threads are not daemons; a stuck one must not keep the JVM alive.
        Runtime.getRuntime().halt(m.failed == 0 ? 0 : 1);
    }

    private void runAll() {
        long deadline = System.currentTimeMillis() + TOTAL_MS;
        ExecutorService ex = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        List<String> names = new ArrayList<>();
        List<Check> checks = new ArrayList<>();
        register(names, checks);
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            if (System.currentTimeMillis() > deadline) {
                fail(name, "not run: suite time limit reached");
                continue;
            }
            Check c = checks.get(i);
            Future<?> f = ex.submit(() -> {
                c.run();
                return null;
            });
            try {
                f.get(PER_CHECK_MS, TimeUnit.MILLISECONDS);
                passed++;
                System.out.println("PASS " + name);
            } catch (TimeoutException e) {
                f.cancel(true);
                fail(name, "timed out after " + PER_CHECK_MS + " ms");
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                fail(name, cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }
            System.out.flush();
        }
    }

    private void fail(String name, String reason) {
        failed++;
        System.out.println("FAIL " + name + ": " + String.valueOf(reason).replace('\n', ' '));
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** The client configuration: system properties, with the given overrides. */
    static ZKClientConfig config(String who, String ca) {
        ZKClientConfig cfg = new ZKClientConfig();
        check("true".equals(cfg.getProperty(ZKClientConfig.SECURE_CLIENT)), "zookeeper.client.secure is not set");
        if (who == null) {
            cfg.setProperty("zookeeper.ssl.keyStore.location", "");
        } else {
            cfg.setProperty("zookeeper.ssl.keyStore.location", dir + "/" + who + ".pem");
        }
        cfg.setProperty("zookeeper.ssl.trustStore.location", dir + "/" + ca);
        return cfg;
    }

    /** Connects with the system-property stores; fails unless connected in time. */
    static ZooKeeper connect() throws Exception {
        return connect(new ZKClientConfig());
    }

    static ZooKeeper connect(ZKClientConfig cfg) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(addr, 30_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                up.countDown();
            }
        }, cfg);
        if (!up.await(CONNECT_MS, TimeUnit.MILLISECONDS)) {
            zk.close();
            throw new AssertionError("not connected within " + CONNECT_MS + " ms");
        }
        return zk;
    }

    /** A client that must not get a session. */
    static void expectRefused(ZKClientConfig cfg) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(addr, 30_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                up.countDown();
            }
        }, cfg);
        try {
            check(!up.await(REFUSED_MS, TimeUnit.MILLISECONDS), "the client connected");
            check(zk.getSessionId() == 0, "the client got session " + Long.toHexString(zk.getSessionId()));
        } finally {
            zk.close(1000);
        }
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void register(List<String> names, List<Check> checks) {
        names.add("connect over TLS with the system-property key and trust stores, create and read");
        checks.add(() -> {
            try (ZooKeeper zk = connect()) {
                check(zk.getSessionId() != 0, "session id");
                zk.create(ROOT, b("tls"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                Stat st = new Stat();
                check("tls".equals(new String(zk.getData(ROOT, false, st), StandardCharsets.UTF_8)), "data read back");
                check(st.getVersion() == 0 && st.getDataLength() == 3, "stat " + st);
                zk.setData(ROOT, b("tls2"), 0);
                check("tls2".equals(new String(zk.getData(ROOT, false, null), StandardCharsets.UTF_8)), "data after set");
            }
        });

        names.add("whoAmI lists the ip and the certificate's x509 DN");
        checks.add(() -> {
            try (ZooKeeper zk = connect()) {
                List<String> got = new ArrayList<>();
                for (ClientInfo ci : zk.whoAmI()) {
                    got.add(ci.getAuthScheme() + ":" + ci.getUser());
                }
                Collections.sort(got);
                List<String> want = new ArrayList<>(List.of("ip:127.0.0.1", "x509:" + clientDN));
                Collections.sort(want);
                check(got.equals(want), "whoAmI " + got + ", want " + want);
            }
        });

        names.add("an x509 ACL grants its DN and refuses another certificate's");
        checks.add(() -> {
            String node = ROOT + "/x509";
            try (ZooKeeper zk = connect()) {
                zk.create(node, b("mine"), new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id("x509", clientDN)))), CreateMode.PERSISTENT);
                check("mine".equals(new String(zk.getData(node, false, null), StandardCharsets.UTF_8)), "owner read");
                List<ACL> acl = zk.getACL(node, new Stat());
                check(acl.size() == 1 && acl.get(0).getId().getScheme().equals("x509")
                        && acl.get(0).getId().getId().equals(clientDN), "stored ACL " + acl);
            }
            try (ZooKeeper other = connect(config("other", "ca.pem"))) {
                try {
                    other.getData(node, false, null);
                    throw new AssertionError("a client with DN " + otherDN + " read the node");
                } catch (KeeperException.NoAuthException expected) {
                    // refused, as it should be
                }
            }
        });

        names.add("a certificate from an untrusted CA gets no session");
        checks.add(() -> expectRefused(config("bad", "ca.pem")));

        names.add("a client without a certificate gets no session (clientAuth=need)");
        checks.add(() -> expectRefused(config(null, "ca.pem")));

        names.add("a client trusting another CA refuses the server and gets no session");
        checks.add(() -> expectRefused(config("client", "badca.pem")));

        names.add("the server keeps serving trusted clients after refusing others");
        checks.add(() -> {
            try (ZooKeeper zk = connect()) {
                check(zk.exists(ROOT, false) != null, "root exists");
                if (zk.exists(ROOT + "/x509", false) != null) {
                    zk.delete(ROOT + "/x509", -1);
                }
                zk.delete(ROOT, -1);
                check(zk.exists(ROOT, false) == null, "root deleted");
            }
        });
    }
}
