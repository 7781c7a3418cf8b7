package zksasl;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/**
 * SASL (DIGEST-MD5) suite for a ZooKeeper 3.8 server configured with
 * authProvider.sasl, a JAAS Server section with users alice, bob and admin
 * (zookeeper.superUser=admin). Usage: Main host:port open|enforced. The JVM
 * gets -Djava.security.auth.login.config naming a JAAS file with the client
 * sections Client (alice), BobClient, AdminClient, WrongPassword (alice with
 * a wrong password) and UnknownUser. Prints one PASS/FAIL line per check and
 * "N passed, M failed"; exits 0 only if every check passed.
 */
public final class Main {
    private static final long WAIT_MS = 15_000;
    private static final List<ACL> ALICE_ALL =
            Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "alice")));

    private static String addr;
    private static int passed;
    private static int failed;
    private static final List<Conn> conns = new ArrayList<>();

    private Main() {}

    interface Check {
        void run() throws Exception;
    }

    private static void check(String name, Check c) {
        try {
            c.run();
            System.out.println("PASS " + name);
            passed++;
        } catch (Throwable e) {
            System.out.println("FAIL " + name + ": " + e);
            failed++;
        }
        System.out.flush();
    }

    private static void expect(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** One client with the states its watcher saw. */
    static final class Conn implements Watcher {
        final LinkedBlockingQueue<Event.KeeperState> states = new LinkedBlockingQueue<>();
        final List<Event.KeeperState> seen = new ArrayList<>();
        ZooKeeper zk;

        @Override
        public void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) {
                states.add(e.getState());
            }
        }

        /** Waits for state want; false if the wait ran out. */
        boolean await(Event.KeeperState want) throws InterruptedException {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (true) {
                long left = deadline - System.currentTimeMillis();
                Event.KeeperState s = left > 0 ? states.poll(left, TimeUnit.MILLISECONDS) : null;
                if (s == null) {
                    return false;
                }
                seen.add(s);
                if (s == want) {
                    return true;
                }
            }
        }
    }

    /** Connects with the JAAS client section (sasl) or without SASL (null). */
    private static Conn connect(String section) throws Exception {
        ZKClientConfig cfg = new ZKClientConfig();
        if (section == null) {
            cfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        } else {
            cfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "true");
            cfg.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, section);
        }
        Conn c = new Conn();
        c.zk = new ZooKeeper(addr, 10_000, c, cfg);
        conns.add(c);
        return c;
    }

    private static Conn authenticated(String section) throws Exception {
        Conn c = connect(section);
        expect(c.await(Watcher.Event.KeeperState.SaslAuthenticated), section + " not SaslAuthenticated; states " + c.seen);
        return c;
    }

    /** The code of the KeeperException op throws, or OK. */
    private static KeeperException.Code codeOf(Check op) throws Exception {
        try {
            op.run();
            return KeeperException.Code.OK;
        } catch (KeeperException e) {
            return e.code();
        }
    }

    private static void expectCode(KeeperException.Code want, Check op, String what) throws Exception {
        KeeperException.Code got = codeOf(op);
        expect(got == want, what + ": got " + got + ", want " + want);
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: zksasl.Main host:port open|enforced");
            System.exit(2);
        }
        addr = args[0];
        boolean enforced = args[1].equals("enforced");
        byte[] data = "secret".getBytes(StandardCharsets.UTF_8);
        String node = "/sasl-alice";

        check("alice authenticates with DIGEST-MD5", () -> authenticated("Client"));
        check("alice creates a node with ACL sasl:alice:cdrwa", () -> {
            ZooKeeper zk = conns.get(0).zk;
            zk.create(node, data, ALICE_ALL, CreateMode.PERSISTENT);
            List<ACL> acl = zk.getACL(node, new Stat());
            expect(acl.equals(ALICE_ALL), "getACL " + acl);
        });
        check("alice reads and writes it", () -> {
            ZooKeeper zk = conns.get(0).zk;
            expect(new String(zk.getData(node, false, null), StandardCharsets.UTF_8).equals("secret"), "data");
            zk.setData(node, data, -1);
        });
        check("the auth scheme expands to sasl:alice", () -> {
            ZooKeeper zk = conns.get(0).zk;
            zk.create("/sasl-creator", data, ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            List<ACL> acl = zk.getACL("/sasl-creator", new Stat());
            expect(acl.equals(ALICE_ALL), "getACL " + acl);
        });
        check("a sasl ACL with a malformed Kerberos name is InvalidACL", () -> expectCode(KeeperException.Code.INVALIDACL,
                () -> conns.get(0).zk.create("/sasl-bad", data,
                        Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "a@B@C"))), CreateMode.PERSISTENT),
                "create"));
        check("bob authenticates and gets NoAuth on alice's node", () -> {
            ZooKeeper zk = authenticated("BobClient").zk;
            expectCode(KeeperException.Code.NOAUTH, () -> zk.getData(node, false, null), "getData");
            expectCode(KeeperException.Code.NOAUTH, () -> zk.setData(node, data, -1), "setData");
            expectCode(KeeperException.Code.NOAUTH,
                    () -> zk.create(node + "/child", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT), "create child");
        });
        check("admin (zookeeper.superUser) reads alice's node", () -> {
            ZooKeeper zk = authenticated("AdminClient").zk;
            expect(zk.getData(node, false, null).length == data.length, "data");
        });
        check("addauth sasl is refused with AuthFailed", () -> {
            Conn c = connect(null);
            expect(c.await(Watcher.Event.KeeperState.SyncConnected), "not connected; states " + c.seen);
            c.zk.addAuthInfo("sasl", "alice".getBytes(StandardCharsets.UTF_8));
            expect(c.await(Watcher.Event.KeeperState.AuthFailed), "no AuthFailed; states " + c.seen);
        });
        for (String section : new String[] {"WrongPassword", "UnknownUser"}) {
            check(section + ": the client sees AuthFailed and its requests fail AuthFailed", () -> {
                Conn c = connect(section);
                expect(c.await(Watcher.Event.KeeperState.AuthFailed), "no AuthFailed; states " + c.seen);
                expect(!c.seen.contains(Watcher.Event.KeeperState.SaslAuthenticated), "SaslAuthenticated seen: " + c.seen);
                expectCode(KeeperException.Code.AUTHFAILED, () -> c.zk.exists("/", false), "exists");
            });
        }
        if (!enforced) {
            check("a client without SASL connects and gets NoAuth on alice's node", () -> {
                Conn c = connect(null);
                expect(c.await(Watcher.Event.KeeperState.SyncConnected), "not connected; states " + c.seen);
                expectCode(KeeperException.Code.NOAUTH, () -> c.zk.getData(node, false, null), "getData");
                c.zk.create("/plain", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            });
        } else {
            check("a client without SASL is refused with SessionClosedRequireAuth", () -> {
                Conn c = connect(null);
                expect(c.await(Watcher.Event.KeeperState.SyncConnected), "not connected; states " + c.seen);
                expectCode(KeeperException.Code.SESSIONCLOSEDREQUIRESASLAUTH, () -> c.zk.exists("/", false), "exists");
                expect(c.await(Watcher.Event.KeeperState.Disconnected), "not disconnected; states " + c.seen);
            });
            check("alice's session still works under enforcement", () -> {
                ZooKeeper zk = conns.get(0).zk;
                expect(zk.exists(node, false) != null, "exists");
            });
        }
        for (Conn c : conns) {
            try {
                c.zk.close(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }
}
