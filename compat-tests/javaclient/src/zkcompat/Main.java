package zkcompat;

import org.apache.zookeeper.ZooKeeper;

/**
 * Compatibility suite for a ZooKeeper 3.8 server, driven through the Apache
 * ZooKeeper Java client. Usage: Main host:port. Prints one PASS/FAIL line per
 * check and "N passed, M failed"; exits 0 only if every check passed.
 */
public final class Main {
    private static final long PER_CHECK_MS = 25_000;
    private static final long TOTAL_MS = 80_000;

    private Main() {}

    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: zkcompat.Main host:port");
            System.exit(2);
        }
        int failed;
        try (Clients clients = new Clients(args[0])) {
            failed = run(clients);
        }
        System.out.flush();
        // The client threads are not daemons; a stuck one must not keep the JVM alive.
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }

    private static int run(Clients clients) {
        Suite suite = new Suite(PER_CHECK_MS, TOTAL_MS);
        Ctx ctx = new Ctx(clients);
        suite.addRequired("connect two sessions and create the base node", () -> {
            ZooKeeper zk = clients.connect();
            ZooKeeper zk2 = clients.connect();
            Assert.that(zk.getSessionId() != 0 && zk.getSessionId() != zk2.getSessionId(),
                    "distinct non-zero session ids: " + zk.getSessionId() + " " + zk2.getSessionId());
            ctx.zk = zk;
            ctx.zk2 = zk2;
            ctx.mk(Ctx.BASE, "");
        });
        MultiChecks.register(suite, ctx);
        NodeChecks.register(suite, ctx);
        ErrorChecks.register(suite, ctx);
        WatchChecks.register(suite, ctx);
        InfoChecks.register(suite, ctx);
        SessionChecks.register(suite, ctx);
        AuthChecks.register(suite, ctx);
        return suite.runAll();
    }
}
